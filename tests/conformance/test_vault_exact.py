"""Vault search on PostgreSQL against a brute-force reference.

The filters run in SQL there (joined to the note rows) and the vectors are ranked
in the database, either exactly over the filtered rows or by walking the HNSW
index; both must give what ranking every stored vector in numpy gives, and the
SQL filters must select exactly the notes the Python rules select.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from layersearch import Layersearch
from layersearch.corpora.vault import search as vault_search
from layersearch.corpora.vault import store as tables
from layersearch.embed import FakeEmbedder

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
VAULT = ROOT / "fixtures" / "vault"

SEARCHES: list[dict[str, Any]] = [
    {"query": "net revenue after refunds", "limit": 1000},
    {"query": "net revenue after refunds", "limit": 7},
    {"query": "metrics and incidents", "limit": 5, "tags": ["revenue"]},
    {"query": "outage", "note_type": "incident", "date_range": {"start": "2024-03-01"}},
    {"query": "fx rates", "domain": "finance", "status": ["active", "resolved"], "limit": 50},
    {"query": "snowflake access", "tags": ["runbook", "meeting"], "limit": 20},
    {"query": "weekly sync", "date_range": {"end": "2024-06-30"}, "limit": 30},
    {"query": "dashboard", "domain": "data-platform", "min_score": 0.05, "limit": 40},
    {"query": "anything", "domain": "personal", "note_type": "incident"},
    # small limits over broad filters: the index walk fills them without falling back
    {"query": "pipeline freshness", "domain": "data-platform", "limit": 2},
    {"query": "weekly sync", "status": ["active"], "limit": 1},
    {"query": "revenue", "date_range": {"start": "2024-01-01"}, "limit": 3},
]


@pytest.fixture
def pg_vault(location_for: Callable[[str], str]) -> Iterator[Layersearch]:
    with Layersearch(location_for("postgres"), embedder=FakeEmbedder(64)) as ls:
        ls.vault.index(VAULT)
        yield ls


def _reference(ls: Layersearch, request: dict[str, Any]) -> list[tuple[str, float]]:
    """Every stored vector scored in numpy, filtered by the rules written out here."""
    dense = ls.vault._dense_for(ls.vault._embedder())  # type: ignore[arg-type]
    ids, matrix = ls.store.load_vectors(tables.CORPUS, dense.fingerprint.key())
    scores = matrix @ dense.query_vector(request["query"])
    with ls.store.connect(write=False) as con:
        notes = con.execute(
            "SELECT slug, tags, domain, status, note_type, updated FROM vault_notes"
        ).fetchall()
    passing = {r[0] for r in notes if _passes(r, request)}
    best: dict[str, float] = {}
    for cid, score in zip(ids, scores.tolist(), strict=True):
        slug = tables.chunk_id_slug(cid)
        if slug in passing and score > best.get(slug, -2.0):
            best[slug] = score
    ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    floor = request.get("min_score")
    ranked = [(s, x) for s, x in ranked if floor is None or x >= floor]
    return [(s, round(x, 6)) for s, x in ranked[: request.get("limit", 10)]]


def _passes(row: Sequence[Any], request: dict[str, Any]) -> bool:
    _slug, tags_json, domain, status, note_type, updated = row
    tags = json.loads(tags_json)
    if "domain" in request and domain != request["domain"]:
        return False
    if "note_type" in request and note_type != request["note_type"]:
        return False
    if "status" in request and status not in request["status"]:
        return False
    span = request.get("date_range", {})
    if "start" in span and updated < date.fromisoformat(span["start"]):
        return False
    if "end" in span and updated > date.fromisoformat(span["end"]):
        return False
    wanted = request.get("tags")
    return not wanted or any(t == w or t.startswith(w + "/") for t in tags for w in wanted)


def _got(ls: Layersearch, request: dict[str, Any]) -> list[tuple[str, float]]:
    return [(h.slug, h.score) for h in ls.vault.search(**request)]


def _force(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "exact":  # every filter counts as selective: exact ranking by chunk id
        monkeypatch.setattr(vault_search, "EXACT_CHUNKS", 10**9)
    else:  # every filter is SQL in the HNSW walk (completed exactly, in SQL, when short)
        monkeypatch.setattr(vault_search, "EXACT_CHUNKS", 0)
        monkeypatch.setattr(vault_search, "WALK_COST", 0.0)
        monkeypatch.setattr(vault_search, "WALK_PAGE_COST", 0.0)


def _spy(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the statements run: "walk" (HNSW) and "all" (exact, or completing a walk)."""
    calls: list[str] = []
    for name, label in (("_walk", "walk"), ("_fetch_all", "all")):
        original = getattr(store, name)

        def spy(*args: Any, _original: Any = original, _label: str = label) -> Any:
            calls.append(_label)
            return _original(*args)

        monkeypatch.setattr(store, name, spy)
    return calls


@pytest.mark.parametrize("path", ["exact", "hnsw", "cut"])
def test_vault_search_equals_brute_force(
    pg_vault: Layersearch, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _force(path, monkeypatch)
    if path == "cut":  # the walk stops almost at once and must be completed exactly
        from layersearch.store import postgres

        monkeypatch.setattr(postgres, "_MAX_SCAN_TUPLES", 5)
    calls = _spy(pg_vault.store, monkeypatch)
    paths = []
    for request in SEARCHES:
        expected = _reference(pg_vault, request)
        calls.clear()
        assert _got(pg_vault, request) == expected, request
        assert expected or request["domain"] == "personal"
        if set(request) - {"query", "limit", "min_score"}:
            paths.append(tuple(calls))
    if path == "exact":
        assert set(paths) <= {(), ("all",)}  # () when the snapshot says nothing passes
    elif path == "hnsw":
        assert all(p[0] == "walk" for p in paths if p)
        assert ("walk",) in paths, "some filtered search was answered by the walk alone"
    else:
        # the first batch of the walk (hnsw.ef_search rows) comes whatever the limit
        assert set(paths) <= {(), ("walk",), ("walk", "all")} and ("walk", "all") in paths


def test_vault_search_never_loads_the_vectors(
    pg_vault: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("vault search loaded every vector into memory")

    monkeypatch.setattr(pg_vault.store, "load_vectors", refuse)
    for request in SEARCHES:
        pg_vault.vault.search(**request)
    assert pg_vault.vault.search("refunds", mode="hybrid", domain="finance")


# Tags with characters that mean something to LIKE, JSON or SQL, and nested tags whose
# names are prefixes of other tags.
TAGGED = {
    "a": ["project/alpha", "x_y"],
    "b": ["projectx", "xay"],
    "c": ["project", "100%"],
    "d": ['quote"d', "back\\slash"],
    "e": ["ça/va", "ops/on-call/primary"],
    "f": ["proj", "ops/on-callx"],
}
TAG_FILTERS = [
    ["project"],
    ["x_y"],
    ["100%"],
    ['quote"d'],
    ["back\\slash"],
    ["ça"],
    ["ops/on-call"],
    ["proj", "xay"],
    ["nothing"],
]


def test_tag_filters_in_sql_match_the_python_rules(
    location_for: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for slug, tags in TAGGED.items():
        (vault / f"{slug}.md").write_text(
            f"---\ntags: {json.dumps(tags)}\n---\n# Note {slug}\n\nabout {slug}\n", "utf-8"
        )
    _force("hnsw", monkeypatch)  # the tags filter in SQL
    with Layersearch(location_for("postgres"), embedder=FakeEmbedder(32)) as ls:
        ls.vault.index(vault)
        for tags in TAG_FILTERS:
            request = {"query": "about", "tags": tags, "limit": 100}
            want = sorted(s for s, t in TAGGED.items() if _tagged(t, tags))
            assert sorted(h.slug for h in ls.vault.search(**request)) == want, tags
            assert _got(ls, request) == _reference(ls, request)


def _tagged(tags: list[str], wanted: list[str]) -> bool:
    return any(t == w or t.startswith(w + "/") for t in tags for w in wanted)


def test_foreign_model_is_refused_without_loading_vectors(
    location_for: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch.errors import ModelMismatch

    location = location_for("postgres")
    with Layersearch(location, embedder=FakeEmbedder(64)) as ls:
        ls.vault.index(VAULT)
    with Layersearch(location, embedder=FakeEmbedder(32)) as other:

        def refuse(*_: Any) -> Any:
            raise AssertionError("vault search loaded every vector into memory")

        monkeypatch.setattr(other.store, "load_vectors", refuse)
        with pytest.raises(ModelMismatch, match="vault index"):
            other.vault.search("revenue", domain="finance")


HYBRID_SEARCHES: list[dict[str, Any]] = [
    {"query": "weekly sync notes"},
    {"query": "net revenue after refunds", "limit": 3},
    {"query": "pipeline freshness", "domain": "data-platform"},
    {"query": "refunds", "domain": "finance", "limit": 25},
    {"query": "snowflake access", "tags": ["runbook", "meeting"], "limit": 4},
]


@pytest.mark.parametrize("path", ["exact", "hnsw"])
def test_hybrid_equals_duckdb(
    pg_vault: Layersearch,
    location_for: Callable[[str], str],
    path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both channel depths apply the same way on both backends, whichever way the vectors
    are ranked on PostgreSQL."""
    _force(path, monkeypatch)
    with Layersearch(location_for("duckdb"), embedder=FakeEmbedder(64)) as duck:
        duck.vault.index(VAULT)
        for request in HYBRID_SEARCHES:
            want = duck.vault.search(mode="hybrid", explain=True, **request)
            got = pg_vault.vault.search(mode="hybrid", explain=True, **request)
            assert want and got == want, request


# Note names with the characters an array literal quotes or splits on (braces, commas,
# quotes, spaces, the word NULL) and non-ASCII ones: the exact path ships their chunk ids.
AWKWARD = ["{a,b}", 'say "hi"', "it's", "com,ma", "ça va", "NULL"]


def test_exact_path_ships_any_chunk_id(
    location_for: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for n, name in enumerate(AWKWARD):
        domain = "finance" if n % 2 == 0 else "product"
        (vault / f"{name}.md").write_text(
            f"---\ndomain: {domain}\n---\n# {name}\n\nabout {name}\n\n## More\n\ntext {n}\n",
            "utf-8",
        )
    _force("exact", monkeypatch)
    with Layersearch(location_for("postgres"), embedder=FakeEmbedder(32)) as ls:
        ls.vault.index(vault)
        calls = _spy(ls.store, monkeypatch)
        for request in ({"query": "about", "limit": 10, "domain": "finance"},):
            got = _got(ls, request)
            assert got == _reference(ls, request)
            assert sorted(s for s, _ in got) == sorted(AWKWARD[0::2])
        assert calls == ["all"]


def test_exact_ranking_by_id_looks_rows_up_by_primary_key(pg_vault: Layersearch) -> None:
    """Even where the planner would scan the whole table (here: a tiny one), the ranking by
    id is primary-key lookups: with a fifth of a large table's rows it prefers a sequential
    scan of all of them, 4x slower when the table is not in shared buffers."""
    from layersearch.store import postgres

    store = pg_vault.store
    assert isinstance(store, postgres.PostgresStore)
    ids = [c.id for c in tables.load_chunks(store)][:3]
    dense = pg_vault.vault._dense_for(pg_vault.vault._embedder())  # type: ignore[arg-type]
    q = dense.query_vector("revenue")
    args = [tables.CORPUS, dense.fingerprint.key(), ids, postgres._vector_text(q), 10]
    with store._raw(write=False) as con:
        postgres._by_primary_key(con)
        plan = con.execute("EXPLAIN " + postgres._BY_IDS, args, prepare=False).fetchall()
    text = "\n".join(r[0] for r in plan)
    assert "vectors_pkey" in text and "Seq Scan" not in text, text


def test_walk_or_exact_follows_the_measured_walk_cost(
    pg_vault: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's measured cost per walked row decides, with the snapshot's count of passing
    chunks, which way a filter is ranked; measured once per generation."""
    store = pg_vault.store
    dense = pg_vault.vault._dense_for(pg_vault.vault._embedder())  # type: ignore[arg-type]
    key = dense.fingerprint.key()
    probes = [c.id for c in tables.load_chunks(store)][:4]
    pages = store.walk_pages_per_row(tables.CORPUS, key, probes)  # type: ignore[attr-defined]
    assert pages is not None and pages > 0
    assert store.walk_pages_per_row(tables.CORPUS, key, ["no such chunk"]) is None  # type: ignore[attr-defined]

    monkeypatch.setattr(vault_search, "EXACT_CHUNKS", 0)
    measured: list[int] = []
    request = {"query": "fx rates", "domain": "finance", "limit": 3}
    calls = _spy(store, monkeypatch)
    for cost, first in ((1e9, "all"), (1e-9, "walk")):

        def measure(*_: Any, _cost: float = cost) -> float:
            measured.append(1)
            return _cost

        monkeypatch.setattr(store, "walk_pages_per_row", measure)
        pg_vault.vault._walk_measured = None
        calls.clear()
        assert _got(pg_vault, request) == _reference(pg_vault, request)
        assert calls[0] == first
        _got(pg_vault, request)  # the same generation: not measured again
    assert len(measured) == 2
