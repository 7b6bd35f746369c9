"""Message search's full text widened by the conversations' words nearest each question
word, when the vector channel runs (``conversations.expansion``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from layersearch.corpora.conversations.expansion import WORDS_CORPUS, added, turn_words
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.dense import DenseCorpus
from layersearch.store.duckdb import DuckDBStore
from tests.support import ConceptEmbedder, turn_row

C1 = "generic:c1"


def kinds() -> ConceptEmbedder:
    """Reads a violin as an instrument."""
    return ConceptEmbedder({"instruments": 0, "instrument": 0, "violin": 0}, "kinds-v1")


def _service(
    tmp_path: Path, config: MessageSearchConfig, embedder: ConceptEmbedder
) -> ConversationService:
    store = DuckDBStore(tmp_path / "s.duckdb")
    cache: dict[str, DenseCorpus] = {}

    def dense(corpus: str) -> DenseCorpus:
        return cache.setdefault(corpus, DenseCorpus(store, corpus, embedder))  # type: ignore[arg-type]

    svc = ConversationService(store, dense, config=config)
    lines = [
        "I practised the violin all weekend for the recital.",
        "Nice! Did the weather hold up for your hike?",
        "We baked bread and watched the rain.",
        "My sister plays music at the school fair.",
    ]
    rows = [
        {"conversation_id": "c1", "role": "user" if i % 2 == 0 else "assistant", "content": t}
        for i, t in enumerate(lines)
    ]
    path = tmp_path / "messages.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    svc.import_path(path)
    return svc


def test_turn_words_are_the_plain_words_of_the_turns() -> None:
    rows = [turn_row(0, "Ann", "The violin's strings, 3 of them: ok?"), turn_row(1, "Bo", "Violin")]
    assert turn_words(rows) == ["strings", "violin"]


def test_added_sums_scores_and_orders_by_score_then_id() -> None:
    assert added([("a", 1.0), ("b", 0.5)], [("b", 0.6), ("c", 1.1)], 10) == [
        ("b", 1.1),
        ("c", 1.1),
        ("a", 1.0),
    ]
    assert added([("a", 1.0)], [("b", 2.0)], 1) == [("b", 2.0)]


def test_a_question_word_finds_the_turn_that_names_a_kind_of_it(tmp_path: Path) -> None:
    emb = kinds()
    svc = _service(tmp_path, MessageSearchConfig(), emb)
    (report,) = [r for r in svc.embed() if r.corpus == WORDS_CORPUS]
    assert report.documents > 0
    asked = "which instruments"
    lexical = svc.search_messages(asked, conversation_id=C1, channels=["fulltext"])
    both = svc.search_messages(asked, conversation_id=C1)
    violin = next(h for h in both.hits if "violin" in svc.snapshot().messages[h.message_id].content)
    # full text alone cannot see it (no shared word); with the vector channel the
    # question's word reads as the turn's word, and the turn comes first
    assert violin.message_id not in [h.message_id for h in lexical.hits]
    assert both.hits[0].message_id == violin.message_id and both.warnings == []
    assert violin.channels.get("fulltext") == 1, "its full-text rank comes from the widening"
    assert "instruments" in emb.documents
    seen = len(emb.documents)
    svc.search_messages(asked, conversation_id=C1)
    assert len(emb.documents) == seen, "a question word is embedded once"
    (tmp_path / "off").mkdir()
    off = _service(tmp_path / "off", replace(MessageSearchConfig(), word_neighbours=0), kinds())
    assert WORDS_CORPUS not in {r.corpus for r in off.embed()}


def test_a_store_embedded_without_word_vectors_says_so(tmp_path: Path) -> None:
    emb = kinds()
    svc = _service(tmp_path, replace(MessageSearchConfig(), word_neighbours=0), emb)
    svc.embed()
    svc.config = MessageSearchConfig()
    found = svc.search_messages("which instruments", conversation_id=C1)
    assert found.hits
    assert found.warnings == [
        "question words not read through the embedder: no word vectors stored yet; run "
        "`layersearch --embedder <spec> conversations embed`"
    ]
