"""Whatever bytes a note holds, reading and chunking it never raises."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layersearch.corpora.vault import chunk_note, parse_note

PIECES = st.sampled_from(
    [
        "---\n",
        "---\r\n",
        "...\n",
        "\ufeff",
        "tags: ",
        "tags: [a, b\n",
        "title: a: b\n",
        "#x ",
        "# H\n",
        "## ",
        "```dataview\n",
        "```\n",
        "<% tp %>",
        "%%",
        "<!--",
        "[[a#b]]",
        "- [ ]\n",
        "created: 2024-02-30\n",
        "updated: March 5, 2024\n",
        "&a ",
        "*a ",
        "? [x]\n",
        ": ",
        "\t",
        "\r",
        "\n",
        "\x00",
        "Related: [[x]]\n",
        "é",
        "😀",
        "\u2028",
        "{",
        "[",
        "!!binary aGk=\n",
    ]
)
NOTE_TEXT = st.lists(st.one_of(PIECES, st.text(max_size=20)), max_size=40).map("".join)


def _check(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sub").mkdir()
        path = root / "sub" / "note.md"
        path.write_bytes(raw)
        note = parse_note(root, path)
        assert note.slug == "sub/note" and note.title
        assert all(isinstance(p, str) for p in note.problems)
        assert all(t == t.lower() and not t.startswith("#") for t in note.tags)
        assert list(note.tags) == sorted(set(note.tags))
        assert "\r" not in note.body and "\x00" not in note.body
        chunks = chunk_note(note, max_chars=200, overlap=20)
        assert chunks and all(len(c.text) <= 200 for c in chunks)
        assert [c.index for c in chunks] == list(range(len(chunks)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_arbitrary_bytes(raw: bytes) -> None:
    _check(raw)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NOTE_TEXT, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
def test_markdown_like_text(text: str, encoding: str) -> None:
    _check(text.encode(encoding, errors="replace"))
