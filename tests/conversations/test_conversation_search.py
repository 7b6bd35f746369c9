"""The conversation search contracts on the fixtures: golden outputs, semantics, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from layersearch.corpora.conversations.records import Conversation, Message
from layersearch.corpora.conversations.search import ConversationService
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed.fake import FakeEmbedder
from layersearch.errors import ConfigError, EmbeddingUnavailable
from layersearch.store.duckdb import DuckDBStore

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "conversations"
GOLDEN = Path(__file__).parent / "golden"
MRR_CONV = "claude:3f1c9a52-7d4e-4b1a-9c0e-5a2f7b8d1e01"

# The three contract calls whose output is pinned by golden files.
GOLDEN_CALLS = {
    "search_conversations_mrr.md": ("search_conversations", {"term": "mrr"}),
    "search_conversations_user_questions.md": (
        "search_conversations",
        {"term": "", "role": "user", "limit": 5},
    ),
    "semantic_search_revenue.md": (
        "semantic_search",
        {"query": "which dashboards read revenue", "limit": 3},
    ),
    "search_summaries_churn_hybrid.md": ("search_summaries", {"query": "churn", "limit": 4}),
    "search_summaries_questions_fts.md": (
        "search_summaries",
        {"query": "mrr churn", "extract": "questions", "mode": "fts"},
    ),
}


def make_service(path: Path, dims: int = 64) -> ConversationService:
    store = DuckDBStore(path)
    embedder = FakeEmbedder(dims)
    cache: dict[str, DenseCorpus] = {}

    def dense(corpus: str) -> DenseCorpus:
        return cache.setdefault(corpus, DenseCorpus(store, corpus, embedder))

    return ConversationService(store, dense)


def loaded_service(path: Path) -> ConversationService:
    svc = make_service(path)
    svc.import_path(FIXTURES)
    svc.import_summaries(FIXTURES / "summaries.jsonl")
    svc.embed()
    return svc


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[ConversationService]:
    yield loaded_service(tmp_path / "s.duckdb")


def run_golden(svc: ConversationService) -> dict[str, str]:
    return {
        name: getattr(svc, method)(**kwargs).markdown
        for name, (method, kwargs) in GOLDEN_CALLS.items()
    }


def test_golden_outputs(svc: ConversationService) -> None:
    for name, text in run_golden(svc).items():
        assert text + "\n" == (GOLDEN / name).read_text(encoding="utf-8"), name


@pytest.mark.slow
def test_outputs_are_identical_across_processes(svc: ConversationService, tmp_path: Path) -> None:
    script = (
        "import json, sys; from pathlib import Path\n"
        "sys.path.insert(0, str(Path(sys.argv[1])))\n"
        "import test_conversation_search as t\n"
        "print(json.dumps(t.run_golden(t.loaded_service(Path(sys.argv[2])))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent), str(tmp_path / "other.duckdb")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "src"), "PYTHONHASHSEED": "7", "PATH": ""},
    )
    assert json.loads(out.stdout) == run_golden(svc)
    # and the same call twice in one process
    assert svc.semantic_search("revenue", 5).markdown == svc.semantic_search("revenue", 5).markdown


# -- search_conversations -----------------------------------------------------------------------


def test_percent_and_underscore_are_literal(tmp_path: Path) -> None:
    # issue 42: `%` and `_` acted as LIKE wildcards (`%` matched every message)
    texts = ["50% of revenue", "500 customers", "a_b test", "acb test", "back\\slash", "plain"]
    svc = make_service(tmp_path / "s.duckdb")
    svc.import_conversations([_conv("test:lit", [(t, None) for t in texts])])

    def found(term: str) -> list[str]:
        return sorted(h.preview for h in svc.search_conversations(term, 50).hits)

    assert found("%") == ["50% of revenue"]
    assert found("50%") == ["50% of revenue"]
    assert found("_") == ["a_b test"]
    assert found("a_b") == ["a_b test"]
    assert found("\\") == ["back\\slash"]
    assert found("%%") == found("a%b") == found("\\%") == []
    assert found("TEST") == ["a_b test", "acb test"]


def test_percent_between_words_is_no_wildcard(svc: ConversationService) -> None:
    assert svc.search_conversations("gross_mrr").hits
    for term in ("gross%mrr", "gross%net", "m_r", "gross\\_mrr"):
        assert svc.search_conversations(term).hits == [], term


def test_quotes_and_comment_markers_are_bound_not_interpolated(svc: ConversationService) -> None:
    found = svc.search_conversations("what's the source")
    assert [h.conversation_id for h in found.hits] == ["slack:slack-T01-C42-1718000000"]
    hostile = "x'; DROP TABLE messages; --"
    assert svc.search_conversations(hostile).markdown == (
        f"No conversations found containing '{hostile}'"
    )
    assert svc.search_conversations("-- ' OR 1=1 --").hits == []
    assert svc.search_conversations("mrr").hits  # the table is still there


def test_no_match_text_is_exact(svc: ConversationService) -> None:
    assert (
        svc.search_conversations("zebra crossing").markdown
        == "No conversations found containing 'zebra crossing'"
    )


def test_role_filter_and_validation(svc: ConversationService) -> None:
    hits = svc.search_conversations("mrr", role="assistant").hits
    assert hits and {h.role for h in hits} == {"assistant"}
    with pytest.raises(ConfigError, match="valid values are user, assistant"):
        svc.search_conversations("mrr", role="robot")
    with pytest.raises(ConfigError, match="limit"):
        svc.search_conversations("mrr", limit=0)


def test_empty_term_with_user_role_gives_recent_questions(svc: ConversationService) -> None:
    res = svc.search_conversations("", role="user", limit=50)
    assert res.hits
    snap = svc.snapshot()
    assert all(snap.messages[h.message_id].has_question for h in res.hits)
    dates = [h.created for h in res.hits if h.created is not None]
    assert dates == sorted(dates, reverse=True)


def _conv(cid: str, texts: list[tuple[str, datetime | None]]) -> Conversation:
    msgs = tuple(
        Message(
            id=f"{cid}#{i}",
            conversation_id=cid,
            role="user",
            content=text,
            created=when,
            position=i,
            has_question=False,
            injected=False,
        )
        for i, (text, when) in enumerate(texts)
    )
    return Conversation(cid, "t", "test", None, None, msgs)


def test_newest_first_ties_by_id_and_null_dates_last(tmp_path: Path) -> None:
    svc = make_service(tmp_path / "s.duckdb")
    same = datetime(2024, 5, 1, tzinfo=UTC)
    svc.import_conversations(
        [
            _conv("test:b", [("alpha one", same), ("alpha undated", None)]),
            _conv(
                "test:a", [("alpha two", same), ("alpha newest", datetime(2024, 6, 1, tzinfo=UTC))]
            ),
        ]
    )
    hits = svc.search_conversations("alpha").hits
    assert [h.message_id for h in hits] == ["test:a#1", "test:a#0", "test:b#0", "test:b#1"]
    assert hits[-1].date is None and "| unknown |" in svc.search_conversations("undated").markdown


def test_injected_text_is_kept_out_of_search(svc: ConversationService) -> None:
    stored = svc.snapshot().messages.values()
    assert any(m.injected and "command-name" in m.content for m in stored)
    assert svc.search_conversations("command-name").hits == []
    assert svc.search_conversations("Request interrupted").hits == []


# -- import -------------------------------------------------------------------------------------


def test_reimport_changes_nothing(svc: ConversationService) -> None:
    gen = svc.store.generation()
    report = svc.import_path(FIXTURES)
    assert (report.conversations_added, report.messages_added, report.messages_removed) == (0, 0, 0)
    assert report.conversations_updated == 0
    assert svc.store.generation() == gen
    again = svc.import_summaries(FIXTURES / "summaries.jsonl")
    assert (again.added, again.updated) == (0, 0)


def test_newer_export_adds_only_what_is_new(tmp_path: Path) -> None:
    svc = make_service(tmp_path / "s.duckdb")
    first = svc.import_path(FIXTURES / "claude" / "conversations.json")
    assert first.messages_added == 9
    ids_before = set(svc.snapshot().messages)
    newer = svc.import_path(FIXTURES / "claude" / "conversations_newer.json")
    assert newer.messages_added == 2 and newer.messages_removed == 0
    assert newer.conversations_added == 0
    after = set(svc.snapshot().messages)
    assert ids_before < after and len(after - ids_before) == 2
    older_again = svc.import_path(FIXTURES / "claude" / "conversations.json")
    assert older_again.messages_added == 0 and older_again.messages_removed == 0
    assert set(svc.snapshot().messages) == after


def test_missing_time_stays_null_and_malformed_records_are_reported(tmp_path: Path) -> None:
    svc = make_service(tmp_path / "s.duckdb")
    report = svc.import_path(FIXTURES)
    assert any(":11: invalid JSON" in p for p in report.problems)  # file and line named
    cursor = [
        m for m in svc.snapshot().messages.values() if m.conversation_id.startswith("cursor:")
    ]
    assert cursor and all(m.created is None for m in cursor)


# -- semantic_search ------------------------------------------------------------------------------


def test_semantic_without_embedder_or_vectors_or_with_another_model(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    bare = ConversationService(store)
    bare.import_path(FIXTURES / "generic")
    with pytest.raises(EmbeddingUnavailable, match=r"^embedding unavailable: no embedder"):
        bare.semantic_search("customers")
    svc = make_service(tmp_path / "s.duckdb", dims=64)
    with pytest.raises(EmbeddingUnavailable, match=r"^embedding unavailable: no message vectors"):
        svc.semantic_search("customers")
    svc.embed()
    assert svc.semantic_search("customers").hits
    other = make_service(tmp_path / "s.duckdb", dims=32)
    with pytest.raises(EmbeddingUnavailable, match=r"^embedding unavailable: stored: fake/"):
        other.semantic_search("customers")


def test_semantic_similarity_is_one_over_one_plus_distance(svc: ConversationService) -> None:
    res = svc.semantic_search("weekly active users", 5)
    assert [h.rank for h in res.hits] == [1, 2, 3, 4, 5]
    distances = [h.distance for h in res.hits]
    assert distances == sorted(distances)
    for h in res.hits:
        assert h.similarity == round(1 / (1 + h.distance), 4)
        assert f"**Similarity**: {h.similarity:.4f}" in res.markdown


# -- search_summaries -----------------------------------------------------------------------------


def test_summary_filters_are_validated(svc: ConversationService) -> None:
    with pytest.raises(ConfigError, match="breakthrough, significant, routine"):
        svc.search_summaries("mrr", importance="huge")
    with pytest.raises(ConfigError, match="exploring, crystallizing, refining, executing"):
        svc.search_summaries("mrr", thinking_stage="dreaming")
    with pytest.raises(ConfigError, match="only letters, digits"):
        svc.search_summaries("mrr", domain="finance'; --")
    with pytest.raises(ConfigError, match="only letters, digits"):
        svc.search_summaries("mrr", source="claude%")
    with pytest.raises(ConfigError, match="summary, questions, decisions, quotes"):
        svc.search_summaries("mrr", extract="everything")
    with pytest.raises(ConfigError, match="hybrid, fts, vector"):
        svc.search_summaries("mrr", mode="magic")


def test_summary_filters_apply(svc: ConversationService) -> None:
    res = svc.search_summaries("mrr", importance="Significant", mode="fts")
    assert res.hits and all(
        svc.snapshot().summaries[h.summary_id].importance == "significant" for h in res.hits
    )
    by_source = svc.search_summaries("", source="claude", limit=50)
    assert by_source.hits and all(h.conversation_id.startswith("claude:") for h in by_source.hits)
    finance = svc.search_summaries("mrr", domain="finance metrics", mode="fts")
    assert {h.summary_id for h in finance.hits} == {"mrr-churn-timing", "summary:61403b87257a71f0"}


def test_summary_filters_on_the_mirror_equal_the_store(svc: ConversationService) -> None:
    """Filters run on the snapshot's mirror select what the store's own SQL selects."""
    from layersearch.corpora.conversations import store as db

    snap = svc.snapshot()
    values = {
        "domain": [None, "finance", "FINANCE metrics", "e_g", "zzz"],
        "importance": [None, "significant", "routine"],
        "thinking_stage": [None, "exploring", "refining"],
        "source": [None, "claude", "ChatGPT"],
    }
    checked = 0
    for domain in values["domain"]:
        for importance in values["importance"]:
            for stage in values["thinking_stage"]:
                for source in values["source"]:
                    kw = dict(
                        domain=domain, importance=importance, thinking_stage=stage, source=source
                    )
                    sql, params = db.summary_filter_query(**kw)
                    mirror = {r[0] for r in snap.mirror.execute(sql, params).fetchall()}
                    assert mirror == db.summary_ids_matching(svc.store, **kw), kw
                    checked += bool(mirror)
    assert checked > 10  # the combinations select something, not only empty sets


def test_hybrid_really_fuses_and_projections_are_verbatim(svc: ConversationService) -> None:
    res = svc.search_summaries("churn timing", limit=10)
    assert any(set(h.channels) == {"fulltext", "vector"} for h in res.hits)
    fts = svc.search_summaries("churn timing", mode="fts", limit=10)
    vec = svc.search_summaries("churn timing", mode="vector", limit=10)
    assert {tuple(h.channels) for h in fts.hits} == {("fulltext",)}
    assert {tuple(h.channels) for h in vec.hits} == {("vector",)}
    quotes = svc.search_summaries("mrr", extract="quotes", mode="fts")
    assert quotes.hits[0].items == ["MRR is a run rate, not cash."]
    for h in res.hits:
        assert f"[{h.conversation_id} · {h.date or 'unknown'}] [{h.summary_id}]" in res.markdown


def test_hybrid_without_vectors_warns_and_vector_mode_fails(tmp_path: Path) -> None:
    svc = make_service(tmp_path / "s.duckdb")
    svc.import_path(FIXTURES)
    svc.import_summaries(FIXTURES / "summaries.jsonl")
    res = svc.search_summaries("churn")
    assert res.markdown.startswith("> warning: embedding unavailable:")
    assert res.hits
    with pytest.raises(EmbeddingUnavailable, match="^embedding unavailable:"):
        svc.search_summaries("churn", mode="vector")


# -- message search -------------------------------------------------------------------------------


def test_message_search_scopes_to_a_conversation(svc: ConversationService) -> None:
    res = svc.search_messages("churn dashboard", 5, conversation_id="locomo:conv-mini")
    assert res.hits and {h.conversation_id for h in res.hits} == {"locomo:conv-mini"}
    assert res.hits[0].turn_id is not None
    with pytest.raises(ConfigError, match="channels"):
        svc.search_messages("churn", channels=["bm25"])


@pytest.mark.parametrize("window", [1, 3, 8192])
def test_mirror_keyword_search_equals_the_store_ilike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """The mirror (lowered copy, newest window first) returns the store's ILIKE rows exactly,
    whatever the window: wildcards, case, unicode, ties on time, missing times, roles."""
    import random

    from layersearch.corpora.conversations import store as db

    monkeypatch.setattr(db, "MIRROR_FIRST_WINDOW", window)
    rng = random.Random(5)
    words = ["Alpha", "alpha", "ΣΊΣΥΦΟΣ", "straße", "50%", "a_b", "beta", "İstanbul", "gamma?"]
    times = [None, datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC)]
    convs = [
        _conv(
            f"test:{c}",
            [
                (" ".join(rng.choices(words, k=3)), rng.choice(times))
                for _ in range(rng.randint(1, 6))
            ],
        )
        for c in range(12)
    ]
    svc = make_service(tmp_path / "s.duckdb")
    svc.import_conversations(convs)
    terms = ["alpha", "ALPHA", "σίσυφος", "STRASSE", "straße", "%", "_b", "a_b", "", "zzz", "?"]
    for term in terms:
        for limit in (1, 2, 5, 50):
            got = [h.message_id for h in svc.search_conversations(term, limit).hits]
            want = [m.id for m, _ in db.keyword_search(svc.store, term, limit=limit)]
            assert got == want, (term, limit)
