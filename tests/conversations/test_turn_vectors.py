"""Message search's second vector per turn: the turn alone (``turn_vector``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from layersearch.corpora.conversations.search import (
    MESSAGE_CORPUS,
    TURN_CORPUS,
    ConversationService,
    MessageSearchConfig,
    dense_text,
)
from layersearch.corpora.conversations.vectors import max_cosines, vector_ranking
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed.fake import FakeEmbedder
from layersearch.store.duckdb import DuckDBStore
from tests.support import turn_row

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"
ON = MessageSearchConfig(turn_vector=True)
OFF = MessageSearchConfig(turn_vector=False)


def _service(path: Path, config: MessageSearchConfig) -> tuple[ConversationService, dict]:
    store = DuckDBStore(path)
    embedder = FakeEmbedder(64)
    cache: dict[str, DenseCorpus] = {}

    def dense(corpus: str) -> DenseCorpus:
        return cache.setdefault(corpus, DenseCorpus(store, corpus, embedder))

    svc = ConversationService(store, dense, config=config)
    svc.import_path(FIXTURES)
    return svc, cache


def test_turn_vectors_are_on_by_default() -> None:
    assert MessageSearchConfig().turn_vector


def test_the_turns_own_text_has_speaker_and_date_but_no_turn_before() -> None:
    turns = [turn_row(0, "Ann", "what made you pick it?"), turn_row(1, "Bo", "their support")]
    cfg = MessageSearchConfig()
    assert dense_text(turns, 1, cfg, context=False) == "Bo (8 May 2023): their support"
    assert dense_text(turns, 1, cfg) == (
        "Bo (8 May 2023): their support\n[replying to Ann: what made you pick it?]"
    )
    bare = replace(cfg, dense_speakers=False)
    assert dense_text(turns, 1, bare, context=False) == "(8 May 2023): their support"


def test_max_cosines_keeps_each_ids_larger_cosine() -> None:
    context = [("a", 0.9), ("b", 0.5), ("c", 0.4)]
    own = [("c", 0.95), ("b", 0.3), ("d", 0.5)]
    assert max_cosines(context, own, 10) == [("c", 0.95), ("a", 0.9), ("b", 0.5), ("d", 0.5)]
    assert max_cosines(context, own, 2) == [("c", 0.95), ("a", 0.9)]
    assert max_cosines([], own, 5) == [("c", 0.95), ("d", 0.5), ("b", 0.3)]


def test_embed_fills_the_turn_corpus_only_when_switched_on(tmp_path: Path) -> None:
    off, _ = _service(tmp_path / "off.duckdb", OFF)
    # (and the conversations' words, for the full-text query's widening: expansion.py)
    assert [r.corpus for r in off.embed()] == [MESSAGE_CORPUS, "message-words"]
    assert not off.store.vector_fingerprints(TURN_CORPUS)
    on, _ = _service(tmp_path / "on.duckdb", ON)
    reports = on.embed()
    assert [r.corpus for r in reports] == [MESSAGE_CORPUS, TURN_CORPUS, "message-words"]
    assert reports[0].documents == reports[1].documents > 0
    assert on.store.vector_fingerprints(TURN_CORPUS)
    again = on.embed()  # incremental: nothing changed, nothing embedded
    assert [r.embedded for r in again] == [0, 0, 0]


def test_the_vector_channel_ranks_by_the_larger_cosine(tmp_path: Path) -> None:
    svc, cache = _service(tmp_path / "s.duckdb", ON)
    svc.embed()
    query = "churn dashboard weekly"
    context, own = cache[MESSAGE_CORPUS], cache[TURN_CORPUS]
    warnings: list[str] = []
    got = vector_ranking(context, lambda: own, query, 100, None, warnings)
    a, b = context.search(query, 100), own.search(query, 100)
    assert not warnings
    assert got == max_cosines(a, b, 100)
    assert got != a  # the turns' own vectors changed the ranking of this query
    assert got[0][1] >= a[0][1]


def test_semantic_search_is_the_same_with_turn_vectors_on(tmp_path: Path) -> None:
    svc, _ = _service(tmp_path / "s.duckdb", ON)
    svc.embed()
    on = svc.semantic_search("churn dashboard", 10).model_dump_json()
    svc.config = OFF
    assert svc.semantic_search("churn dashboard", 10).model_dump_json() == on


def test_a_store_without_turn_vectors_still_searches_and_says_why(tmp_path: Path) -> None:
    svc, _ = _service(tmp_path / "s.duckdb", OFF)
    svc.embed()  # an older store: context vectors only
    before = svc.search_messages("churn dashboard", 5)
    svc.config = ON
    res = svc.search_messages("churn dashboard", 5)
    assert len(res.warnings) == 1
    assert "no turn vectors stored yet" in res.warnings[0]
    assert "conversations embed" in res.warnings[0]
    assert [h.message_id for h in res.hits] == [h.message_id for h in before.hits]
    svc.embed()  # computes the missing turn vectors
    after = svc.search_messages("churn dashboard", 5)
    assert after.warnings == []
    assert after.hits and all(h.conversation_id for h in after.hits)


def test_turn_vectors_of_another_model_are_left_out_with_a_warning(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    old, new = FakeEmbedder(64), FakeEmbedder(32)
    svc = ConversationService(store, lambda c: DenseCorpus(store, c, old), config=ON)
    svc.import_path(FIXTURES)
    svc.embed()  # both corpora by the old model
    cache: dict[str, DenseCorpus] = {}
    svc = ConversationService(
        store, lambda c: cache.setdefault(c, DenseCorpus(store, c, new)), config=OFF
    )
    svc.embed()  # the context vectors again, by the new model; the turn vectors not
    before = svc.search_messages("churn dashboard", 5)
    svc.config = ON
    res = svc.search_messages("churn dashboard", 5)
    assert len(res.warnings) == 1
    assert "stored: fake/hashing-v1 (64)" in res.warnings[0], res.warnings
    assert "configured: fake/hashing-v1 (32)" in res.warnings[0]
    assert [h.message_id for h in res.hits] == [h.message_id for h in before.hits]
