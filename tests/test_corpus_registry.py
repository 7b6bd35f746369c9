"""The corpus registry (``corpora.registry``): the built-in corpora (the conversation
summaries among them, searched only when named), and a corpus made here (a glossary of
three terms) that joins ``scope=all`` and ``inspect`` by one registration and leaves
with it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.corpora import registry
from layersearch.corpora.protocol import Corpus, Ranked, ScopeRun
from layersearch.corpora.scope_sources import summary_hit_id
from layersearch.errors import ConfigError, NotFound
from layersearch.ranking.analyzer import analyze, analyze_query
from layersearch.types import DocumentDetail, Hit, InspectResponse
from tests.support import MINI, ROOT, VAULT

SUMMARIES = ROOT / "fixtures" / "conversations" / "summaries.jsonl"

#: the glossary: slug → (title, text)
TERMS = {
    "aov": ("Average order value", "Average order value: net revenue divided by orders."),
    "churn": ("Churn", "Churn: customers who cancel their subscription in a month."),
    "gmv": ("Gross merchandise value", "Gross merchandise value: orders before refunds."),
}


class Glossary:
    """A corpus of the :class:`Corpus` protocol: terms ranked by how many of the
    question's analysed words their text holds."""

    source = "glossary"
    scope = "glossary"
    also: tuple[str, ...] = ()
    prefix = "glossary:"
    opened_by: str | None = None
    filters: tuple[str, ...] = ()
    what = "the glossary"
    tie = 9
    in_all = True

    def search(self, run: ScopeRun) -> Ranked:
        if run.question is None:
            return Ranked(warnings=["needs a question: the glossary not searched"])
        asked = set(analyze_query(run.question))
        held = {slug: len(asked & set(analyze(text))) for slug, (_t, text) in TERMS.items()}
        ranked = sorted((-n, slug) for slug, n in held.items() if n)
        hits = [
            Hit(
                kind="term",
                id=f"{self.prefix}{slug}",
                score=float(-n),
                description=TERMS[slug][0],
                source=self.source,
            )
            for n, slug in ranked[: run.depth]
        ]
        return Ranked(hits=hits)

    def documents(
        self, run: ScopeRun, hits: Sequence[Hit], asked: list[str]
    ) -> list[frozenset[str]]:
        return [frozenset(analyze(TERMS[h.id[len(self.prefix) :]][1])) for h in hits]

    def inspect(self, run: ScopeRun, ids: Sequence[str], out: InspectResponse) -> None:
        out.documents = out.documents or []
        for i in ids:
            slug = i.strip()[len(self.prefix) :]
            if slug not in TERMS:
                out.warnings.append(f"unknown glossary term {i!r}")
                continue
            title, text = TERMS[slug]
            out.documents.append(DocumentDetail(id=i, source=self.source, title=title, text=text))

    def ids(self, run: ScopeRun) -> Iterable[str]:
        return (f"{self.prefix}{slug}" for slug in TERMS)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Layersearch]:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        ls.vault.index(VAULT)
        yield ls


def test_the_built_in_corpora_in_their_orders() -> None:
    assert registry.scope_names() == ("semantic", "memory", "conversations", "vault", "summaries")
    assert registry.all_names() == ("semantic", "memory", "conversations", "vault")
    assert registry.source_order() == ("semantic", "memory", "vault", "conversation", "summary")
    assert registry.corpus_of_id("summary:0123abcd").source == "summary"
    assert registry.scoped_id("summary:0123abcd")
    assert registry.sources_of(["semantic"]) == ("semantic", "memory")
    assert registry.sources_of(["conversations", "vault"]) == ("vault", "conversation")
    assert registry.corpus_of_id("memory:3").source == "memory"
    assert registry.corpus_of_id("conversation:c#1-ab").source == "conversation"
    assert registry.corpus_of_id(" vault:Metrics/x").source == "vault"
    assert registry.corpus_of_id("shop.orders").source == "semantic"
    assert [registry.scoped_id(i) for i in ("memory:3", "shop", "vault:x")] == [
        False,
        False,
        True,
    ]


def test_a_registered_corpus_is_searched_by_scope_all_and_inspected(
    store: Layersearch,
) -> None:
    corpus: Corpus = Glossary()
    with registry.registered(corpus):
        resp = store.search(question="average order value of orders", scope="all")
        sources = {h.source for h in resp.results}
        assert "glossary" in sources and "semantic" in sources
        terms = [h for h in resp.results if h.source == "glossary"]
        assert terms[0].id == "glossary:aov" and terms[0].kind == "term"
        scores = [h.score for h in resp.results]
        assert scores == sorted(scores, reverse=True)
        # its own scope, alone
        alone = store.search(question="churn", scope="glossary")
        assert [h.id for h in alone.results] == ["glossary:churn"]
        # inspect opens its ids beside the others'; an unknown one is a warning
        out = store.inspect(["glossary:gmv", "shop.orders", "glossary:nope"])
        assert [d.title for d in out.documents or []] == ["Gross merchandise value"]
        assert [e.id for e in out.entities] == ["shop.orders"]
        assert out.warnings == ["unknown glossary term 'glossary:nope'"]
        assert store.scoped_ids(["glossary:gmv"])
        # a shortened id (as a table prints it) is resolved in its corpus
        assert store.inspect(["glossary:a…v"]).documents == [
            DocumentDetail(
                id="glossary:aov",
                source="glossary",
                title=TERMS["aov"][0],
                text=TERMS["aov"][1],
            )
        ]
        with pytest.raises(ConfigError, match="is registered"), registry.registered(Glossary()):
            pass
    # gone after the block
    with pytest.raises(ConfigError, match="unknown scope 'glossary'"):
        store.search(question="churn", scope="glossary")
    assert "glossary" not in {h.source for h in store.search(question="churn", scope="all").results}
    with pytest.raises(NotFound):
        store.inspect(["glossary:gmv"])


def test_summaries_are_a_corpus_searched_when_named(store: Layersearch) -> None:
    """``scope=summaries`` ranks the summaries as summary search does (full text alone
    without an embedder) and ``inspect`` opens their ids; ``scope=all`` leaves them out,
    as before they were registered."""
    question = "monthly recurring revenue"
    before = store.search(question=question, scope="all", explain=True)
    store.conversations.import_summaries(SUMMARIES)
    direct = store.conversations.search_summaries(question, limit=5, mode="fts")
    resp = store.search(question=question, scope="summaries", max_results=5)
    assert [h.id for h in resp.results] == [summary_hit_id(h.summary_id) for h in direct.hits]
    assert {(h.source, h.kind) for h in resp.results} == {("summary", "summary")}
    assert resp.results[0].conv_id == direct.hits[0].conversation_id
    # scope=all: the same list as before the summaries were imported
    after = store.search(question=question, scope="all", explain=True)
    assert after.model_dump() == before.model_dump()
    # fused with another named source, by the shares of the question they hold
    both = store.search(question=question, scope=["vault", "summaries"], max_results=10)
    assert {h.source for h in both.results} == {"vault", "summary"}
    scores = [h.score for h in both.results]
    assert scores == sorted(scores, reverse=True)
    # inspect, beside another corpus's id; an unknown one is a warning
    first = resp.results[0].id
    out = store.inspect([first, "summary:nope", "shop.orders"])
    assert [d.id for d in out.documents or []] == [first]
    assert (out.documents or [])[0].text.startswith(direct.hits[0].items[0][:40])
    assert out.warnings == ["unknown summary 'summary:nope'"]
    assert store.scoped_ids([first])
    # an id the summaries file gave (no ``summary:``) is opened under the prefix
    given = store.inspect(["summary:mrr-churn-timing"]).documents or []
    assert [d.id for d in given] == ["summary:mrr-churn-timing"]
    # and a shortened one (as a table prints it) is resolved among the summaries' ids
    assert [d.id for d in store.inspect(["summary:mrr…ming"]).documents or []] == [
        "summary:mrr-churn-timing"
    ]


def test_a_corpus_out_of_all_is_searched_only_when_named(store: Layersearch) -> None:
    corpus = Glossary()
    corpus.in_all = False
    with registry.registered(corpus):
        assert "glossary" not in {
            h.source for h in store.search(question="churn", scope="all").results
        }
        named = store.search(question="churn", scope=["glossary", "vault"])
        assert "glossary:churn" in [h.id for h in named.results]
