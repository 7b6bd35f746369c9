"""vault_search and vault_get_note: filters, validation, errors, hybrid fusion, determinism."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from layersearch.corpora.vault import Note, iter_notes, load_config
from layersearch.corpora.vault.search import CHANNEL_DEPTH, VaultHit, VaultService
from layersearch.embed.fake import FakeEmbedder
from layersearch.errors import (
    ConfigError,
    EmbeddingUnavailable,
    LimitExceeded,
    ModelMismatch,
    NotFound,
)
from layersearch.store.duckdb import DuckDBStore
from tests.support import VAULT

EMB = FakeEmbedder(128)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultService]:
    store = DuckDBStore(tmp_path_factory.mktemp("vault-search") / "s.duckdb")
    svc = VaultService(store, embedder=lambda: EMB)
    svc.index(VAULT)
    yield svc


@pytest.fixture(scope="module")
def notes() -> list[Note]:
    return list(iter_notes(VAULT, config=load_config(VAULT)))


def everything(svc: VaultService, **filters: object) -> set[str]:
    return {h.slug for h in svc.search("metrics and incidents", limit=1000, **filters)}


def oracle(
    notes: list[Note],
    *,
    tags: list[str] | None = None,
    domain: str | None = None,
    status: list[str] | None = None,
    note_type: str | None = None,
    start: str | None = None,
    end: str | None = None,
) -> set[str]:
    def keep(n: Note) -> bool:
        if domain and n.domain != domain:
            return False
        if note_type and n.note_type != note_type:
            return False
        if status and n.status not in status:
            return False
        if tags and not any(t == w or t.startswith(w + "/") for w in tags for t in n.tags):
            return False
        if start and n.updated < date.fromisoformat(start):
            return False
        return not (end and n.updated > date.fromisoformat(end))

    return {n.slug for n in notes if keep(n)}


FILTER_CASES = [
    {"domain": "finance"},
    {"note_type": "incident"},
    {"status": ["resolved"]},
    {"status": ["draft", "open"]},
    {"tags": ["revenue"]},
    {"tags": ["project"]},
    {"tags": ["fx", "runbook"]},
    {"start": "2024-03-01"},
    {"end": "2024-02-29"},
    {"start": "2024-03-01", "end": "2024-05-31"},
    {"note_type": "incident", "tags": ["revenue"], "start": "2024-03-01", "end": "2024-05-31"},
    {"domain": "finance", "status": ["active", "resolved"], "note_type": "metric"},
    {"domain": "personal", "note_type": "incident"},
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: ",".join(sorted(c)))
def test_filters_compose_like_the_oracle(indexed: VaultService, notes: list[Note], case: dict):
    kwargs = {k: v for k, v in case.items() if k not in ("start", "end")}
    if "start" in case or "end" in case:
        kwargs["date_range"] = {k: case[k] for k in ("start", "end") if k in case}
    expected = oracle(notes, **case)
    assert everything(indexed, **kwargs) == expected


def test_filters_are_not_vacuous(notes: list[Note]) -> None:
    # The oracle cases must select proper, non-empty subsets (except the deliberate empty one).
    sizes = [len(oracle(notes, **c)) for c in FILTER_CASES]
    assert all(0 < s < len(notes) for s in sizes[:-1]) and sizes[-1] == 0


def test_no_filter_returns_every_note_ranked(indexed: VaultService, notes: list[Note]):
    hits = indexed.search("net revenue after refunds", limit=1000)
    assert {h.slug for h in hits} == {n.slug for n in notes}
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0].slug == "Metrics/Net revenue"
    assert all(-1.0 <= s <= 1.0 for s in scores)


def test_output_is_slug_title_path_score_only(indexed: VaultService):
    hit = indexed.search("churn", limit=1)[0]
    assert set(hit.model_dump()) == {"slug", "title", "path", "score"}
    assert hit.path == hit.slug + ".md"
    explained = indexed.search("churn", limit=1, explain=True)[0]
    assert "explanation" in explained.model_dump()


def test_prefix_and_determinism(indexed: VaultService):
    for mode in ("vector", "hybrid"):
        ten = indexed.search("why was the orders feed late", limit=10, mode=mode)
        three = indexed.search("why was the orders feed late", limit=3, mode=mode)
        assert three == ten[:3]
        # A fresh service on the same store (a new process) answers identically.
        fresh = VaultService(indexed.store, embedder=lambda: FakeEmbedder(128))
        assert fresh.search("why was the orders feed late", limit=10, mode=mode) == ten


def test_equal_scores_are_ordered_by_slug(tmp_path: Path, write):
    root = tmp_path / "v"
    for name in ("b/Same", "a/Same", "c/Same"):
        write(root, f"{name}.md", "# Same\n\nIdentical text about warehouses.\n")
    svc = VaultService(DuckDBStore(tmp_path / "s.duckdb"), embedder=lambda: EMB)
    svc.index(root)
    hits = svc.search("warehouses")
    assert [h.slug for h in hits] == ["a/Same", "b/Same", "c/Same"]
    assert len({h.score for h in hits}) == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"date_range": {"start": "2024/03/01"}}, ConfigError, "YYYY-MM-DD"),
        ({"date_range": {"start": "2024-05-01", "end": "2024-04-01"}}, ConfigError, "after"),
        ({"date_range": {"from": "2024-05-01"}}, ConfigError, "'start' and 'end'"),
        ({"limit": 0}, ConfigError, "at least 1"),
        ({"limit": 5000}, LimitExceeded, "at most"),
        ({"domain": "sales"}, ConfigError, "declares: data-platform, finance"),
        ({"note_type": "essay"}, ConfigError, "unknown note_type"),
        ({"status": ["active", "wip"]}, ConfigError, "unknown status"),
        ({"mode": "bm25"}, ConfigError, "vector' or 'hybrid"),
        ({"min_score": 2}, ConfigError, "min_score"),
    ],
)
def test_validation_errors(indexed: VaultService, kwargs: dict, error: type, match: str):
    with pytest.raises(error, match=match):
        indexed.search("revenue", **kwargs)


def test_empty_query_is_an_error(indexed: VaultService):
    with pytest.raises(ConfigError, match="non-empty"):
        indexed.search("   ")


def test_undeclared_values_are_accepted_when_the_vault_declares_none(tmp_path: Path, write):
    root = tmp_path / "v"
    write(root, "a.md", "---\ndomain: sales\nstatus: wip\n---\n# A\n\nPipeline review.\n")
    write(root, "b.md", "---\ndomain: ops\n---\n# B\n\nPipeline review.\n")
    svc = VaultService(DuckDBStore(tmp_path / "s.duckdb"), embedder=lambda: EMB)
    svc.index(root)
    assert [h.slug for h in svc.search("pipeline", domain="Sales")] == ["a"]
    assert [h.slug for h in svc.search("pipeline", status="wip")] == ["a"]
    assert svc.search("pipeline", domain="nothing-like-it") == []


def test_gibberish_scores_low_and_min_score_drops_it(indexed: VaultService):
    real = indexed.search("how do we define net revenue after refunds", limit=3)
    junk = indexed.search("qxzv wpljk fnord zzyzx", limit=3)
    assert junk and real[0].score > 0.3 > junk[0].score
    assert indexed.search("qxzv wpljk fnord zzyzx", min_score=0.3) == []
    kept = indexed.search("how do we define net revenue after refunds", min_score=0.3)
    assert kept and all(h.score >= 0.3 for h in kept)
    assert indexed.search("qxzv wpljk fnord zzyzx", min_score=0.3, mode="hybrid") == []


def test_hybrid_fuses_vector_and_fulltext(indexed: VaultService):
    hits = indexed.search("stripe webhook retries", limit=10, mode="hybrid", explain=True)
    channels = {p.channel for h in hits for p in h.explanation or []}
    assert channels == {"vector", "fulltext"}
    for h in hits:
        parts = h.explanation or []
        # The score is the RRF score: the sum of the channels' 1/(60+rank).
        assert h.score == pytest.approx(sum(1 / (60 + p.rank) for p in parts), abs=1e-6)
    both = [h for h in hits if len(h.explanation or []) == 2]
    assert both and hits[0].slug == "Incidents/2024/2024-01-15 Duplicate orders in fct_orders"


def test_hybrid_channel_depth_and_prefix_bound(indexed: VaultService):
    query = "why was the orders feed late"

    def deepest(limit: int) -> dict[str, int]:
        hits = indexed.search(query, limit=limit, mode="hybrid", explain=True)
        worst: dict[str, int] = {}
        for h in hits:
            for p in h.explanation or []:
                worst[p.channel] = max(worst.get(p.channel, 0), p.rank)
        return worst

    # Each channel ranks max(limit, CHANNEL_DEPTH) notes: a deeper rank never contributes.
    assert set(deepest(CHANNEL_DEPTH).values()) <= set(range(1, CHANNEL_DEPTH + 1))
    assert CHANNEL_DEPTH < max(deepest(60).values()) <= 60
    # Prefix-stable while the limit stays within the depth.
    full = indexed.search(query, limit=CHANNEL_DEPTH, mode="hybrid")
    for n in range(1, CHANNEL_DEPTH):
        assert indexed.search(query, limit=n, mode="hybrid") == full[:n]


def test_hybrid_respects_filters(indexed: VaultService, notes: list[Note]):
    hits = indexed.search("revenue", mode="hybrid", note_type="metric", limit=100)
    assert {h.slug for h in hits} == oracle(notes, note_type="metric")


def test_fulltext_follows_incremental_index(tmp_path: Path):
    root = tmp_path / "v"
    shutil.copytree(VAULT, root)
    svc = VaultService(DuckDBStore(tmp_path / "s.duckdb"), embedder=lambda: EMB)
    svc.index(root)
    assert svc.search("zanzibarite", mode="hybrid", explain=True)  # builds the full-text index
    note = root / "Runbooks" / "Rerun the Fivetran connector.md"
    note.write_text(note.read_text() + "\n## Zanzibarite\n\nzanzibarite zanzibarite.\n")
    svc.index(root)
    top = svc.search("zanzibarite", mode="hybrid", explain=True)[0]
    assert top.slug == "Runbooks/Rerun the Fivetran connector"
    assert {p.channel for p in top.explanation or []} == {"vector", "fulltext"}
    (root / "Runbooks" / "Rerun the Fivetran connector.md").unlink()
    svc.index(root)
    hits = svc.search("zanzibarite", mode="hybrid", limit=100)
    assert "Runbooks/Rerun the Fivetran connector" not in {h.slug for h in hits}


def test_get_note(indexed: VaultService):
    note = indexed.get_note("Metrics/Net revenue")
    assert note.title == "Net revenue" and "revenue" in note.tags
    assert note.domain == "finance" and note.body.strip()
    assert indexed.get_note("metrics/net revenue.md").slug == "Metrics/Net revenue"


@pytest.mark.parametrize(
    "slug", ["../secrets", "Metrics/../../etc/passwd", "/etc/passwd", "C:/x", "a\x00b", " "]
)
def test_get_note_refuses_paths_leaving_the_vault(indexed: VaultService, slug: str):
    with pytest.raises(ConfigError):
        indexed.get_note(slug)


def test_get_note_unknown_slug_suggests(indexed: VaultService):
    with pytest.raises(NotFound, match="did you mean: 'Metrics/Net revenue'"):
        indexed.get_note("Metrics/Net revenu")


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_no_embedder_ranks_by_full_text_and_says_so_once(indexed: VaultService, mode: str):
    """A base install has no embedder: either mode ranks by full text, with one warning,
    the hybrid fusion's list and scores (the full-text channel alone)."""
    svc = VaultService(indexed.store)
    warnings: list[str] = []
    hits = svc.search("churn rate", mode=mode, limit=5, explain=True, warnings=warnings)
    assert warnings == [
        "embedding unavailable: no embedder configured; ranked by full text alone "
        "(score is the RRF score)"
    ]
    assert hits and hits[0].slug == "Metrics/Churn rate"
    assert {p.channel for h in hits for p in h.explanation or []} == {"fulltext"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    other: list[str] = []
    same = svc.search("churn rate", mode="hybrid", limit=5, explain=True, warnings=other)
    assert same == hits and other == warnings


def test_vector_mode_without_this_models_vectors_is_an_error_with_a_fix(tmp_path: Path):
    """An embedder is configured but the vault was indexed without one: vector mode says
    what to run; hybrid mode ranks by full text and says why."""
    store = DuckDBStore(tmp_path / "s.duckdb")
    VaultService(store).index(VAULT)
    svc = VaultService(store, embedder=lambda: EMB)
    with pytest.raises(EmbeddingUnavailable, match="vault index"):
        svc.search("revenue")
    warnings: list[str] = []
    assert svc.search("revenue", mode="hybrid", warnings=warnings)
    assert len(warnings) == 1 and "ranked by full text alone" in warnings[0]


def test_model_mismatch_names_both_models(indexed: VaultService):
    other = FakeEmbedder(32)
    svc = VaultService(indexed.store, embedder=lambda: other)
    with pytest.raises(ModelMismatch) as exc:
        svc.search("revenue")
    assert "fake/hashing-v1 (128)" in str(exc.value) and "fake/hashing-v1 (32)" in str(exc.value)


def test_never_indexed_store(tmp_path: Path):
    svc = VaultService(DuckDBStore(tmp_path / "s.duckdb"), embedder=lambda: EMB)
    with pytest.raises(NotFound, match="vault index"):
        svc.search("revenue")
    with pytest.raises(NotFound, match="vault index"):
        svc.get_note("Metrics/Net revenue")


def test_empty_vault_gives_no_results(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    svc = VaultService(DuckDBStore(tmp_path / "s.duckdb"), embedder=lambda: EMB)
    svc.index(tmp_path / "empty")
    assert svc.search("revenue") == []


def test_hits_are_pydantic(indexed: VaultService):
    hits = indexed.search("dbt", limit=2)
    assert len(hits) == 2 and all(isinstance(h, VaultHit) for h in hits)
    assert VaultHit.model_validate(hits[0].model_dump()) == hits[0]


@pytest.mark.slow
@pytest.mark.local_model
def test_local_model_ranks_and_gibberish_scores_low(tmp_path: Path):
    pytest.importorskip("onnxruntime")
    from layersearch.embed import make_embedder

    emb = make_embedder("local")
    svc = VaultService(DuckDBStore(tmp_path / "s.duckdb"), embedder=lambda: emb)
    svc.index(VAULT)
    real = svc.search("are gift card purchases counted as revenue", limit=3)
    assert real[0].slug == "Metrics/Net revenue" and real[0].score > 0.3
    junk = svc.search("qxzv wpljk fnord zzyzx", limit=3)
    assert junk[0].score < 0.3
    assert svc.search("qxzv wpljk fnord zzyzx", min_score=0.3) == []
