"""Heading-aware chunks: paths, limits, no frontmatter, no boilerplate."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersearch.corpora.vault import chunk_note, iter_notes, load_note, note_scores, parse_note
from layersearch.errors import ConfigError

NOTE = """---
title: Orders runbook
tags: [secret-frontmatter-tag]
owner: frontmatter-owner
---
# Orders runbook

Intro paragraph.

## Step one
<% tp.date.now("YYYY-MM-DD") %>
Date: <% tp.date.now() %>
Do the first thing.

### Detail
Careful with `fct_orders`.

```sql
select 1
-- ## not a heading
```

## Empty section

- [ ]
Owner::

## Dashboard
```dataview
TABLE status FROM #incident
```
%% private comment %%
<!-- html comment -->

## Links
- [[Other note]]
- [[Another|alias]]

Related: [[Third]], [[Fourth]]
---
"""


def make(tmp_path: Path, text: str = NOTE, name: str = "Runbook.md"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return parse_note(tmp_path, tmp_path / name)


def test_heading_paths_and_order(tmp_path: Path) -> None:
    chunks = chunk_note(make(tmp_path))
    assert [c.heading_path for c in chunks] == [
        "Orders runbook",
        "Orders runbook > Step one",
        "Orders runbook > Step one > Detail",
    ]
    assert [c.index for c in chunks] == [0, 1, 2]
    assert all(c.text.startswith(c.heading_path + "\n\n") for c in chunks)
    assert chunks[1].text == "Orders runbook > Step one\n\nDo the first thing."
    assert "-- ## not a heading" in chunks[2].text  # code kept whole, '#' inside is not a heading
    assert chunks[2].id == "Runbook#2"


def test_frontmatter_and_boilerplate_never_embedded(tmp_path: Path) -> None:
    text = "\n".join(c.text for c in chunk_note(make(tmp_path)))
    for gone in (
        "secret-frontmatter-tag",
        "frontmatter-owner",
        "tp.",
        "<%",
        "dataview",
        "TABLE",
        "private comment",
        "html comment",
        "[[",
        "Related",
        "Empty section",
        "Owner",
        "- [ ]",
        "Dashboard",
        "Date:",
    ):
        assert gone not in text, gone


def test_long_sections_split_by_paragraph_within_limit(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(8)]
    note = make(tmp_path, "# Big\n\n## Part\n\n" + "\n\n".join(paragraphs) + "\n", "big.md")
    chunks = chunk_note(note, max_chars=500)
    assert len(chunks) >= 4
    assert all(len(c.text) <= 500 for c in chunks)
    assert all(c.heading_path == "Big > Part" for c in chunks)
    # Paragraphs are not cut when they fit: each one starts a line in some chunk.
    for i in range(8):
        assert any(f"\n\nParagraph {i} " in c.text or f"\nParagraph {i} " in c.text for c in chunks)


def test_overlap_repeats_the_previous_tail(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(400))
    note = make(tmp_path, f"# T\n\n{words}\n", "o.md")
    chunks = chunk_note(note, max_chars=300, overlap=40)
    assert all(len(c.text) <= 300 for c in chunks)
    first_tail = chunks[0].text.split()[-1]
    assert first_tail in chunks[1].text.split()[:12]


def test_huge_unbroken_token_is_hard_split(tmp_path: Path) -> None:
    note = make(tmp_path, "x" * 5000, "blob.md")
    chunks = chunk_note(note, max_chars=200)
    assert all(len(c.text) <= 200 for c in chunks)
    assert sum(c.text.count("x") for c in chunks) == 5000


def test_empty_note_gets_a_title_chunk(tmp_path: Path) -> None:
    note = make(
        tmp_path, "---\ntitle: Only a title\n---\n<% tp.file.cursor() %>\n## Notes\n\n", "e.md"
    )
    assert [(c.heading_path, c.text) for c in chunk_note(note)] == [
        ("Only a title", "Only a title")
    ]


@pytest.mark.parametrize(("max_chars", "overlap"), [(50, 0), (1200, -1), (1200, 600), (True, 0)])
def test_bad_sizes(tmp_path: Path, max_chars: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        chunk_note(make(tmp_path), max_chars=max_chars, overlap=overlap)


def test_fixture_vault_chunks(vault: Path) -> None:
    total = 0
    for note in iter_notes(vault):
        chunks = chunk_note(note)
        total += len(chunks)
        assert chunks and all(len(c.text) <= 1200 for c in chunks)
        assert all(c.text.startswith(note.title) for c in chunks)
        for chunk in chunks:
            assert "<%" not in chunk.text and "```dataview" not in chunk.text
    assert total > 120
    sync = load_note(vault, "Meetings/2024/2024-01-08 Weekly analytics sync")
    paths = [c.heading_path for c in chunk_note(sync)]
    assert paths == [
        "Weekly analytics sync > Agenda",
        "Weekly analytics sync > Notes",
        "Weekly analytics sync > Action items",
    ]


def test_note_score_is_best_chunk() -> None:
    hits = [("a", 0.2), ("b", 0.5), ("a", 0.9), ("c", 0.5), ("b", 0.1)]
    assert note_scores(hits) == [("a", 0.9), ("b", 0.5), ("c", 0.5)]
