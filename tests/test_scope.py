"""``scope``: one search across the semantic layer, memories, conversations and the vault
(issue #24) -- the sources, the id contract, caps, warnings, inspect, the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layersearch import Layersearch
from layersearch.errors import ConfigError, NotFound
from layersearch.types import Hit
from tests.support import MINI, ROOT, VAULT
from tests.test_cli import run

CHATS = ROOT / "fixtures" / "conversations" / "generic" / "messages.jsonl"
GOLDEN = Path(__file__).parent / "golden" / "search_unscoped.json"
#: the unscoped searches whose output is pinned (made by the code before ``scope``;
#: remade only with a deliberate ranking change, named in its commit)
GOLDEN_REQUESTS: list[dict[str, object]] = [
    {"question": "monthly revenue by store"},
    {"question": "customers", "explain": True, "max_results": 5},
    {"entities": ["orders.tax_paid"], "question": "tax"},
    {"question": "store", "datasource": "shop", "max_example_queries": 2},
    {"question": "revenue", "max_entities": 3, "max_memories": 2},
]


def _full(path: Path) -> Layersearch:
    ls = Layersearch(path)
    ls.load(MINI)
    ls.conversations.import_path(CHATS)
    ls.vault.index(VAULT)
    return ls


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    ls = _full(tmp_path_factory.mktemp("scope") / "s.duckdb")
    yield ls
    ls.close()


@pytest.fixture
def mini(tmp_path: Path) -> Iterator[Layersearch]:
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(MINI)
    yield ls
    ls.close()


@pytest.fixture
def layer_and_vault(tmp_path: Path) -> Iterator[Layersearch]:
    """The mini layer and the vault fixture; a test saves the memories it needs."""
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        ls.vault.index(VAULT)
        yield ls


# -- unscoped search is unchanged ---------------------------------------------------------------


def test_unscoped_output_is_byte_identical_to_before(mini: Layersearch) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = [mini.search(**req).model_dump_json() for req in GOLDEN_REQUESTS]
    assert got == golden


def test_scope_semantic_is_todays_list_with_sources(full: Layersearch) -> None:
    plain = full.search(question="customers who cancel", max_results=8)
    scoped = full.search(question="customers who cancel", max_results=8, scope="semantic")
    assert [h.id for h in scoped.results] == [h.id for h in plain.results]
    assert [h.score for h in scoped.results] == [h.score for h in plain.results]
    assert {h.source for h in scoped.results} <= {"semantic", "memory"}
    for h in scoped.results:
        assert h.source == ("memory" if h.kind == "memory" else "semantic")
    assert all("source" not in d for d in plain.model_dump()["results"])


# -- the sources and the id contract --------------------------------------------------------------


def test_scope_all_has_every_source_with_its_ids(full: Layersearch) -> None:
    resp = full.search(question="active customers churn", scope="all", max_results=40)
    by_source: dict[str, list] = {}
    for h in resp.results:
        by_source.setdefault(h.source, []).append(h)
    assert set(by_source) == {"semantic", "memory", "conversation", "vault"}, resp.warnings
    for h in by_source["conversation"]:
        assert h.kind == "conversation"
        # the message id names its conversation: the hit id does not repeat it
        assert h.id == f"conversation:{h.message_id}"
        assert h.message_id.startswith(f"{h.conv_id}#")
    for h in by_source["vault"]:
        assert h.kind == "vault" and h.id == f"vault:{h.slug}"
        full.vault.get_note(h.slug)  # the slug opens the note
    for h in by_source["memory"]:
        assert h.id.startswith("memory:")
    dumped = resp.model_dump()["results"]
    semantic = next(d for d in dumped if d["source"] == "semantic")
    assert "slug" not in semantic and "conv_id" not in semantic


def test_each_source_alone(full: Layersearch) -> None:
    for scope, source in (
        ("memory", "memory"),
        ("conversations", "conversation"),
        ("vault", "vault"),
    ):
        resp = full.search(question="customers", scope=scope, max_results=10)
        assert resp.results, (scope, resp.warnings)
        assert {h.source for h in resp.results} == {source}


def test_conversation_hits_follow_message_search(full: Layersearch) -> None:
    direct = full.conversations.search_messages("active customers", 5, channels=["fulltext"])
    resp = full.search(question="active customers", scope="conversations", max_results=5)
    assert [h.message_id for h in resp.results] == [m.message_id for m in direct.hits]


def test_conversation_hits_carry_the_stages_that_moved_them(full: Layersearch) -> None:
    """With explain, a conversation hit's stages begin with those of message search
    (named ``conversation/<stage>``, positions in its own list)."""
    question = "what did we decide about customers"
    direct = full.conversations.search_messages(question, 5, channels=["fulltext"], explain=True)
    resp = full.search(question=question, scope="conversations", max_results=5, explain=True)
    own = {
        h.message_id: [f"conversation/{m.stage} #{m.before}→#{m.after}" for m in h.stages or []]
        for h in direct.hits
    }
    assert any(own.values())
    for h in resp.results:
        shown = [f"{m.stage} #{m.before}→#{m.after}" for m in h.stages or []]
        assert shown[: len(own[h.message_id])] == own[h.message_id]
    plain = full.search(question=question, scope="conversations", max_results=5)
    assert all(h.stages is None for h in plain.results)


def test_vault_hits_follow_vault_search(full: Layersearch) -> None:
    direct = full.vault.search("how do we define churn", limit=5, mode="hybrid", warnings=[])
    resp = full.search(question="how do we define churn", scope="vault", max_results=5)
    assert [h.slug for h in resp.results] == [v.slug for v in direct]
    assert not resp.warnings  # lexical without an embedder is what was asked for


def test_fusion_takes_sources_in_turn_deterministically(full: Layersearch) -> None:
    args = {"question": "customers revenue", "scope": ["vault", "conversations"], "explain": True}
    a = full.search(**args, max_results=20)
    b = full.search(**args, max_results=20)
    assert a.model_dump_json() == b.model_dump_json()
    ranks = [(h.explanation[0].rank, h.source) for h in a.results]
    waits = [_waits(h) for h in a.results]
    assert True in waits  # vault's 2nd note holds less of the question than its 1st
    # the hits in turn first: the first turn of each source, the one holding more of the
    # question first (vault before conversation on equal shares), then the second, ...;
    # the hits that wait after them, in their source's order
    turns = [rs for rs, w in zip(ranks, waits, strict=True) if not w]
    assert waits == sorted(waits) and ranks[: len(turns)] == turns
    # each source's hits in turn close up: its k-th takes the k-th turn
    seen = {"vault": 0, "conversation": 0}
    turn = []
    for _rank, source in turns:
        seen[source] += 1
        turn.append((seen[source], source))
    # a source's turns go first to its hits holding the top share (the largest share of
    # the question any hit holds: vault notes 3rd and 4th in vault search, not its 1st),
    # then to its other hits, each part in the source's order
    leads = [_leads(h) for h in a.results]
    vault = [(not lead, r) for (r, src), lead in zip(turns, leads, strict=False) if src == "vault"]
    assert vault == sorted(vault) and vault[0] == (False, 3) and (True, 1) in vault
    assert not any(lead for (_r, src), lead in zip(ranks, leads, strict=True) if src != "vault")
    share = [_share(h) for h in a.results]
    order = ["vault", "conversation"]
    keys = [(t, -sh, order.index(src)) for (t, src), sh in zip(turn, share, strict=False)]
    assert keys == sorted(keys)
    assert ranks[0] == (3, "vault") and ranks[1] == (1, "conversation")
    scores = [h.score for h in a.results]
    assert scores == sorted(scores, reverse=True)
    assert a.results[0].explanation[0].channel == "vault"
    assert a.results[0].explanation[1].channel.startswith("vault/")


def _tier(hit: Hit) -> int:
    """-1: in turn; 0: waiting, of a source with no real match (or a first hit with no
    real match of its source); 1: waiting, weak. A tagged entity never waits (its
    explanation names the memory that tagged it)."""
    notes = {c.channel: c.score for c in hit.explanation or []}
    if not hit.explanation:
        return -1
    if any(c.channel.startswith("semantic/tagged by") for c in hit.explanation):
        return -1
    if hit.explanation[0].rank == 1:
        return 0 if notes["share/source best"] < 0.5 else -1
    if notes["share/source best"] < 0.7:
        return 1
    return 0 if notes["source best/top"] < 0.5 else -1


def _leads(hit: Hit) -> bool:
    """Whether ``hit`` holds the top share (the best share of the best-matched source),
    read from its explanation."""
    notes = {c.channel: c.score for c in hit.explanation or []}
    return notes["share/source best"] == 1.0 and notes["source best/top"] == 1.0


def _share(hit: Hit) -> float:
    """The share of the question ``hit``'s document holds, from its explanation."""
    return next(c.score for c in hit.explanation or [] if c.channel == "share")


def _waits(hit: Hit) -> bool:
    """Whether ``hit`` waits after the hits in turn, read from its explanation: its
    source's first holding less than half of its source's best (share/source best < 0.5);
    after the first, weak (< 0.7) or of a source with no real match (source best/top <
    0.5); a tagged entity never waits (see :func:`_tier`)."""
    return _tier(hit) >= 0


def test_entities_the_best_memory_is_tagged_with_come_first(layer_and_vault: Layersearch) -> None:
    ls = layer_and_vault
    (memory,) = ls.save_memories(
        [
            {
                "learning": "Deal status and order status: a deal counts once its shop "
                "order is paid",
                "entities": ["shop.orders.customer_id"],
            }
        ]
    )
    question = "deal status order status"
    plain = [h.id for h in ls.search(question=question, max_results=40).results]
    entities = [i for i in plain if not i.startswith("memory:")]
    assert plain[0] == memory.id
    assert entities.index("shop.orders.customer_id") >= 6  # deep in the entity ranking
    resp = ls.search(question=question, scope=["semantic", "vault"], explain=True)
    semantic = [h for h in resp.results if h.source == "semantic"]
    assert semantic[0].id == "shop.orders.customer_id"
    assert semantic[0].explanation[1].channel == f"semantic/tagged by {memory.id}"
    # the untagged entities keep the entity search's order after it, those in turn
    # first, then those that wait (holding less of the question than the first)
    rest = [h for h in semantic[1:] if not _waits(h)] + [h for h in semantic if _waits(h)]
    order = [i for i in entities if i != "shop.orders.customer_id"]
    in_turn = [h.id for h in rest if not _waits(h)]
    assert in_turn == [i for i in order if i in in_turn]
    assert [h.id for h in semantic[1:]] == [h.id for h in rest]
    # it takes the semantic source's first turn: one place of the first three (one
    # turn of each source: entities, memories, the vault)
    assert "shop.orders.customer_id" in [h.id for h in resp.results[:3]]
    assert {h.source for h in resp.results[:3]} == {"semantic", "memory", "vault"}
    # scope=semantic stays the entity search's own list
    scoped = ls.search(question=question, scope="semantic", max_results=40)
    assert [h.id for h in scoped.results] == plain


def _lists(
    ls: Layersearch, entities: list[str], memories: list[str], notes: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Hand-made source lists for :meth:`ScopeService._tagged_first`."""
    from layersearch.corpora.scope_places import Ranked

    corpus = ls.corpus()

    def hits(ids: list[str], source: str) -> list[Hit]:
        return [
            corpus.hit(i, 1.0, compact=True, explanation=[]).model_copy(update={"source": source})
            for i in ids
        ]

    vault = [Hit(kind="vault", id=f"vault:{n}", score=1.0, source="vault", slug=n) for n in notes]
    ranked = {
        "semantic": Ranked(hits=hits(entities, "semantic")),
        "memory": Ranked(hits=hits(memories, "memory")),
    }
    if notes:
        ranked["vault"] = Ranked(hits=vault)
    return ranked


def test_a_memory_reading_the_question_better_brings_its_entities(
    layer_and_vault: Layersearch,
) -> None:
    from layersearch.types import SearchRequest

    ls = layer_and_vault
    (memory,) = ls.save_memories(
        [
            {
                "learning": "Merchants who left a salaried job to start a business are "
                "first-time sellers",
                "entities": ["shop.stores.opened_at", "crm.deals.amount", "shop.orders"],
            }
        ]
    )
    question = "merchants who left a salaried job to start a business"
    given = ["shop.orders.customer_id", "shop.orders"]

    def lifted(**kw: object) -> list[str]:
        req = SearchRequest(question=question, scope="all", **kw)
        out = ls.scope._tagged_first(_lists(ls, given, [memory.id]), req)
        ids = [h.id for h in out.hits]
        assert out.lifted == set(ids[: len(out.lifted)]) - {"shop.orders.customer_id"}
        return ids

    # the memory holds the whole question, the entity list none of it: the entities the
    # memory is tagged with that the entity search did not return join, after the
    # tagged one it did return, the rest keep their order
    assert lifted() == [
        "shop.orders",
        "shop.stores.opened_at",
        "crm.deals.amount",
        "shop.orders.customer_id",
    ]
    # only those of the asked datasource; none under a cypher filter
    assert lifted(datasource="shop")[:2] == ["shop.orders", "shop.stores.opened_at"]
    assert "crm.deals.amount" not in lifted(datasource="shop")
    cypher = "MATCH (n) WHERE n.id STARTS WITH 'shop' RETURN n"
    assert lifted(cypher_filter=cypher) == ["shop.orders", "shop.orders.customer_id"]
    # with explain, the joined entities say which memory brought them
    req = SearchRequest(question=question, scope="all", explain=True)
    out = ls.scope._tagged_first(_lists(ls, given, [memory.id]), req)
    assert out.hits[0].explanation[0].channel == f"tagged by {memory.id}"
    assert out.hits[1].explanation == out.hits[2].explanation
    assert out.hits[1].explanation[0].channel == f"tagged by {memory.id} (joined)"
    assert out.hits[1].source == "semantic"


def test_a_memory_reading_the_question_no_better_brings_none(layer_and_vault: Layersearch) -> None:
    from layersearch.types import SearchRequest

    ls = layer_and_vault
    tax, value = ls.save_memories(
        [
            {
                "learning": "The tax paid on an order follows the store",
                "entities": ["crm.deals.pipeline_value"],
            },
            {"learning": "Salaried merchants value", "entities": ["crm.deals.amount"]},
        ]
    )
    # the entity list's best (tax_paid) holds as much of the question as the memory
    req = SearchRequest(question="tax paid on an order", scope="all")
    out = ls.scope._tagged_first(_lists(ls, ["shop.orders.tax_paid"], [tax.id]), req)
    assert [h.id for h in out.hits] == ["shop.orders.tax_paid"] and not out.lifted
    # the memory holds more than the entities, but under half of what the best-matched
    # source (a vault note holding the whole question) holds: no real match
    req = SearchRequest(question="customer lifetime value", scope="all")
    ranked = _lists(
        ls, ["shop.stores.store_name"], [value.id], ("Metrics/Customer lifetime value",)
    )
    out = ls.scope._tagged_first(ranked, req)
    assert [h.id for h in out.hits] == ["shop.stores.store_name"] and not out.lifted
    # without that note the memory is the best-matched source: its entity joins
    del ranked["vault"]
    out = ls.scope._tagged_first(ranked, req)
    assert [h.id for h in out.hits] == ["crm.deals.amount", "shop.stores.store_name"]


def test_a_first_memory_weak_in_its_own_list_lifts_nothing(
    layer_and_vault: Layersearch,
) -> None:
    from layersearch.types import SearchRequest

    ls = layer_and_vault
    weak, strong = ls.save_memories(
        [
            {"learning": "Open items of the weekly sync", "entities": ["crm.deals.amount"]},
            {
                "learning": "Pipeline value of open deals is summed in euros",
                "entities": ["crm.deals.pipeline_value"],
            },
        ]
    )
    req = SearchRequest(question="pipeline value of open deals", scope="all")
    given = ["shop.orders", "crm.deals.amount"]
    # ranked first (by vectors, say) while holding a fraction of what the list's best
    # holds: its tags are no evidence, the entity list stays as it was
    out = ls.scope._tagged_first(_lists(ls, given, [weak.id, strong.id]), req)
    assert [h.id for h in out.hits] == given and not out.lifted
    # the same memory first of a list it leads: its tagged entity goes first
    out = ls.scope._tagged_first(_lists(ls, given, [weak.id]), req)
    assert [h.id for h in out.hits] == ["crm.deals.amount", "shop.orders"]
    assert out.lifted == {"crm.deals.amount"}


def test_memories_with_little_of_the_question_wait_after_every_source(
    layer_and_vault: Layersearch,
) -> None:
    ls = layer_and_vault
    best, partial = ls.save_memories(
        [
            {
                "learning": "Pipeline value of open deals is summed in euros before the "
                "weekly forecast",
                "entities": ["crm.deals.pipeline_value"],
            },
            {"learning": "The weekly forecast export runs on Mondays", "entities": ["crm"]},
        ]
    )
    question = "pipeline value of open deals in euros weekly forecast"
    alone = ls.search(question=question, scope="memory", max_results=10, explain=True)
    memories = [h.id for h in alone.results]
    assert memories[0] == best.id and partial.id in memories[1:]
    # memories alone keep the memory ranking of today's search
    unscoped = ls.search(question=question, max_results=100).results
    assert memories == [h.id for h in unscoped if h.kind == "memory"][:10]
    words = {
        h.id: next(c.score for c in h.explanation if c.channel == "memory/words")
        for h in alone.results[:3]
    }
    assert words[best.id] == 1.0 and words[partial.id] < 0.7

    args = {"question": question, "scope": ["semantic", "vault"], "max_per_source": 5}
    resp = ls.search(**args, max_results=40, explain=True)
    ids = [h.id for h in resp.results]
    # the memory source keeps its own order, its weak tail after every hit in turn
    assert [i for i in ids if i.startswith("memory:")] == memories
    in_turn = [n for n, h in enumerate(resp.results) if not _waits(h)]
    assert ids.index(best.id) < 3
    assert _waits(resp.results[ids.index(partial.id)])
    assert ids.index(partial.id) > max(in_turn)
    head = resp.results[ids.index(partial.id)].explanation[0]
    assert (head.channel, head.rank) == ("memory", memories.index(partial.id) + 1)
    notes = {c.channel: c.score for c in resp.results[ids.index(partial.id)].explanation}
    assert notes["share/source best"] < 0.7  # what made it wait, in its explanation
    scores = [h.score for h in resp.results]
    assert scores == sorted(scores, reverse=True)
    # without explain the hits carry none (the words share is read internally)
    plain = ls.search(**args, max_results=40)
    assert [h.id for h in plain.results] == ids
    assert all(h.explanation is None for h in plain.results)


def test_a_source_with_no_real_match_keeps_one_turn(full: Layersearch) -> None:
    resp = full.search(
        question="customer lifetime value", scope="all", explain=True, max_results=40
    )
    notes = [{c.channel: c.score for c in h.explanation or []} for h in resp.results]
    best = {h.source: n["source best/top"] for h, n in zip(resp.results, notes, strict=True)}
    # the vault note "Customer lifetime value" holds the whole question, no other source's
    # best hit half of what it holds
    # and it goes first: among the sources' first hits, the one holding most of the question
    assert best["vault"] == 1.0 and resp.results[0].id == "vault:Metrics/Customer lifetime value"
    assert all(b < 0.5 for s, b in best.items() if s != "vault") and len(best) == 4
    # each source's first hit in turn, the others of the unmatched sources wait (before
    # the weak hits of every source)
    assert {h.source for h in resp.results[:4]} == set(best)
    tiers = [_tier(h) for h in resp.results]
    assert tiers == sorted(tiers) and 0 in tiers and 1 in tiers
    unmatched = [h for h, t in zip(resp.results, tiers, strict=True) if t == 0]
    assert {h.source for h in unmatched} <= {"semantic", "memory", "conversation"}
    scores = [h.score for h in resp.results]
    assert scores == sorted(scores, reverse=True)


def test_waiting_tiers_from_shares() -> None:
    from layersearch.corpora.scope_places import Ranked, waiting_tiers

    def hits(source: str, n: int) -> list[Hit]:
        return [Hit(kind="vault", id=f"{source}{i}", score=0.0) for i in range(n)]

    ranked = {
        "vault": Ranked(hits=hits("v", 3)),
        "semantic": Ranked(hits=hits("s", 4), lifted=frozenset({"s2"})),
    }
    shares = {
        "vault": (1.0, [1.0, 0.7, 0.69]),  # 0.69 < 0.7 of its best: weak
        "semantic": (0.49, [0.2, 0.49, 0.1, 0.3]),  # best < 0.5 of the vault's: unmatched
    }
    # the first hit of a source keeps its turn (s0: 0.245 is half of its source's best); a
    # weak hit is weak even in an unmatched source; an entity the best memory is tagged
    # with (s2) never waits, even in an unmatched source
    shares["semantic"] = (0.49, [0.245, 0.49, 0.1, 0.3])
    assert waiting_tiers(ranked, shares, 10) == {"v2": 1, "s1": 0, "s3": 1}
    shares["semantic"] = (0.5, [0.25, 0.5, 0.1, 0.3])  # half the vault's: matched
    assert waiting_tiers(ranked, shares, 10) == {"v2": 1, "s3": 1}
    assert waiting_tiers(ranked, shares, 2) == {}  # the cap: only the first two are read
    assert waiting_tiers(ranked, {}, 10) == {}
    # a first hit holding less than half of its source's best is no real match: it waits
    # with the unmatched, and its source's turns go to its next hits; a tagged one keeps it
    shares["semantic"] = (0.5, [0.24, 0.5, 0.1, 0.3])
    assert waiting_tiers(ranked, shares, 10) == {"v2": 1, "s0": 0, "s3": 1}
    ranked["semantic"] = Ranked(hits=hits("s", 4), lifted=frozenset({"s0", "s2"}))
    assert waiting_tiers(ranked, shares, 10) == {"v2": 1, "s3": 1}


def test_hits_wait_only_when_sources_meet(
    full: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch.corpora import scope_stages

    calls: list[set[str]] = []
    real = scope_stages.waiting_tiers

    def counted(ranked, shares, cap, **numbers):  # type: ignore[no-untyped-def]
        calls.append(set(shares))
        return real(ranked, shares, cap, **numbers)

    monkeypatch.setattr(scope_stages, "waiting_tiers", counted)
    for scope in ("memory", "semantic", ["semantic", "memory"], "vault"):
        full.search(question="customers revenue", scope=scope)
    # scope=semantic is the entity search's own list; a source alone keeps its order (each
    # of the two waiting stages asks once)
    assert calls == [set()] * 4
    full.search(question="customers revenue", scope=["memory", "vault"])
    full.search(question="customers revenue", scope="all")
    every = {"semantic", "memory", "vault", "conversation"}
    assert calls[4:] == [{"memory", "vault"}] * 2 + [every] * 2


def test_no_explanation_unless_asked_in_any_list(full: Layersearch) -> None:
    args = {"question": "revenue", "max_entities": 3, "max_memories": 2, "max_example_queries": 2}
    for scope in ("all", ["memory", "vault"], "semantic"):
        resp = full.search(**args, scope=scope)
        lists = [resp.results, resp.entities or [], resp.memories or [], resp.example_queries or []]
        assert resp.results and all(h.explanation is None for hits in lists for h in hits), scope
    asked = full.search(**args, scope="all", explain=True)
    assert all(h.explanation for h in asked.results + (asked.entities or []))


def test_source_lists_are_what_the_fusion_reads(full: Layersearch) -> None:
    from layersearch.types import SearchRequest

    args = {"question": "customers revenue", "scope": "all", "max_results": 10}
    lists = full.scope.source_lists(SearchRequest.model_validate(args))
    assert set(lists) == {"semantic", "memory", "conversation", "vault"}
    assert all(0 < len(hits) <= 10 for hits in lists.values())
    assert all(h.source == s for s, hits in lists.items() for h in hits)
    # the fused ten are drawn from them, each hit from its own source's list
    fused = full.search(**args).results
    assert all(h.id in {x.id for x in lists[h.source]} for h in fused)
    # the entity list is the lifted one: the best memory's tagged entities first
    best = full.corpus().memories[lists["memory"][0].id]
    tagged = [h.id for h in lists["semantic"] if h.id in set(best.entities)]
    assert tagged and [h.id for h in lists["semantic"][: len(tagged)]] == tagged
    # max_per_source caps each list; bad input is the search's error
    capped = full.scope.source_lists(SearchRequest.model_validate({**args, "max_per_source": 2}))
    assert all(len(hits) <= 2 for hits in capped.values())
    with pytest.raises(ConfigError, match="unknown scope"):
        full.scope.source_lists(SearchRequest.model_validate({**args, "scope": "nope"}))


def test_scope_names_as_a_comma_list_or_list(full: Layersearch) -> None:
    a = full.search(question="customers tax", scope="vault,memory")
    b = full.search(question="customers tax", scope=["memory", "vault"])
    assert a.model_dump_json() == b.model_dump_json()
    assert {h.source for h in a.results} == {"vault", "memory"}


# -- caps ----------------------------------------------------------------------------------------


def test_max_per_source_and_max_results(full: Layersearch) -> None:
    resp = full.search(question="customers", scope="all", max_per_source=2, max_results=20)
    counts: dict[str, int] = {}
    for h in resp.results:
        counts[h.source] = counts.get(h.source, 0) + 1
    assert counts and max(counts.values()) == 2
    capped = full.search(question="customers", scope="all", max_results=3)
    assert len(capped.results) == 3


def test_max_per_source_on_scope_semantic(full: Layersearch) -> None:
    resp = full.search(question="revenue", scope="semantic", max_per_source=1, max_results=10)
    assert sorted(h.source for h in resp.results) == ["memory", "semantic"]


@pytest.mark.parametrize(
    "args, message",
    [
        ({"scope": "everything"}, "unknown scope 'everything'"),
        ({"scope": ["vault", 3]}, "scope"),
        ({"scope": "all", "max_per_source": 0}, "max_per_source must be at least 1"),
        ({"scope": "all", "role": "robot"}, "role must be 'user' or 'assistant'"),
        ({"scope": ""}, "scope is empty"),
    ],
)
def test_bad_input_is_a_clear_error(full: Layersearch, args: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        full.search(question="churn", **args)


# -- filters and empty sources ---------------------------------------------------------------------


def test_filters_apply_to_their_corpus(full: Layersearch) -> None:
    users = full.search(question="customers", scope="conversations", role="user", max_results=20)
    assert users.results
    snap = full.conversations.snapshot()
    assert {snap.messages[h.message_id].role for h in users.results} == {"user"}
    tagged = full.search(question="churn", scope="vault", tags=["no-such-tag-at-all"])
    assert not tagged.results
    assert any("tags excluded every vault hit" in w for w in tagged.warnings)
    ignored = full.search(question="churn", scope="vault", role="user")
    assert any("role applies only to conversations" in w for w in ignored.warnings)


def test_datasource_filter_warns_when_it_empties_semantic(full: Layersearch) -> None:
    resp = full.search(
        question="churn",
        scope="all",
        cypher_filter="MATCH (d:Datasource) WHERE d.name = 'none' RETURN d.id AS id",
    )
    assert resp.results  # the other corpora still answer
    assert any("cypher_filter excluded every semantic hit" in w for w in resp.warnings)


def test_empty_sources_warn_for_all_and_fail_when_named_alone(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        resp = ls.search(question="customers", scope="all")
        assert resp.results
        text = " ".join(resp.warnings)
        assert "no conversations imported" in text and "no vault indexed" in text
        with pytest.raises(NotFound, match="no vault indexed"):
            ls.search(question="customers", scope="vault")
        with pytest.raises(NotFound, match="no conversations imported"):
            ls.search(question="customers", scope="conversations")
    with Layersearch(tmp_path / "empty.duckdb") as ls:
        resp = ls.search(question="x", scope="all")
        assert resp.results == [] and len(resp.warnings) == 4


# -- inspect -------------------------------------------------------------------------------------


def test_inspect_opens_every_kind_of_hit(full: Layersearch) -> None:
    resp = full.search(question="customers churn", scope="all", max_per_source=1)
    ids = [h.id for h in resp.results]
    assert {h.source for h in resp.results} == {"semantic", "memory", "conversation", "vault"}
    out = full.inspect(ids)
    assert len(out.entities) == 1 and len(out.memories) == 1
    assert out.conversations is not None and len(out.conversations) == 1
    conv = next(h for h in resp.results if h.source == "conversation")
    assert out.conversations[0].message_id == conv.message_id and out.conversations[0].content
    assert out.notes is not None and out.notes[0].slug == next(
        h.slug for h in resp.results if h.source == "vault"
    )


def test_inspect_opens_the_older_conversation_ids(full: Layersearch) -> None:
    """Ids were conversation:<conv_id>:<message_id> before issue 43 (an agent may have kept
    some): they still open the message, given back under its id of today."""
    hit = full.search(question="active customers", scope="conversations").results[0]
    assert hit.conv_id and hit.message_id
    old = f"conversation:{hit.conv_id}:{hit.message_id}"
    shown = full.inspect([old, hit.id])
    assert shown.conversations is not None
    assert [c.id for c in shown.conversations] == [hit.id, hit.id]
    assert {c.message_id for c in shown.conversations} == {hit.message_id}


def test_inspect_of_unknown_scoped_ids(full: Layersearch) -> None:
    with pytest.raises(NotFound, match="unknown conversation message"):
        full.inspect(["conversation:nope:nope"])
    out = full.inspect(["shop.orders", "vault:No/Such/Note"])
    assert out.entities and out.notes == [] and any("no note" in w for w in out.warnings)
    # entity-only inspect is as it was: no conversations / notes keys
    assert set(full.inspect(["shop.orders"]).model_dump(exclude_none=False)) == {
        "entities",
        "memories",
        "warnings",
    }


# -- the CLI ---------------------------------------------------------------------------------------


def test_cli_scope_json_and_inspect(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    _full(store).close()
    out = json.loads(
        run(
            store,
            "search",
            "customers",
            "--scope",
            "vault",
            "--scope",
            "conversations",
            "--max-per-source",
            "2",
            "--explain",
            "--json",
        ).stdout
    )
    assert {h["source"] for h in out["results"]} == {"vault", "conversation"}
    assert len(out["results"]) == 4
    assert out["results"][0]["explanation"][0]["channel"] in {"vault", "conversation"}
    ids = [h["id"] for h in out["results"]]
    shown = json.loads(run(store, "inspect", *ids, "--json").stdout)
    assert len(shown["notes"]) == 2 and len(shown["conversations"]) == 2
    bad = run(store, "search", "x", "--scope", "nowhere", ok=False)
    assert bad.returncode != 0 and "unknown scope 'nowhere'" in bad.stderr
    assert "Traceback" not in bad.stderr
    text = run(store, "search", "churn", "--scope", "all").stdout
    assert "vault:" in text


def test_ties_go_to_the_hit_holding_more_of_the_question() -> None:
    from layersearch.corpora.scope_places import Ranked, tie_order

    def hits(source: str, n: int) -> list[Hit]:
        return [Hit(kind="vault", id=f"{source}{i}", score=0.0) for i in range(n)]

    ranked = {
        "semantic": Ranked(hits=hits("s", 2)),
        "vault": Ranked(hits=hits("v", 2)),
        "conversation": Ranked(hits=hits("c", 2)),
    }
    shares = {
        "semantic": (0.4, [0.2, 0.4]),
        "vault": (0.9, [0.9, 0.4]),
        "conversation": (0.5, [0.5, 0.2 + 0.1 + 0.1]),  # 0.4 summed another way: a tie
    }
    tie = tie_order(ranked, shares, 10)
    assert sorted(tie, key=tie.__getitem__) == ["v0", "c0", "s1", "v1", "c1", "s0"]
    assert sorted(tie_order(ranked, shares, 1).values()) == [0, 1, 2]  # the cap
    # without shares (one source, no question) the source order alone
    alone = tie_order(ranked, {}, 10)
    assert [h for h in sorted(alone, key=alone.__getitem__) if h.endswith("0")] == [
        "s0",
        "v0",
        "c0",
    ]


def test_hits_holding_the_top_share_lead_their_source() -> None:
    from layersearch.corpora.scope_places import Ranked, leading_hits

    def hits(source: str, n: int) -> list[Hit]:
        return [Hit(kind="vault", id=f"{source}{i}", score=0.0) for i in range(n)]

    ranked = {"vault": Ranked(hits=hits("v", 3)), "conversation": Ranked(hits=hits("c", 3))}
    shares = {
        "vault": (0.9, [0.5, 0.9, 0.3]),
        "conversation": (0.9, [0.6, 0.2, 0.4 + 0.3 + 0.2]),  # 0.9 summed another way
    }
    # the top share is the largest any hit holds; the hits holding it, of every source
    assert leading_hits(ranked, shares, 10) == {"v1", "c2"}
    assert leading_hits(ranked, shares, 2) == {"v1"}  # the cap: only the first two are read
    shares["conversation"] = (0.6, [0.6, 0.2, 0.4])
    assert leading_hits(ranked, shares, 10) == {"v1"}
    zero = {"vault": (0.0, [0.0, 0.0, 0.0]), "conversation": (0.0, [0.0, 0.0, 0.0])}
    assert leading_hits(ranked, zero, 10) == set()  # no word of the question anywhere
    assert leading_hits(ranked, {}, 10) == set()
