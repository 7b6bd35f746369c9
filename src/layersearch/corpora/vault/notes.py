"""Markdown notes with YAML frontmatter → ``Note`` records.

Reading a note never fails because of what is *in* it: undecodable bytes,
broken YAML, odd dates or tags are recorded in ``Note.problems`` and the note
is indexed with what could be read. Only paths are errors: outside the vault
(``ConfigError``) or missing (``NotFound``).

Slugs are the note's path relative to the vault root, with ``/`` separators and
without the ``.md`` suffix, Unicode NFC-normalised, case and spaces kept
(``Meetings/2024/Weekly sync 2024-03-05``) — the same name Obsidian's wikilinks
use, unique because paths are.
"""

from __future__ import annotations

import codecs
import difflib
import hashlib
import logging
import math
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from layersearch.errors import ConfigError, LayersearchError, NotFound
from layersearch.jsonlimits import load_json

from .config import VaultConfig, VaultFilters, load_config, normalize_tag

__all__ = [
    "Note",
    "SyncPlan",
    "iter_notes",
    "load_note",
    "matches",
    "parse_date",
    "parse_note",
    "plan_sync",
    "resolve_slug",
    "scan_vault",
    "slug_for",
]

log = logging.getLogger("layersearch.corpora.vault")

NOTE_SUFFIX = ".md"
# Frontmatter bigger than this is not parsed: it is not metadata any more, and
# YAML aliases can make a small text expand into a huge structure.
#: the largest note indexed, in bytes, as model files are capped
#: (``semantic.importers.native.MAX_FILE_BYTES``): a larger one is skipped with a warning
#: naming it. A note of this size indexes in about 5 s with the hashing embedder
#: (docs/vault.md).
MAX_NOTE_BYTES = 5 * 1024 * 1024
MAX_FRONTMATTER_CHARS = 64 * 1024
MAX_FRONTMATTER_VALUES = 10_000

CREATED_KEYS = ("created", "date")
UPDATED_KEYS = ("updated", "modified")
TYPE_KEYS = ("note_type", "type")
TAG_KEYS = ("tags", "tag")

_DATE_FORMATS = (
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%d %B, %Y",
)
_ORDINAL = re.compile(r"(?<=\d)(st|nd|rd|th)\b", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_INLINE_TAG = re.compile(r"(?<![\w#&/\\\[])#([^\W][\w/-]*)")
_SALVAGE_KEY = re.compile(r"^([A-Za-z_][\w .-]*?)[ \t]*:(?:[ \t]+(.*))?$")
_SALVAGE_ITEM = re.compile(r"^\s*-\s+(.*)$")


@dataclass(frozen=True)
class Note:
    """One markdown note as read from the vault."""

    slug: str
    path: str  # relative to the vault root, '/' separators
    title: str
    tags: tuple[str, ...]  # sorted, unique, lowercased, no '#', nested tags kept whole
    domain: str | None  # lowercased
    status: str | None  # lowercased
    note_type: str | None  # lowercased; from `note_type`, else `type`
    created: date | None
    updated: date  # the file's modification date (UTC) when the note does not say
    body: str  # markdown without frontmatter, '\n' line endings
    content_hash: str  # sha256 hex of the file's raw bytes
    frontmatter: dict[str, Any] = field(hash=False, compare=False)  # JSON-safe
    problems: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (dates as ISO strings) for wire output."""
        return {
            "slug": self.slug,
            "path": self.path,
            "title": self.title,
            "tags": list(self.tags),
            "domain": self.domain,
            "status": self.status,
            "note_type": self.note_type,
            "created": self.created.isoformat() if self.created else None,
            "updated": self.updated.isoformat(),
            "body": self.body,
            "content_hash": self.content_hash,
            "frontmatter": self.frontmatter,
            "problems": list(self.problems),
        }


# ----------------------------------------------------------------- paths


def _check_root(root: Path) -> Path:
    root = Path(root)
    if not root.exists():
        raise NotFound(f"vault folder {str(root)!r} does not exist")
    if not root.is_dir():
        raise ConfigError(f"vault {str(root)!r} is not a folder")
    # Absolute, so that paths handed out (scan_vault, resolve_slug) are never
    # taken as relative to the root a second time.
    return root.absolute()


def slug_for(rel_path: str) -> str:
    """The slug of a path relative to the vault root."""
    rel = rel_path.replace("\\", "/")
    if rel.lower().endswith(NOTE_SUFFIX):
        rel = rel[: -len(NOTE_SUFFIX)]
    return unicodedata.normalize("NFC", rel)


def _relative(root: Path, path: Path) -> tuple[Path, str]:
    """The absolute path of a note and its path relative to ``root``."""
    full = path if path.is_absolute() else root / path
    lexical_root = os.path.normpath(root.absolute())
    lexical = os.path.normpath(full.absolute())
    if os.path.commonpath([lexical_root, lexical]) != lexical_root or lexical == lexical_root:
        raise ConfigError(f"{str(path)!r} is outside the vault {str(root)!r}")
    # A symlink inside the vault may still point outside it.
    if not full.resolve().is_relative_to(root.resolve()):
        raise ConfigError(f"{str(path)!r} resolves outside the vault {str(root)!r}")
    return Path(lexical), Path(os.path.relpath(lexical, lexical_root)).as_posix()


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.IGNORECASE)


def _excluded(rel: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        folder = pattern.rstrip("/")
        if rel.lower().startswith(folder.lower() + "/") or _glob_regex(pattern).fullmatch(rel):
            return True
    return False


def _template_folders(root: Path) -> tuple[str, ...]:
    """Obsidian's configured template folders: templates are boilerplate, not notes."""
    found = []
    for conf, key in (
        (".obsidian/templates.json", "folder"),
        (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
    ):
        try:
            value = load_json((root / conf).read_text(encoding="utf-8"), conf).get(key)
        except (OSError, ValueError, AttributeError, LayersearchError):
            continue
        if isinstance(value, str) and value.strip("/ "):
            found.append(value.strip("/ ") + "/")
    return tuple(found)


def _exclusions(root: Path, config: VaultConfig) -> tuple[str, ...]:
    return config.exclude + _template_folders(root)


def scan_vault(root: Path, *, config: VaultConfig | None = None) -> Iterator[Path]:
    """The vault's notes, sorted by slug.

    Skips hidden files and folders (``.obsidian/``, ``.trash/``, …), symlinks
    that lead outside the vault, the configured ``exclude`` patterns and
    Obsidian's template folder.
    """
    root = _check_root(root)
    config = load_config(root) if config is None else config
    excludes = _exclusions(root, config)
    root_real = root.resolve()
    visited: set[Path] = set()
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        real = here.resolve()
        if not real.is_relative_to(root_real) or real in visited:
            log.warning("skipping %s: symlink outside the vault or already visited", here)
            dirnames[:] = []
            continue
        visited.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(NOTE_SUFFIX):
                continue
            path = here / name
            if not path.resolve().is_relative_to(root_real):
                log.warning("skipping %s: symlink outside the vault", path)
                continue
            if not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            if _excluded(rel, excludes):
                continue
            slug = slug_for(rel)
            if slug in found:
                log.warning("skipping %s: same slug %r as %s", path, slug, found[slug])
                continue
            found[slug] = path
    for slug in sorted(found):
        yield found[slug]


def resolve_slug(root: Path, slug: str, *, config: VaultConfig | None = None) -> Path:
    """The file of the note ``slug``; ``../``, absolute paths and unknown slugs are errors.

    An exact path is tried first, then a unique case-insensitive match.
    """
    root = _check_root(root)
    if not isinstance(slug, str) or not slug.strip():
        raise ConfigError("slug must be a non-empty string, e.g. 'Metrics/Net revenue'")
    text = slug.strip().replace("\\", "/")
    if "\x00" in text:
        raise ConfigError(f"slug {slug!r} contains a NUL character")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise ConfigError(
            f"slug {slug!r} is an absolute path; slugs are relative to the vault, "
            "e.g. 'Metrics/Net revenue'"
        )
    parts = [p for p in text.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ConfigError(f"slug {slug!r} tries to leave the vault ('.' and '..' are not allowed)")
    wanted = slug_for("/".join(parts))
    config = load_config(root) if config is None else config
    hidden = any(p.startswith(".") for p in parts)
    candidate = root.joinpath(
        *parts[:-1], parts[-1] if parts[-1].lower().endswith(".md") else parts[-1] + NOTE_SUFFIX
    )
    if not hidden and candidate.is_file():
        if not candidate.resolve().is_relative_to(root.resolve()):
            raise ConfigError(f"slug {slug!r} resolves outside the vault")
        if not _excluded(candidate.relative_to(root).as_posix(), _exclusions(root, config)):
            return candidate
    notes = {slug_for(p.relative_to(root).as_posix()): p for p in scan_vault(root, config=config)}
    folded = [s for s in notes if s.casefold() == wanted.casefold()]
    if len(folded) == 1:
        return notes[folded[0]]
    close = difflib.get_close_matches(wanted, list(notes), n=3, cutoff=0.6)
    hint = f"; did you mean: {', '.join(repr(c) for c in close)}" if close else ""
    raise NotFound(f"no note with slug {slug!r} in the vault {str(root)!r}{hint}")


# ----------------------------------------------------------------- reading


def _decode(raw: bytes, problems: list[str]) -> str:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError:
            problems.append("UTF-16 byte order mark but not valid UTF-16; read as UTF-8")
        else:
            return _normalise_text(text, problems)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(
            f"not valid UTF-8 (first bad byte at offset {exc.start}); bad bytes replaced"
        )
        text = raw.decode("utf-8-sig", errors="replace")
    return _normalise_text(text, problems)


def _normalise_text(text: str, problems: list[str]) -> str:
    text = text.lstrip("\ufeff")
    if "\x00" in text:
        # NUL cannot be stored in PostgreSQL text and is never meaningful in a note.
        problems.append("contains NUL characters; removed")
        text = text.replace("\x00", "")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _split_frontmatter(text: str, problems: list[str]) -> tuple[str | None, str]:
    if not text.startswith("---"):
        return None, text
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    problems.append("frontmatter opened with '---' on line 1 is never closed; read as body")
    return None, text


class _TooBig(Exception):
    pass


def _json_safe(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_safe(v, budget) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def _load_frontmatter(fm_text: str, problems: list[str]) -> dict[str, Any]:
    if len(fm_text) > MAX_FRONTMATTER_CHARS:
        problems.append(
            f"frontmatter is {len(fm_text)} characters, over {MAX_FRONTMATTER_CHARS}; ignored"
        )
        return {}
    try:
        data = yaml.safe_load(fm_text)
    # PyYAML raises more than YAMLError on odd input (ValueError for 2024-02-30,
    # RecursionError for deep nesting); any of them means "does not parse".
    except Exception as exc:
        mark = getattr(exc, "problem_mark", None)
        # +2: the frontmatter starts on the file's second line.
        where = f" at line {mark.line + 2}" if mark is not None else ""
        lines = str(exc).splitlines()
        reason = getattr(exc, "problem", None) or (lines[0] if lines else type(exc).__name__)
        data = _salvage(fm_text)
        problems.append(
            f"frontmatter is not valid YAML{where} ({reason}); "
            f"read {len(data)} field(s) line by line"
        )
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(f"frontmatter is a {type(data).__name__}, not a mapping; ignored")
        return {}
    try:
        safe = _json_safe(data, [MAX_FRONTMATTER_VALUES])
    except (_TooBig, RecursionError):
        problems.append(f"frontmatter has over {MAX_FRONTMATTER_VALUES} values; ignored")
        return {}
    return safe if isinstance(safe, dict) else {}


def _salvage_value(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except Exception:
        value = None
    else:
        scalar = (str, int, float, bool, date)
        if isinstance(value, scalar) or (
            isinstance(value, list) and all(isinstance(v, scalar) for v in value)
        ):
            return value
    if text.startswith("[") and not text.endswith("]"):
        return [v.strip().strip("'\"") for v in text[1:].split(",") if v.strip()]
    return text.strip("'\"")


def _salvage(fm_text: str) -> dict[str, Any]:
    """Top-level ``key: value`` lines and their ``- item`` lists, each read on its own."""
    out: dict[str, Any] = {}
    current: str | None = None
    for line in fm_text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key = _SALVAGE_KEY.match(line)
        if key:
            name, rest = key.group(1).strip(), (key.group(2) or "").strip()
            out[name] = _salvage_value(rest) if rest else []
            current = None if rest else name
            continue
        item = _SALVAGE_ITEM.match(line)
        if item and current is not None and isinstance(out.get(current), list):
            out[current].append(_salvage_value(item.group(1).strip()))
        else:
            current = None
    return {k: (None if v == [] else v) for k, v in out.items()}


# ----------------------------------------------------------------- fields


def _lookup(fm: Mapping[str, Any], names: Iterable[str]) -> tuple[str, Any] | None:
    lowered = {k.strip().lower(): (k, v) for k, v in fm.items()}
    for name in names:
        if name in lowered and lowered[name][1] not in (None, "", []):
            return lowered[name]
    return None


def _one_value(fm: Mapping[str, Any], names: Iterable[str], problems: list[str]) -> str | None:
    found = _lookup(fm, names)
    if found is None:
        return None
    key, value = found
    if isinstance(value, list):
        problems.append(f"`{key}` should be one value, got a list; using the first")
        value = value[0]
    if isinstance(value, dict) or value is None:
        problems.append(f"`{key}` should be a single value, got {type(value).__name__}; ignored")
        return None
    text = str(value).strip()
    return text or None


def _split_tags(value: Any, problems: list[str]) -> list[str]:
    # A string is a list of tags separated by commas or spaces, never its characters.
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    if isinstance(value, bool | int | float):
        return [str(value)]
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if isinstance(item, dict):
                problems.append(f"a tag is a mapping ({item!r}); ignored")
            elif item is not None:
                out.extend(_split_tags(item, problems))
        return out
    if value is not None:
        problems.append(f"tags of type {type(value).__name__} ignored")
    return []


def _commented_tags(fm_text: str, problems: list[str]) -> list[str]:
    """``tags: #a #b`` unquoted is a YAML comment; the writer meant tags."""
    m = re.search(r"^tags?[ \t]*:[ \t]+(#.*)$", fm_text, re.MULTILINE | re.IGNORECASE)
    if not m:
        return []
    problems.append("unquoted `tags: #…` is a YAML comment; read as tags (quote the value)")
    return _split_tags(m.group(1), problems)


def _strip_code(body: str) -> str:
    """The body without fenced code blocks (where '#' is not a tag or heading)."""
    out = []
    fence: str | None = None
    for line in body.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        out.append(line)
    return "\n".join(out)


_INLINE_CODE = re.compile(r"`[^`\n]*`")
# A URL's scheme starts at the first letter of a word and is at most 32 characters; text
# inside <…> stops at the next '<'. Both keep the scan from each start short.
_URL = re.compile(
    r"<[a-z]+://[^<>\s]*>|(?<![a-z])[a-z][a-z0-9+.-]{0,31}://\S+",
    re.IGNORECASE,
)
_NOT_IN_WIKILINK = re.compile(r"[\]\n]")
_NOT_IN_TARGET = re.compile(r"[)\n]")


def _sub_spans(text: str, opening: str, stop: re.Pattern[str], closing: str, repl: str) -> str:
    """``re.sub(opening + '[^stop]*' + closing, repl, text)`` in linear time.

    The regex tries every start and scans each to the next stop character, which is
    quadratic on a long line of openings that never close. Here a start that fails
    fails for every start before its stop character too, so the search resumes there."""
    out: list[str] = []
    done = pos = 0
    while (start := text.find(opening, pos)) >= 0:
        found = stop.search(text, start + len(opening))
        end = found.start() if found else len(text)
        if text.startswith(closing, end):
            out += (text[done:start], repl)
            done = pos = end + len(closing)
        else:
            pos = max(start + 1, end)
    out.append(text[done:])
    return "".join(out)


def _strip_comments(text: str) -> str:
    """``<!-- … -->`` blanked, in one pass (an unclosed ``<!--`` is left as it is)."""
    out: list[str] = []
    i = 0
    while (start := text.find("<!--", i)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break  # no later comment can close either
        out += (text[i:start], " ")
        i = end + 3
    out.append(text[i:])
    return "".join(out)


def _inline_tags(body: str) -> list[str]:
    text = _strip_code(body)
    # Linear time on any line (a 60,000-character token took 32 s when the URL scheme
    # could start anywhere; benchmarks/import_scaling.py).
    text = _INLINE_CODE.sub(" ", text)
    text = _sub_spans(text, "[[", _NOT_IN_WIKILINK, "]]", " ")  # wikilinks, [[Note#Heading]]
    text = _sub_spans(text, "](", _NOT_IN_TARGET, ")", "]")  # markdown link targets
    text = _URL.sub(" ", text)
    text = _strip_comments(text)
    # Obsidian: a tag needs at least one non-digit character (#1984 is not a tag).
    return [t for t in _INLINE_TAG.findall(text) if any(c.isalpha() for c in t)]


def _first_heading(body: str) -> str | None:
    for line in _strip_code(body).split("\n"):
        m = _ATX.match(line)
        if m and m.group(2) and m.group(2).strip():
            return m.group(2).strip()
    return None


def parse_date(value: Any) -> date | None:
    """A date from a frontmatter value in any of the usual formats, or None."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    text = _ORDINAL.sub("", value.strip())
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace(" ", "T", 1) if " " in text else text).date()
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def _date_field(fm: Mapping[str, Any], names: Iterable[str], problems: list[str]) -> date | None:
    found = _lookup(fm, names)
    if found is None:
        return None
    key, value = found
    parsed = parse_date(value)
    if parsed is None:
        problems.append(f"`{key}` value {value!r} is not a date I can read; ignored")
    return parsed


def _mtime_date(path: Path) -> date:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).date()
    except (OSError, OverflowError, ValueError):
        return date(1970, 1, 1)


def _check_declared(
    name: str, value: str | None, allowed: tuple[str, ...], problems: list[str]
) -> None:
    if value is not None and allowed and value not in allowed:
        problems.append(
            f"{name} {value!r} is not one the vault declares ({', '.join(sorted(allowed))})"
        )


class NoteTooLarge(OSError):
    """A note over :data:`MAX_NOTE_BYTES`."""


def read_note_bytes(path: Path) -> bytes:
    """The bytes of a note, reading no more than :data:`MAX_NOTE_BYTES` (+1 to see it is
    over); over the bound is :class:`NoteTooLarge` naming the file and the limit."""
    with path.open("rb") as fh:
        raw = fh.read(MAX_NOTE_BYTES + 1)
    if len(raw) > MAX_NOTE_BYTES:
        raise NoteTooLarge(
            f"over the {MAX_NOTE_BYTES:,}-byte limit for notes (split it, or exclude it in "
            "the vault's config)"
        )
    return raw


def parse_note(root: Path, path: Path, *, config: VaultConfig | None = None) -> Note:
    """Read one note. ``path`` is absolute or relative to ``root``.

    With ``config``, a domain / note type / status the vault does not declare
    is recorded as a problem (the note is still read).
    """
    root = _check_root(root)
    full, rel = _relative(root, Path(path))
    try:
        raw = read_note_bytes(full)
    except FileNotFoundError as exc:
        raise NotFound(f"note {rel!r} does not exist in the vault {str(root)!r}") from exc
    except IsADirectoryError as exc:
        raise NotFound(f"{rel!r} is a folder, not a note") from exc
    except OSError as exc:
        raise NotFound(f"note {rel!r} cannot be read: {exc.strerror or exc}") from exc
    problems: list[str] = []
    text = _decode(raw, problems)
    fm_text, body = _split_frontmatter(text, problems)
    fm = _load_frontmatter(fm_text, problems) if fm_text is not None else {}
    body = body.lstrip("\n")

    tag_field = _lookup(fm, TAG_KEYS)
    tags = _split_tags(tag_field[1], problems) if tag_field else []
    if tag_field is None and fm_text is not None:
        tags += _commented_tags(fm_text, problems)
    tags += _inline_tags(body)

    note_type = _one_value(fm, TYPE_KEYS[:1], problems)
    plain_type = _one_value(fm, TYPE_KEYS[1:], problems)
    if note_type and plain_type and note_type.lower() != plain_type.lower():
        problems.append(
            f"both `note_type` ({note_type!r}) and `type` ({plain_type!r}) are set; using note_type"
        )
    note_type = note_type or plain_type

    title = _one_value(fm, ("title",), problems) or _first_heading(body) or full.stem
    domain = _one_value(fm, ("domain",), problems)
    status = _one_value(fm, ("status",), problems)
    updated = _date_field(fm, UPDATED_KEYS, problems) or _mtime_date(full)
    note = Note(
        slug=slug_for(rel),
        path=rel,
        title=title,
        tags=tuple(sorted({n for n in (normalize_tag(t) for t in tags) if n})),
        domain=domain.lower() if domain else None,
        status=status.lower() if status else None,
        note_type=note_type.lower() if note_type else None,
        created=_date_field(fm, CREATED_KEYS, problems),
        updated=updated,
        body=body,
        content_hash=hashlib.sha256(raw).hexdigest(),
        frontmatter=fm,
        problems=(),
    )
    if config is not None:
        _check_declared("domain", note.domain, config.domains, problems)
        _check_declared("note_type", note.note_type, config.note_types, problems)
        _check_declared("status", note.status, config.statuses, problems)
    return _with_problems(note, problems)


def _with_problems(note: Note, problems: list[str]) -> Note:
    return replace(note, problems=tuple(problems))


def load_note(root: Path, slug: str, *, config: VaultConfig | None = None) -> Note:
    """The full note for ``slug`` (what ``vault_get_note`` returns)."""
    config = load_config(Path(root)) if config is None else config
    return parse_note(root, resolve_slug(root, slug, config=config), config=config)


def iter_notes(
    root: Path,
    *,
    config: VaultConfig | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Iterator[Note]:
    """Every note of the vault, parsed; ``progress(done, total, slug)`` after each one.

    Notes with problems are logged (warning, by path) and still yielded.
    """
    root = _check_root(root)
    config = load_config(root) if config is None else config
    paths = list(scan_vault(root, config=config))
    for done, path in enumerate(paths, start=1):
        note = parse_note(root, path, config=config)
        for problem in note.problems:
            log.warning("%s: %s", note.path, problem)
        if progress is not None:
            progress(done, len(paths), note.slug)
        yield note


# ----------------------------------------------------------------- sync & filters


@dataclass(frozen=True)
class SyncPlan:
    """What an incremental index run must do, by slug.

    Rows are keyed by slug: delete the rows of ``deleted`` and ``changed``, then
    write ``added`` and ``changed``. A renamed note is its old slug in
    ``deleted`` and its new one in ``added``, so no stale rows remain.
    """

    added: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    deleted: tuple[str, ...]


def plan_sync(stored: Mapping[str, str], current: Mapping[str, str]) -> SyncPlan:
    """Compare stored ``slug → content_hash`` with the vault's current one."""
    return SyncPlan(
        added=tuple(sorted(s for s in current if s not in stored)),
        changed=tuple(sorted(s for s in current if s in stored and stored[s] != current[s])),
        unchanged=tuple(sorted(s for s in current if s in stored and stored[s] == current[s])),
        deleted=tuple(sorted(s for s in stored if s not in current)),
    )


def _tag_matches(wanted: str, tags: tuple[str, ...]) -> bool:
    # As in Obsidian's tag search, `project` also finds `project/alpha`.
    return any(t == wanted or t.startswith(wanted + "/") for t in tags)


def matches(note: Note, filters: VaultFilters) -> bool:
    """Whether a note passes validated filters (every given filter must hold)."""
    if filters.domain is not None and note.domain != filters.domain:
        return False
    if filters.note_type is not None and note.note_type != filters.note_type:
        return False
    if filters.status is not None and note.status != filters.status:
        return False
    if not all(_tag_matches(t, note.tags) for t in filters.tags):
        return False
    when = note.created if filters.date_field == "created" else note.updated
    if filters.date_from is not None or filters.date_to is not None:
        if when is None:
            return False
        if filters.date_from is not None and when < filters.date_from:
            return False
        if filters.date_to is not None and when > filters.date_to:
            return False
    return True
