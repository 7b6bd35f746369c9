"""Message-search ranking pieces: name stripping, score fusion, turn documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from layersearch.corpora.conversations.search import (
    ASKS_AMOUNT,
    ASKS_NAME,
    ASKS_PLACE,
    ASKS_WHEN,
    ConversationService,
    MessageSearchConfig,
    answer_type,
    answers_follow_questions,
    demote,
    dense_text,
    holds_answer,
    keep_channel_tops,
    message_doc,
    names_something,
    prefer_answer_types,
    prefer_times,
    question_sentences,
    states_amount,
    states_time,
    strip_names,
    zscore_fusion,
)
from layersearch.corpora.conversations.service import _sessions
from layersearch.corpora.conversations.store import MessageRow
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed.fake import FakeEmbedder
from layersearch.ranking.fusion import Fused
from layersearch.store.duckdb import DuckDBStore
from tests.support import turn_row

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"


def loaded_service(path: Path) -> ConversationService:
    store = DuckDBStore(path)
    embedder = FakeEmbedder(64)
    cache: dict[str, DenseCorpus] = {}

    def dense(corpus: str) -> DenseCorpus:
        return cache.setdefault(corpus, DenseCorpus(store, corpus, embedder))

    svc = ConversationService(store, dense)
    svc.import_path(FIXTURES)
    svc.embed()
    return svc


def test_strip_names_removes_names_and_possessives_case_insensitively() -> None:
    names = {"Caroline", "Melanie"}
    assert strip_names("What did Caroline's kids paint?", names) == "What did kids paint?"
    assert strip_names("how did melanie feel", names) == "how did feel"
    # part of a longer word is not a name
    assert strip_names("Carolines and Melanieville", names) == "Carolines and Melanieville"
    # nothing left but the name: the query is kept as asked
    assert strip_names("Caroline?", names) == "Caroline?"
    assert strip_names("anything", set()) == "anything"


def test_zscore_fusion_standardises_each_channel() -> None:
    rankings = {
        # BM25-like scale: a clear leader
        "fulltext": [("a", 30.0), ("b", 10.0), ("c", 9.0), ("d", 8.0)],
        # cosine-like scale: flat
        "vector": [("b", 0.61), ("c", 0.60), ("a", 0.59), ("e", 0.58)],
    }
    fused = zscore_fusion(rankings, {"fulltext": 1.0, "vector": 1.0})
    assert fused[0].id == "a"  # it stands far out in one channel; RRF would tie it with b
    assert {f.id for f in fused} == {"a", "b", "c", "d", "e"}
    # a document one channel did not rank gets that channel's lowest standardised score
    e = next(f for f in fused if f.id == "e")
    assert set(e.channels) == {"vector"}
    floor_ft = min(c[2] for f in fused for ch, c in f.channels.items() if ch == "fulltext")
    assert e.score == pytest.approx(e.channels["vector"][2] + floor_ft)
    assert fused[0].channels["fulltext"][0] == 1


def test_zscore_fusion_weights_ties_and_duplicates() -> None:
    rankings = {"x": [("p", 2.0), ("q", 1.0), ("p", 0.5)], "y": [("q", 2.0), ("p", 1.0)]}
    even = zscore_fusion(rankings, {"x": 1.0, "y": 1.0})
    assert [f.id for f in even] == ["p", "q"]  # equal scores: tie broken by id
    assert even[0].channels["x"][0] == 1  # a repeated id keeps its first rank
    assert [f.id for f in zscore_fusion(rankings, {"x": 1.0, "y": 2.0})] == ["q", "p"]
    # a constant channel does not divide by zero
    flat = zscore_fusion({"x": [("p", 1.0), ("q", 1.0)]}, {})
    assert [f.score for f in flat] == [0.0, 0.0]


def test_message_doc_keeps_the_turn_before_and_after_apart() -> None:
    turns = [
        turn_row(0, "A", "what made you pick it?"),
        turn_row(1, "B", "their support"),
        turn_row(2, "A", "nice"),
    ]
    doc = message_doc(turns, 1, MessageSearchConfig())
    assert doc.fields["text"] == "their support"
    assert doc.fields["before"] == "what made you pick it?"
    assert doc.fields["after"] == "nice"
    assert doc.fields["speaker"] == "B"
    assert doc.fields["date"] == "8 May 2023"
    cfg = MessageSearchConfig()
    assert cfg.boosts()["before"] > cfg.boosts()["after"]


def test_both_fusions_run_and_rank_within_the_conversation(tmp_path: Path) -> None:
    svc = loaded_service(tmp_path / "s.duckdb")
    z = svc.search_messages("churn dashboard", 5, conversation_id="locomo:conv-mini")
    svc.config = MessageSearchConfig(fusion="rrf")
    r = svc.search_messages("churn dashboard", 5, conversation_id="locomo:conv-mini")
    for res in (z, r):
        assert res.hits and {h.conversation_id for h in res.hits} == {"locomo:conv-mini"}
        # a hit both channels ranked (rules after fusion add labels of their own)
        assert any({"fulltext", "vector"} <= set(h.channels) for h in res.hits)


def test_dense_text_with_and_without_speaker_names() -> None:
    turns = [turn_row(0, "Ann", "what made you pick it?"), turn_row(1, "Bo", "their support")]
    named = dense_text(turns, 1, MessageSearchConfig())
    assert named == "Bo (8 May 2023): their support\n[replying to Ann: what made you pick it?]"
    bare = dense_text(turns, 1, MessageSearchConfig(dense_speakers=False))
    assert bare == "(8 May 2023): their support\n[replying to: what made you pick it?]"


_GARDEN = [
    ("Bo", "Ann! Ann, how is the garden, Ann?"),
    ("Ann", "Sorry, one moment."),
    ("Bo", "Sure."),
    ("Ann", "Fine, thanks. The garden has tomatoes, beans and peas."),
    ("Bo", "Good to hear. I planted mine yesterday."),
]


def _dialogue(path: Path, turns: list[tuple[str, str]] = _GARDEN) -> ConversationService:
    sample = {
        "sample_id": "names",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "9:05 am on 3 March, 2024",
            "session_1": [
                {"speaker": who, "dia_id": f"D1:{i}", "text": text}
                for i, (who, text) in enumerate(turns, start=1)
            ],
        },
        "qa": [],
    }
    (path / "names.json").write_text(json.dumps([sample]), encoding="utf-8")
    svc = ConversationService(DuckDBStore(path / "s.duckdb"))
    svc.import_path(path / "names.json", "locomo")
    return svc


def test_a_named_speaker_counts_through_the_speaker_field_only(tmp_path: Path) -> None:
    svc = _dialogue(tmp_path)
    ask = {"conversation_id": "locomo:names", "channels": ["fulltext"]}
    # Bo's turn says "Ann" three times, but it is addressed to Ann; Ann's own turn answers
    hits = svc.search_messages("How is Ann's garden?", 3, **ask).hits
    assert [h.turn_id for h in hits][:1] == ["D1:4"]
    # (answers_follow_questions off: the point here is which turn the name itself finds)
    svc.config = MessageSearchConfig(names_match_speaker_only=False, answers_follow_questions=False)
    hits = svc.search_messages("How is Ann's garden?", 3, **ask).hits
    assert [h.turn_id for h in hits][:1] == ["D1:1"]
    # a query that is only a name still finds that speaker's turns
    svc.config = MessageSearchConfig()
    hits = svc.search_messages("Ann", 3, **ask).hits
    assert hits and hits[0].speaker == "Ann"


def test_an_answer_is_lifted_to_just_above_its_question() -> None:
    fused = [Fused("q", 3.0, 1), Fused("x", 2.0, 2), Fused("a", 1.0, 3), Fused("y", 0.5, 4)]
    after = {"q": "a", "a": "x2", "y": "z"}
    out = answers_follow_questions(fused, after.get, {"q", "y"}.__contains__)
    # a takes q's place, q keeps its own just below; x is not passed over by q's answer
    assert [f.id for f in out[:3]] == ["a", "q", "x"]
    assert out[0].score > out[1].score == 3.0
    assert out[0].channels["answers"][0] == 1
    # the answer to a question no channel ranked it for is added, just above the question
    assert [f.id for f in out[-2:]] == ["z", "y"]
    assert "answers" in out[-2].channels
    # nothing is lowered, and a turn already above its question stays where it is
    fused2 = [Fused("a", 5.0, 1), Fused("q", 3.0, 2)]
    out2 = answers_follow_questions(fused2, {"q": "a"}.get, {"q"}.__contains__)
    assert [(f.id, f.score) for f in out2] == [("a", 5.0), ("q", 3.0)]
    assert out2[0].channels == {}


def test_search_puts_the_reply_before_the_question_that_matches(tmp_path: Path) -> None:
    svc = _dialogue(tmp_path)
    ask = {"conversation_id": "locomo:names", "channels": ["fulltext"]}
    # "how is the garden" is worded in Bo's question; the reply right after it comes first
    svc.config = MessageSearchConfig(names_match_speaker_only=False)
    hits = svc.search_messages("how is the garden", 3, **ask).hits
    assert [h.turn_id for h in hits][:2] == ["D1:2", "D1:1"]
    assert "answers" in hits[0].channels
    svc.config = MessageSearchConfig(answers_follow_questions=False)
    hits = svc.search_messages("how is the garden", 3, **ask).hits
    assert "D1:2" not in [h.turn_id for h in hits][:1]


def test_question_sentences_are_the_ones_that_ask() -> None:
    text = "We went camping at the lake! It was great. Any plans for the summer?"
    assert question_sentences(text) == "Any plans for the summer?"
    assert question_sentences("Thanks. how was the trip") == "how was the trip"
    assert question_sentences("What a day?! No.\nwhy not") == "What a day?! why not"
    assert question_sentences("No questions here.") == ""


def test_an_answer_goes_just_below_a_question_that_matched_elsewhere() -> None:
    fused = [Fused("q", 3.0, 1), Fused("x", 2.0, 2), Fused("a", 1.0, 3)]
    out = answers_follow_questions(fused, {"q": "a"}.get, {"q"}.__contains__, {"q"}.__contains__)
    assert [f.id for f in out] == ["q", "a", "x"]
    assert out[0].score > out[1].score > out[2].score
    assert out[1].channels["answers"][0] == 1
    # without ``below`` the answer still goes above
    out = answers_follow_questions(fused, {"q": "a"}.get, {"q"}.__contains__, lambda _: False)
    assert [f.id for f in out] == ["a", "q", "x"]


def test_the_reply_follows_the_news_a_question_turn_also_tells(tmp_path: Path) -> None:
    turns = [
        ("Ann", "We went camping at the lake last week! Any plans for the summer?"),
        ("Bo", "Not really, maybe visiting my mom."),
        ("Ann", "Nice. My sister loves camping too."),
        ("Bo", "Good to hear."),
    ]
    svc = _dialogue(tmp_path, turns)
    ask = {"conversation_id": "locomo:names", "channels": ["fulltext"]}
    # the query matches Ann's news, not her question: the news first, the reply after it
    hits = svc.search_messages("camping at the lake", 4, **ask).hits
    assert [h.turn_id for h in hits][:2] == ["D1:1", "D1:2"]
    assert "answers" in hits[1].channels
    # a query worded like the question still gets the reply first
    hits = svc.search_messages("plans for the summer", 4, **ask).hits
    assert [h.turn_id for h in hits][:2] == ["D1:2", "D1:1"]
    svc.config = MessageSearchConfig(answers_need_question_words=False)
    hits = svc.search_messages("camping at the lake", 4, **ask).hits
    assert [h.turn_id for h in hits][:2] == ["D1:2", "D1:1"]


def test_demote_moves_turns_down_by_a_spread() -> None:
    fused = [Fused("a", 3.0, 1), Fused("q", 2.0, 2), Fused("x", 1.0, 3)]
    # scores 3, 2, 1: spread 0.816, so 1.5 spreads take q from 2.0 to 0.775, below x
    out = demote(fused, {"q"}.__contains__, 1.5)
    assert [f.id for f in out] == ["a", "x", "q"]
    assert out[2].channels["answered"][0] == 2
    assert [f.id for f in demote(fused, {"q"}.__contains__, 0.0)] == ["a", "q", "x"]


def test_an_answered_question_can_move_below_other_turns(tmp_path: Path) -> None:
    turns = [
        ("Ann", "How was the camping trip at the lake?"),
        ("Bo", "Great, we loved it."),
        ("Ann", "Nice."),
        ("Bo", "We camp at the lake every summer, camping is our thing."),
    ]
    svc = _dialogue(tmp_path, turns)
    ask = {"conversation_id": "locomo:names", "channels": ["fulltext"]}
    default = [h.turn_id for h in svc.search_messages("camping trip lake", 4, **ask).hits]
    assert default.index("D1:1") == default.index("D1:2") + 1
    svc.config = MessageSearchConfig(answered_question_penalty=3.0)
    hits = svc.search_messages("camping trip lake", 4, **ask).hits
    assert [h.turn_id for h in hits][-1] == "D1:1"
    assert "answered" in hits[-1].channels


def test_each_channels_best_turns_move_into_the_top() -> None:
    fused = [Fused(i, 10.0 - n, n + 1) for n, i in enumerate("abcdefg")]
    rankings = {"fulltext": [("a", 9.0), ("f", 8.0)], "vector": [("g", 0.9), ("b", 0.8)]}
    out = keep_channel_tops(fused, rankings, 2)
    # f (rank 6) and g (rank 7) go just above d, the turn at rank 4, in their order
    assert [f.id for f in out] == ["a", "b", "c", "f", "g", "d", "e"]
    assert out[3].channels["top"][0] == 6 and out[4].channels["top"][0] == 7
    assert out[3].score > out[4].score > out[5].score == 7.0
    # one channel, or the rule off: nothing moves
    assert [f.id for f in keep_channel_tops(fused, {"fulltext": rankings["fulltext"]}, 2)] == list(
        "abcdefg"
    )
    assert [f.id for f in keep_channel_tops(fused, rankings, 0)] == list("abcdefg")


def test_search_keeps_each_channels_best_turns_in_the_top(tmp_path: Path) -> None:
    svc = loaded_service(tmp_path / "s.duckdb")
    rules_off = {
        "answers_follow_questions": False,
        "time_answer_bonus": 0.0,
        "date_match_bonus": 0.0,
        "turn_vector": False,  # the fixture's case: the context vectors' first turn
        "session_weight": 0.0,
    }

    def far_tops(turns: int) -> list[int]:
        svc.config = MessageSearchConfig(channel_top_turns=turns, **rules_off)
        hits = svc.search_messages("orders by week", 100).hits
        return [
            rank
            for rank, h in enumerate(hits, start=1)
            if min(h.channels.get("fulltext", 99), h.channels.get("vector", 99)) == 1 and rank > 2
        ]

    assert far_tops(0)  # the vector channel's first turn fuses below rank 2 on its own
    assert far_tops(1) == []


def test_time_expressions_and_when_questions() -> None:
    for text in (
        "Last Fri I took my kids to a pottery workshop",
        "I went to a conference two days ago",
        "we moved there in 2019",
        "See you tomorrow!",
        "It was on 3 May",
        "the past few weeks were busy",
    ):
        assert states_time(text), text
    for text in ("You may like it", "I love pottery", "it took ages", "Thanks, Mel!"):
        assert not states_time(text), text
    for q in ("When did Ann go camping?", "What year did Bo move?", "how long ago was it"):
        assert ASKS_WHEN.match(q), q
    for q in ("What did Ann paint?", "Why did Bo move when he did?"):
        assert not ASKS_WHEN.match(q), q


def test_turns_that_state_a_time_are_preferred_by_half_a_spread() -> None:
    fused = [Fused("a", 2.0, 1), Fused("b", 1.9, 2), Fused("c", 0.0, 3)]
    out = prefer_times(fused, {"b", "c"}.__contains__, 0.5)
    assert [f.id for f in out] == ["b", "a", "c"]  # close turns reorder; c stays last
    assert out[0].channels["when"][0] == 2
    assert [f.id for f in prefer_times(fused, {"b"}.__contains__, 0.0)] == ["a", "b", "c"]


def test_a_when_question_prefers_the_turn_that_says_when(tmp_path: Path) -> None:
    svc = _dialogue(tmp_path)
    ask = {"conversation_id": "locomo:names", "channels": ["fulltext"]}
    svc.config = MessageSearchConfig(answers_follow_questions=False, time_answer_bonus=0.0)
    plain = [h.turn_id for h in svc.search_messages("when garden tomatoes beans", 5, **ask).hits]
    svc.config = MessageSearchConfig(answers_follow_questions=False, time_answer_bonus=5.0)
    timed = svc.search_messages("when garden tomatoes beans", 5, **ask).hits
    assert plain[0] != "D1:5" and timed[0].turn_id == "D1:5"
    assert "when" in timed[0].channels


def test_sessions_split_where_turns_are_far_apart_in_time() -> None:
    def row(i: str, conv: str, minute: int | None) -> MessageRow:
        when = (
            None if minute is None else datetime(2023, 5, 8, 10, tzinfo=UTC).replace(minute=minute)
        )
        return MessageRow(i, conv, "user", "x", when, 0, False, False, None, None)

    turns = {
        "c1": [row("a", "c1", 0), row("b", "c1", 10), row("c", "c1", None), row("d", "c1", 45)],
        "c2": [row("e", "c2", 45)],
    }
    got = _sessions(turns, 30)
    assert got["a"] == got["b"] == got["c"] != got["d"] != got["e"]
    assert len(set(_sessions(turns, 60).values())) == 2


def test_questions_read_for_the_answer_type_they_ask() -> None:
    for q in ("How many kids does Ann have?", "how long has Bo been painting?", "How much?"):
        assert ASKS_AMOUNT.match(q), q
    for q in ("Where did Ann move from?", "What country is Bo from?", "In which city is it?"):
        assert ASKS_PLACE.match(q), q
    for q in ("What is the name of Ann's dog?", "What book did Bo read?", "Which songs help?"):
        assert ASKS_NAME.match(q), q
    for q in ("What did Ann paint?", "Why did Bo move?", "What does Ann think of books?"):
        assert not (ASKS_AMOUNT.match(q) or ASKS_PLACE.match(q) or ASKS_NAME.match(q)), q
    assert states_amount("We have two kids") and states_amount("it took 3 hours")
    assert not states_amount("We love our kids")
    speakers = {"ann", "bo"}
    for text in ("We went to Paris last year", 'I read "Becoming Nicole"', "Our dog Max is 3"):
        assert names_something(text, speakers), text
    # a sentence's first word, "I" and the speakers' own names are not names of an answer
    for text in ("Thanks, Ann! I love it.", "Great. Bo's garden is lovely", "I did. It was fun"):
        assert not names_something(text, speakers), text


def test_an_answer_type_question_prefers_turns_that_hold_that_type() -> None:
    fused = [Fused("a", 2.0, 1), Fused("b", 1.9, 2), Fused("c", 0.0, 3)]
    text = {"a": "we have kids, Ann", "b": "we have two kids", "c": "We moved to Rome"}

    def holds(mid: str, kind: str) -> bool:
        return holds_answer(kind, text[mid], {"Ann"})

    on, off = MessageSearchConfig(), MessageSearchConfig(answer_type_bonus=0.0)
    assert answer_type("How many kids?") == "amount" and answer_type("When?") == "when"
    assert answer_type("Where to?") == "name" and answer_type("Why kids?") is None
    out = prefer_answer_types(fused, "How many kids?", holds, on)
    assert [f.id for f in out] == ["b", "a", "c"] and out[0].channels["amount"][0] == 2
    out = prefer_answer_types(fused, "Where did they move?", holds, on)
    assert [f.id for f in out][0] == "a" and "name" in out[2].channels  # c lifted, not past a
    unmoved = ["a", "b", "c"]
    assert [f.id for f in prefer_answer_types(fused, "How many kids?", holds, off)] == unmoved
    # a question with no answer type read leaves the order alone
    assert [f.id for f in prefer_answer_types(fused, "Why kids?", holds, on)] == unmoved
    # "When …" keeps its own weight, time_answer_bonus
    when = MessageSearchConfig(time_answer_bonus=0.0)
    text["b"] = "we had kids last year"
    assert [f.id for f in prefer_answer_types(fused, "When kids?", holds, when)] == unmoved
    assert [f.id for f in prefer_answer_types(fused, "When kids?", holds, on)][0] == "b"
