"""Heading-aware chunks of a note's body, for embeddings.

A note is cut at its markdown headings; each chunk's text starts with its
heading path ("Title > Section > Sub") so that a chunk read alone still says
what it is about. Sections longer than ``max_chars`` are split between
paragraphs (then lines, then words). Frontmatter is never part of a chunk, and
neither is template boilerplate:

- Templater tags (``<% … %>``), Obsidian comments (``%% … %%``), HTML comments;
- ``dataview`` / ``dataviewjs`` / ``query`` / ``tasks`` code blocks (queries,
  not prose; other code blocks, e.g. SQL, are kept);
- horizontal rules, empty bullets and checkboxes, empty ``Key::`` fields;
- link lists: a line labelled ``Related:`` / ``See also:`` / ``Links:`` /
  ``Up:`` / ``Parent:`` holding only links, and a section whose every line
  is only links (a "## Links" footer);
- sections left empty by the above (their heading still names sub-sections).

A note with no embeddable content still gets one chunk, its title, so that
every note can be found by the vector channel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from layersearch.errors import ConfigError

from .notes import Note

__all__ = ["Chunk", "chunk_note", "note_scores", "sections"]

SEPARATOR = " > "
MIN_MAX_CHARS = 100
QUERY_FENCES = frozenset({"dataview", "dataviewjs", "query", "tasks"})

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w-]*)")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_TEMPLATER = re.compile(r"<%.*?%>", re.DOTALL)
_OBSIDIAN_COMMENT = re.compile(r"%%.*?%%", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_EMPTY_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[[ xX]?\])?\s*$")
_EMPTY_FIELD = re.compile(r"^\s*(?:[-*+]\s+)?[\w][\w -]{0,40}::\s*$")
_EMPTY_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?[\w][\w -]{0,40}::?\s*$")
_LINK_LABEL = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:related|see also|links?|up|parent|backlinks?)\s*::?", re.IGNORECASE
)
_LINKS = re.compile(r"!?\[\[[^\]\n]*\]\]|!?\[[^\]\n]*\]\([^)\n]*\)|<?[a-z][a-z0-9+.-]*://\S+")
_LINK_FILLER = re.compile(r"[\s,;|·*+\-•]|\d+[.)]")


@dataclass(frozen=True)
class Chunk:
    """A piece of one note to embed; ``text`` begins with ``heading_path``."""

    slug: str
    index: int
    heading_path: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.slug}#{self.index}"


def _strip_blocks(body: str) -> str:
    lines = []
    for line in body.split("\n"):
        if "<%" in line and "%>" in line:
            line = _TEMPLATER.sub("", line)
            # "Date: <% tp.date.now() %>" leaves a label with nothing to say.
            if not line.strip() or _EMPTY_LABEL.match(line):
                continue
        lines.append(line)
    body = _TEMPLATER.sub("", "\n".join(lines))
    body = _OBSIDIAN_COMMENT.sub("", body)
    return _HTML_COMMENT.sub("", body)


def _links_only(line: str) -> bool:
    """Whether a line holds links and nothing else a reader would search for."""
    if not _LINKS.search(line):
        return False
    rest = _LINKS.sub("", _LINK_LABEL.sub("", line))
    return not _LINK_FILLER.sub("", rest)


def _boilerplate_line(line: str) -> bool:
    if _RULE.match(line) or _EMPTY_FIELD.match(line):
        return True
    if line.strip() and _EMPTY_ITEM.match(line):
        return True
    return bool(_LINK_LABEL.match(line) and _links_only(line))


def _raw_sections(body: str) -> list[tuple[list[tuple[int, str]], list[str]]]:
    """(heading stack, content lines) per section, query code blocks removed."""
    out: list[tuple[list[tuple[int, str]], list[str]]] = [([], [])]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    drop = False
    for line in body.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence, drop = m.group(1)[0] * 3, m.group(2).lower() in QUERY_FENCES
            if not drop:
                out[-1][1].append(line)
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            if not drop:
                out[-1][1].append(line)
            continue
        heading = _ATX.match(line)
        if heading:
            level, text = len(heading.group(1)), (heading.group(2) or "").strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            if text:
                stack.append((level, text))
            out.append((list(stack), []))
            continue
        if not _boilerplate_line(line):
            out[-1][1].append(line)
    return out


def _heading_path(title: str, stack: list[tuple[int, str]]) -> str:
    names = [title] + [text for _, text in stack]
    # The usual "# Title" heading repeats the note's title: say it once.
    if len(names) > 1 and names[1].casefold() == title.casefold():
        del names[1]
    return SEPARATOR.join(names)


def _tidy(lines: list[str]) -> str:
    text = "\n".join(line.rstrip() for line in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def sections(note: Note) -> list[tuple[str, str]]:
    """(heading path, content) for each section with embeddable content, in order."""
    out = []
    for stack, lines in _raw_sections(_strip_blocks(note.body)):
        content = _tidy(lines)
        if not content.strip():
            continue
        if all(_links_only(line) for line in content.split("\n") if line.strip()):
            continue
        out.append((_heading_path(note.title, stack), content))
    return out


def _blocks(content: str) -> list[str]:
    """Paragraphs; a fenced code block stays whole even across blank lines."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in content.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        if not line.strip() and fence is None:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _split_long(text: str, budget: int) -> list[str]:
    """Pieces of at most ``budget`` characters: by lines, then words, then characters."""
    if len(text) <= budget:
        return [text]
    for joiner in ("\n", " "):
        if joiner in text:
            parts = [p for unit in text.split(joiner) for p in _split_long(unit, budget)]
            return _pack(parts, budget, joiner)
    return [text[i : i + budget] for i in range(0, len(text), budget)]


def _pack(units: list[str], budget: int, joiner: str) -> list[str]:
    out: list[str] = []
    current = ""
    for unit in units:
        candidate = f"{current}{joiner}{unit}" if current else unit
        if len(candidate) <= budget:
            current = candidate
            continue
        if current:
            out.append(current)
        current = unit
    if current:
        out.append(current)
    return out


def _tail(text: str, size: int) -> str:
    if size <= 0 or not text:
        return ""
    tail = text[-size:]
    cut = tail.find(" ")
    # Start the overlap at a word boundary when there is one.
    return tail[cut + 1 :] if 0 <= cut < len(tail) - 1 else tail


def chunk_note(note: Note, max_chars: int = 1200, overlap: int = 0) -> list[Chunk]:
    """The note's chunks, each at most ``max_chars`` characters.

    ``overlap`` characters from the end of a section's previous piece are
    repeated at the start of the next one (within one section only).
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_MAX_CHARS:
        raise ConfigError(
            f"max_chars must be an integer of at least {MIN_MAX_CHARS}, got {max_chars!r}"
        )
    if (
        isinstance(overlap, bool)
        or not isinstance(overlap, int)
        or not 0 <= overlap <= max_chars // 4
    ):
        raise ConfigError(f"overlap must be an integer from 0 to {max_chars // 4}, got {overlap!r}")
    chunks: list[Chunk] = []
    for path, content in sections(note):
        prefix = _fit(path, max_chars // 2)
        budget = max_chars - len(prefix) - 2 - (overlap + 1 if overlap else 0)
        pieces = _pack(
            [p for block in _blocks(content) for p in _split_long(block, budget)], budget, "\n\n"
        )
        previous = ""
        for piece in pieces:
            lead = _tail(previous, overlap)
            body = f"{lead} {piece}" if lead else piece
            chunks.append(Chunk(note.slug, len(chunks), prefix, f"{prefix}\n\n{body}"))
            previous = piece
    if not chunks:
        title = _fit(note.title, max_chars)
        chunks.append(Chunk(note.slug, 0, title, title))
    return chunks


def _fit(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def note_scores(hits: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Chunk hits ``(slug, score)`` → one score per note, its best chunk's.

    Sorted by score (highest first), then slug, so equal inputs give equal order.
    """
    best: dict[str, float] = {}
    for slug, score in hits:
        if slug not in best or score > best[slug]:
            best[slug] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))
