"""The labelled query set points at real notes, and its filters hold for them."""

from __future__ import annotations

import json
from pathlib import Path

from layersearch.corpora.vault import iter_notes, load_config, matches, validate_filters

FILTER_KEYS = {"tags", "domain", "status", "note_type", "date_range"}


def test_query_set(vault: Path) -> None:
    queries_file = vault.parent / "vault_queries.jsonl"
    rows = [json.loads(line) for line in queries_file.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 30
    config = load_config(vault)
    notes = {n.slug: n for n in iter_notes(vault, config=config)}
    titles = {n.title.casefold() for n in notes.values()}
    for row in rows:
        assert set(row) == {"query", "relevant", "filters"}, row
        assert 1 <= len(row["relevant"]) <= 3, row
        assert row["query"].casefold() not in titles, row  # paraphrased, not a title
        assert set(row["filters"]) <= FILTER_KEYS, row
        filters = validate_filters(config, **row["filters"])
        for slug in row["relevant"]:
            assert slug in notes, (row["query"], slug)
            assert matches(notes[slug], filters), (row["query"], slug)
    assert sum(1 for r in rows if r["filters"]) >= 10
