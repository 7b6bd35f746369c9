"""The English word lists the ranking reads, as data: ``ranking/words/NAME.txt``.

Each file's first line is a ``#`` comment saying what the list is for; every other
non-blank line is one entry (a word; for :func:`word_pairs` two words separated by a
space; for :func:`word_numbers` words and a whole number). Each list is read once per process (cached); the readers return immutable
values, so callers share them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = [
    "WORDS_DIR",
    "list_names",
    "purpose",
    "word_list",
    "word_numbers",
    "word_pairs",
    "word_set",
]

#: the folder of the shipped lists (package data)
WORDS_DIR = Path(__file__).parent / "words"


@cache
def _read(name: str) -> tuple[str, tuple[str, ...]]:
    """(purpose, entries) of list ``name``; ValueError for a missing file or one whose
    first line is not its ``#`` purpose line."""
    path = WORDS_DIR / f"{name}.txt"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ValueError(f"no word list {name!r} in {WORDS_DIR}") from None
    if not lines or not lines[0].startswith("#") or not lines[0].lstrip("# ").strip():
        raise ValueError(f"{path}: the first line must be a '# ...' line saying what it is for")
    entries = tuple(line.strip() for line in lines[1:] if line.strip())
    return lines[0].lstrip("# ").strip(), entries


def purpose(name: str) -> str:
    """What list ``name`` is for (its first line, without the ``#``)."""
    return _read(name)[0]


def word_list(name: str) -> tuple[str, ...]:
    """The entries of list ``name``, in file order."""
    return _read(name)[1]


@cache
def word_set(name: str) -> frozenset[str]:
    """The entries of list ``name`` as a set."""
    return frozenset(word_list(name))


def word_pairs(name: str) -> dict[str, str]:
    """List ``name`` read as ``key value`` lines, in file order (a fresh dict)."""
    out: dict[str, str] = {}
    for entry in word_list(name):
        key, sep, value = entry.partition(" ")
        if not sep or not value.strip() or " " in value.strip():
            raise ValueError(f"{WORDS_DIR / name}.txt: {entry!r} is not 'key value'")
        out[key] = value.strip()
    return out


def word_numbers(name: str) -> dict[str, int]:
    """List ``name`` read as ``words number`` lines (the words may hold spaces: ``a
    couple of 2``), in file order (a fresh dict)."""
    out: dict[str, int] = {}
    for entry in word_list(name):
        key, sep, value = entry.rpartition(" ")
        if not sep or not key.strip() or not value.lstrip("-").isdigit():
            raise ValueError(f"{WORDS_DIR / name}.txt: {entry!r} is not 'words number'")
        out[key.strip()] = int(value)
    return out


def list_names() -> list[str]:
    """The names of the shipped lists, sorted."""
    return sorted(p.stem for p in WORDS_DIR.glob("*.txt"))
