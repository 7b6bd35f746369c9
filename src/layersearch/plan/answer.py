"""What :meth:`Layersearch.search` adds to an answer after ranking: physical names on
full hits and the query plan of a grouped question. The ranked hits are not changed."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from layersearch.corpora.entities.corpus import EntityCorpus
from layersearch.corpora.entities.service import EntityService
from layersearch.plan import confidence, physical
from layersearch.plan.planner import Planner, split_question
from layersearch.recent import Recent
from layersearch.store.base import Store
from layersearch.types import Hit, SearchRequest, SearchResponse

#: how many hits a plan's searches read
PLAN_SEARCH_DEPTH = 30
#: a longer question is not planned (each grouping part costs a search)
MAX_PLAN_CHARS = 400
#: part searches kept per service, for the snapshot they were searched in
PART_SEARCHES_KEPT = 256
#: the ranking stages a part search runs without when no vector channel searches it:
#: the lexical learned orders were trained on whole questions, and over a part's few
#: words they chose no better grouping columns, for a fifth of a part search's time (a
#: dense search's column order chose better ones: it stays; docs/agent.md)
PART_LEXICAL_WITHOUT = frozenset({"learned-tables", "learned-columns"})


class PartSearches:
    """The hits of a plan's part searches, kept for the snapshot they were searched in.

    A part's hits depend only on its words, its datasource and the channels, and the
    snapshot (the store generation): grouping words recur across questions ("by
    month", "per region"), and each part search runs the whole entity pipeline. A new
    snapshot (any write) starts an empty cache."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._corpus: weakref.ref[EntityCorpus] | None = None
        self._hits: Recent[tuple[Any, ...], tuple[Hit, ...]] = Recent(PART_SEARCHES_KEPT)

    def get(self, corpus: EntityCorpus, key: tuple[Any, ...]) -> list[Hit] | None:
        with self._lock:
            if self._corpus is None or self._corpus() is not corpus:
                return None
            hits = self._hits.get(key)
            return None if hits is None else list(hits)

    def put(self, corpus: EntityCorpus, key: tuple[Any, ...], hits: list[Hit]) -> None:
        with self._lock:
            if self._corpus is None or self._corpus() is not corpus:
                self._corpus = weakref.ref(corpus)
                self._hits.clear()
            self._hits.put(key, tuple(hits))


#: one cache per entity service (a store opened), dropped with it
_PARTS: weakref.WeakKeyDictionary[EntityService, PartSearches] = weakref.WeakKeyDictionary()
_PARTS_LOCK = threading.Lock()


def part_searches(entities: EntityService) -> PartSearches:
    """The part-search cache of ``entities``."""
    with _PARTS_LOCK:
        kept = _PARTS.get(entities)
        if kept is None:
            kept = _PARTS[entities] = PartSearches()
        return kept


def _reaches_the_layer(request: SearchRequest) -> bool:
    scope = request.scope
    if scope is None:
        return True
    named = [scope] if isinstance(scope, str) else list(scope)
    return any(s in ("semantic", "all") for s in named)


def _plans(request: SearchRequest) -> bool:
    """Whether a request's question names a grouping or a grain (then it is planned)."""
    question = request.question
    if not question or len(question) > MAX_PLAN_CHARS or not _reaches_the_layer(request):
        return False
    parts = split_question(question)
    return parts is not None and bool(parts.groups or parts.grain)


def explained(request: Any) -> Any:
    """``request`` asking for its channels' explanations (no stage tracing) when it has
    a question and its full-text and schema channels run: what the weak-match check
    reads, :data:`confidence.DEPTH` deep whatever ``max_results`` is (``finish`` cuts
    the list back). Anything else as it is, for the search to check."""
    if not (isinstance(request, SearchRequest) and request.question):
        return request
    if not _fulltext_runs(request):
        return request
    if request.max_results < 1:  # for the search to refuse
        return request
    deeper = max(request.max_results, confidence.DEPTH)
    if request.explain:  # every hit explained already
        return request.model_copy(update={"max_results": deeper})
    asked = request.model_copy(update={"explain": True, "max_results": deeper})
    asked._channels_only = True
    asked._explain_entities = confidence.TOP  # the hits the check reads
    return asked


def _judged(request: SearchRequest) -> bool:
    """Whether the weak-match check reads this request's answer: an unscoped question
    whose full-text and schema channels ran (the signals are their matches, read
    :data:`confidence.DEPTH` deep as :func:`explained` asks)."""
    return request.scope is None and bool(request.question) and _fulltext_runs(request)


def _fulltext_runs(request: SearchRequest) -> bool:
    """Whether the request's channels include full text (and so the schema channel)."""
    return request.channels is None or "fulltext" in request.channels


def _has_explanations(resp: SearchResponse) -> bool:
    lists = (resp.results, resp.entities, resp.memories, resp.example_queries)
    return any(h.explanation for hits in lists for h in hits or [])


def _drop_explanations(resp: SearchResponse) -> None:
    for hits in (resp.results, resp.entities, resp.memories, resp.example_queries):
        for h in hits or []:
            h.explanation = None
            h.stages = None


def finish(
    store: Store, entities: EntityService, request: SearchRequest, resp: SearchResponse
) -> SearchResponse:
    """``resp`` with physical names (compact=false) and, for a question that names a
    grouping, its plan."""
    if _judged(request) and _has_explanations(resp):
        # (without the explanations :func:`explained` asks for there is nothing to read)
        match = confidence.measure(request.question or "", resp.results)
        if match is not None and match.weak:
            resp.weak_match = True
            resp.warnings.append(confidence.warning(match))
        if not request.explain:
            _drop_explanations(resp)
    if request.scope is None:
        # (the check searched deeper than asked: the first hits are the asked list)
        del resp.results[request.max_results :]
    if not request.compact:
        physical.attach_to_hits(store, resp)
    if request.question and _plans(request):
        corpus = entities.corpus()
        kept = part_searches(entities)

        def search(text: str, datasource: str | None) -> list[Hit]:
            key = (text, datasource, tuple(request.channels or ()))
            found = kept.get(corpus, key)
            if found is not None:
                return found
            sub = entities.request(
                question=text,
                datasource=datasource,
                max_results=PLAN_SEARCH_DEPTH,
                channels=request.channels,
            )
            sub._entities_only = True  # (the plan reads entities only)
            sub._lexical_without = PART_LEXICAL_WITHOUT
            hits = entities.search(sub).results
            kept.put(corpus, key, hits)
            return hits

        def ahead(texts: list[str]) -> None:
            if request.channels is None or "vector" in request.channels:
                entities.vectors.prefetch(texts)

        if corpus.datasources:
            planner = Planner(corpus, search, ahead)
            resp.plan = planner.plan(
                request.question, request.datasource, explain=request.explain, first=resp.results
            )
    return resp
