"""An English lexicon for vocabulary bridges: WordNet, read from a local copy.

Nothing is downloaded. The data is Princeton WordNet 3.0 in its own database
format (``index.noun``, ``data.noun``, ``noun.exc``, each plain or gzipped), read
from, in order:

1. the directory named by ``$LAYERSEARCH_WORDNET`` (any WordNet 3.x ``dict``
   directory; an empty value turns the lexicon off);
2. the copy shipped in this package (``ranking/wordnet``: the noun files pruned to
   what is read here, 3 MB, written by ``scripts/build_wordnet.py``; WordNet's
   licence is beside them).

Without a lexicon (an empty ``$LAYERSEARCH_WORDNET``, or files that cannot be read),
:func:`wordnet` is None and every caller degrades: no synonym bridges, and the
abbreviation matcher decides what is a word by its own rule.

Only what retrieval needs is kept: each lemma's synsets in WordNet's sense order
(most frequent first), each synset's lemmas, and its hypernyms and hyponyms
(the broader and narrower words: ``leader`` is broader than ``head``).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import pickle
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

__all__ = ["WordNet", "identity", "wordnet", "wordnet_dir"]

log = logging.getLogger("layersearch.lexicon")

_POS_FILES = ("noun",)
#: Pointer symbols read as "broader" or "narrower" (instances included).
_RELATED = frozenset({"@", "@i", "~", "~i"})


@dataclass(frozen=True, slots=True)
class WordNet:
    #: lemma (lowercase, ``_`` between words) → synset numbers, most frequent sense first
    senses: dict[str, tuple[int, ...]]
    #: synset number → its lemmas
    lemmas: list[tuple[str, ...]]
    #: synset number → its hypernyms and hyponyms
    related: list[tuple[int, ...]]
    #: the senses by analyzer token (:func:`lemma_key`): lemmas that stem alike merged
    by_key: dict[str, tuple[int, ...]]
    source: str

    def is_word(self, word: str) -> bool:
        """A lemma or an inflected form of one (regular plurals by the analyzer's stem:
        ``adults``; irregular ones by WordNet's lists: ``mice``)."""
        w = word.lower()
        return w in self.senses or lemma_key(w) in self.by_key


def lemma_key(lemma: str) -> str:
    """The analyzer's token for a WordNet lemma: the stem of one word, the lowercased
    identifier of several (``last_name``)."""
    from layersearch.ranking.analyzer import stem

    return stem(lemma) if lemma.isalpha() else lemma.lower()


def wordnet_dir() -> Path | None:
    """Where the WordNet files are (see the module doc), or None."""
    env = os.environ.get("LAYERSEARCH_WORDNET")
    if env is not None:
        return Path(env) if env.strip() else None
    return BUNDLED


#: the pruned WordNet 3.0 noun files shipped in the package
BUNDLED = Path(__file__).parent / "wordnet"


def _file(base: Path, name: str) -> Path:
    """``base/name``, or its gzipped copy ``name.gz`` when only that exists."""
    plain = base / name
    packed = base / f"{name}.gz"
    return packed if not plain.exists() and packed.exists() else plain


def identity() -> str:
    """What names the lexicon in the snapshot's code fingerprint, without reading it: the
    sizes of its three files (``none`` without one), so that a store built with another
    lexicon, or none, rebuilds its bridges."""
    base = wordnet_dir()
    if base is None:
        return "none"
    sizes = []
    for name in ("data.noun", "index.noun", "noun.exc"):
        path = _file(base, name)
        try:
            sizes.append(f"{path.name}={path.stat().st_size}")
        except OSError:
            sizes.append(f"{name}=missing")
    return f"wordnet:{_CACHE_VERSION}:" + ",".join(sizes)


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="latin-1")
    return path.open(encoding="latin-1")


#: Bump when what :func:`_parse` keeps changes: cached copies of older versions are ignored.
_CACHE_VERSION = 2


@lru_cache(maxsize=4)
def _load(directory: str) -> WordNet | None:
    """The lexicon from a cached copy when one matches the files, else parsed (and
    cached under ``$XDG_CACHE_HOME/layersearch``, or ``~/.cache``, when writable)."""
    base = Path(directory)
    try:
        st = _file(base, "data.noun").stat()
    except OSError as exc:
        log.warning("WordNet at %s could not be read (%s): no synonym bridges", base, exc)
        return None
    tag = hashlib.sha1(
        f"{_CACHE_VERSION}|{base.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()
    ).hexdigest()[:16]
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    cached = Path(root) / "layersearch" / f"wordnet-{tag}.pickle"
    try:
        with cached.open("rb") as fh:
            found = pickle.load(fh)
        if isinstance(found, WordNet):
            return found
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError):
        pass
    parsed = _parse(base)
    if parsed is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            with tmp.open("wb") as fh:
                pickle.dump(parsed, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, cached)
        except OSError as exc:
            log.debug("WordNet cache %s not written: %s", cached, exc)
    return parsed


def _parse(base: Path) -> WordNet | None:
    number: dict[tuple[str, int], int] = {}
    lemmas: list[tuple[str, ...]] = []
    pointers: list[list[tuple[str, int]]] = []
    try:
        for pos in _POS_FILES:
            with _open(_file(base, f"data.{pos}")) as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue  # the licence header
                    head = line.split(" | ", 1)[0].split()
                    n_words = int(head[3], 16)
                    words = tuple(_lemma(head[4 + 2 * i]) for i in range(n_words))
                    at = 4 + 2 * n_words
                    n_ptr = int(head[at])
                    ptrs = []
                    for k in range(n_ptr):
                        sym, off, ppos = head[at + 1 + 4 * k : at + 4 + 4 * k]
                        if sym in _RELATED:
                            ptrs.append((_pos_file(ppos), int(off)))
                    number[(pos, int(head[0]))] = len(lemmas)
                    lemmas.append(words)
                    pointers.append(ptrs)
        senses: dict[str, list[int]] = {}
        for pos in _POS_FILES:
            with _open(_file(base, f"index.{pos}")) as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue
                    parts = line.split()
                    n_syn = int(parts[2])
                    for off in parts[len(parts) - n_syn :]:
                        j = number.get((pos, int(off)))
                        if j is not None:
                            senses.setdefault(parts[0].lower(), []).append(j)
        # inflected forms (mice, became, better) share their base form's senses
        for pos in _POS_FILES:
            with _open(_file(base, f"{pos}.exc")) as fh:
                for line in fh:
                    form, *bases = line.split()
                    for b in bases:
                        for j in senses.get(b, ()):
                            bucket = senses.setdefault(form, [])
                            if j not in bucket:
                                bucket.append(j)
    except (OSError, EOFError, ValueError, IndexError) as exc:
        log.warning("WordNet at %s could not be read (%s): no synonym bridges", base, exc)
        return None
    related = [tuple(number[p] for p in ptrs if p in number) for ptrs in pointers]
    merged: dict[str, list[int]] = {}
    for lemma, found in senses.items():
        bucket = merged.setdefault(lemma_key(lemma), [])
        bucket.extend(j for j in found if j not in bucket)
    return WordNet(
        {w: tuple(s) for w, s in senses.items()},
        lemmas,
        related,
        {k: tuple(v) for k, v in merged.items()},
        str(base),
    )


def _lemma(word: str) -> str:
    # adjectives carry a marker: "big(a)"
    cut = word.find("(")
    return (word if cut < 0 else word[:cut]).lower()


def _pos_file(pos: str) -> str:
    return {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}.get(pos, pos)


def wordnet() -> WordNet | None:
    """The lexicon, read once per process (about a second), or None when absent."""
    directory = wordnet_dir()
    if directory is None:
        return None
    return _load(str(directory))
