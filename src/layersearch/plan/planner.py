"""The query plan of a grouped question: which measure, grouped by what, over which join
path.

A question names a grouping with a few function words ("by state", "per month", "for
each store", "across regions"; the list ``ranking/words/grouping_words.txt``) that
split it into the measure part and one part per grouping. The choices are made by the
layer's own search, not by rules about words. A part is first read from the question's
own hits (the search already made, with the whole question as context): its candidates
are the leaves among them whose name or label holds every word of the part, in the
hits' order. Only a part no such leaf answers is searched on its own: the measure part
within the datasource of the question's best leaf (or the one asked for), each grouping
part within the measure's datasource. The measure is the best measure (else the best
leaf); on a layer that defines measures a column is not taken from the question's hits
for it. A grouping's dimension is its best column on a model the measure's model
reaches over joins. The join path is the shortest one over the layer's JOINS edges
(either direction), with its keys. A question that names no grouping gets no plan.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from layersearch.corpora.entities.corpus import EntityCorpus
from layersearch.plan.browse import join_info
from layersearch.ranking.analyzer import query_words, token_words
from layersearch.ranking.wordlists import word_pairs, word_set
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.types import Hit, JoinInfo, PlanItem, PlanTime, QueryPlan

#: the function words that introduce a grouping and the time grain words are data
#: (``ranking/words/grouping_words.txt``, ``time_grains.txt``), read on first use
#: the most join hops between the measure's model and a dimension's
MAX_HOPS = 4
#: the most grouping parts planned (each costs a search)
MAX_GROUPS = 3
#: how many of a part's hits are read for a choice
DEPTH = 10
_LEAVES = ("column", "measure", "aggregation")
_MEASURES = ("measure", "aggregation")
_TOKEN = re.compile(r"[\w'-]+", re.UNICODE)

#: ``search(text, datasource)`` → hits, best first (the entity search, without a plan)
Search = Callable[[str, str | None], Sequence[Hit]]


@dataclass
class Parts:
    """A question cut at its grouping words."""

    measure: str
    groups: list[str]
    grain: str | None
    grain_words: str


@cache
def _grains() -> Mapping[str, str]:
    """Time grain word → the grain it names."""
    return MappingProxyType(word_pairs("time_grains"))


def split_question(question: str) -> Parts | None:
    """The measure part, the grouping parts and the grain; None without a grouping.

    A grouping usually follows its measure ("revenue by store"); one that opens the
    question ("For each team, how many technicians are there?") runs to the first
    comma, and the measure follows it."""
    grouping, grains = word_set("grouping_words"), _grains()
    found = list(_TOKEN.finditer(question))
    tokens = [m.group() for m in found]
    lower = [t.lower() for t in tokens]
    cuts = [i for i, w in enumerate(lower) if w in grouping and i > 0]
    start = 0  # where the measure part begins: after a grouping clause that opens it
    if cuts and cuts[0] == 1:  # ("For each team, ...")
        comma = question.find(",", found[1].end())
        after = [i for i, m in enumerate(found) if comma >= 0 and m.start() > comma]
        if after and after[0] > 2:
            start = after[0]
            cuts = [c for c in cuts if c >= start]
    grain, grain_words = None, ""
    timing: set[int] = set()  # the grain phrase: the grain word and the word before it
    for i, w in enumerate(lower):
        if w in grains:
            grain = grains[w]
            grain_words = " ".join(tokens[max(0, i - 1) : i + 1])
            timing = {i, i - 1}
            break
    if not cuts and grain is None and not start:
        return None

    def words(a: int, b: int) -> str:
        """Tokens ``a`` to ``b``, less the grain phrase."""
        return " ".join(t for i, t in enumerate(tokens[a:b], a) if i not in timing)

    measure = words(start, cuts[0] if cuts else len(tokens))
    # the grouping parts: an opening clause's words, then those after each grouping word
    spans = [(2, start)] if start else []
    spans += [
        (c + 1, cuts[n + 1] if n + 1 < len(cuts) else len(tokens)) for n, c in enumerate(cuts)
    ]
    groups = [part for a, b in spans if (part := words(a, b))]
    if not measure.strip():
        return None
    return Parts(measure, groups, grain, grain_words)


class Planner:
    """Plans over one snapshot: ``search`` asks the layer, ``corpus`` gives the entities
    and joins."""

    def __init__(
        self,
        corpus: EntityCorpus,
        search: Search,
        ahead: Callable[[list[str]], None] | None = None,
    ) -> None:
        """``ahead``: told the texts of the parts about to be searched, before the first
        (a model starts embedding them)."""
        self.corpus = corpus
        self.search = search
        self.ahead = ahead
        self._incoming = _incoming_joins(corpus)
        self._first: list[Hit] = []

    def plan(
        self,
        question: str,
        datasource: str | None,
        *,
        explain: bool,
        first: Sequence[Hit] = (),
    ) -> QueryPlan | None:
        """``first``: the question's own hits, best first; a part is searched only when
        none of their leaves holds its words."""
        parts = split_question(question)
        if parts is None or (not parts.groups and parts.grain is None):
            return None
        self._first = [h for h in first if h.kind in _LEAVES][:DEPTH]
        held = self._holding(parts.measure)
        taken = any(h.kind in _MEASURES for h in held) or (
            bool(held) and not _has_measures(self.corpus)
        )
        if self.ahead is not None:
            groups = parts.groups[:MAX_GROUPS]
            searched = [g for g in groups if not any(h.kind == "column" for h in self._holding(g))]
            texts = ([] if taken else [parts.measure]) + searched
            if texts:
                self.ahead(texts)
        if taken:
            measure_hits = _then_the_rest(held, self._first)
        else:  # (a layer's measure is searched for, not a column taken)
            held = measure_hits = self._leaves(
                parts.measure, datasource or self._first_datasource()
            )
        measure = next((h for h in held[:5] if h.kind in _MEASURES), None)
        measure = measure or (held[0] if held else None)
        if measure is None:
            return None
        m_entity = self.corpus.entities[measure.id]
        home = f"{m_entity.datasource}.{m_entity.model}"
        warnings: list[str] = []
        dimensions: list[PlanItem] = []
        paths: dict[str, list[EdgeRecord]] = {home: []}
        for words in parts.groups[:MAX_GROUPS]:
            picked = self._dimension(words, m_entity.datasource, home, paths, explain)
            if picked is None:
                warnings.append(f"no column of {m_entity.datasource} matches '{words}'")
            else:
                dimensions.append(picked)
        for d in dimensions:
            model = d.id.rsplit(".", 1)[0]
            if model not in paths:
                warnings.append(f"no join path from {home} to {model} in the layer")
        models = list(dict.fromkeys([home, *(d.id.rsplit(".", 1)[0] for d in dimensions)]))
        joins = _path_joins([paths[m] for m in models if m in paths])
        others = [h.id for h in measure_hits if h.id != measure.id][:2]
        return QueryPlan(
            measures=[
                PlanItem(
                    id=measure.id, words=parts.measure, alternatives=others if explain else None
                )
            ],
            dimensions=dimensions,
            time=self._time(parts, m_entity, measure_hits),
            models=models,
            joins=joins,
            warnings=warnings or None,
        )

    # -- choices --------------------------------------------------------------------------------

    def _leaves(self, text: str, datasource: str | None) -> list[Hit]:
        return [h for h in self.search(text, datasource) if h.kind in _LEAVES][:DEPTH]

    def _holding(self, text: str, datasource: str | None = None) -> list[Hit]:
        """The leaves among the question's own hits whose name or label holds every word
        of ``text`` (``datasource``: of that one only), in their order: a part read from
        the search already made instead of a search of its own."""
        wanted = {stem for _, stem in query_words(text)}
        if not wanted:
            return []
        out = []
        for h in self._first:
            e = self.corpus.entities.get(h.id)
            if e is None or (datasource is not None and e.datasource != datasource):
                continue
            if wanted <= _own_words(e):
                out.append(h)
        return out

    def _first_datasource(self) -> str | None:
        """The datasource of the question's best leaf (the plan stays within it)."""
        e = self.corpus.entities.get(self._first[0].id) if self._first else None
        return e.datasource if e is not None else None

    def _dimension(
        self,
        words: str,
        datasource: str,
        home: str,
        paths: dict[str, list[EdgeRecord]],
        explain: bool,
    ) -> PlanItem | None:
        held = [h for h in self._holding(words, datasource) if h.kind == "column"]
        chosen = self._reachable(held, home, paths)
        if chosen is not None:
            ours = [h for h in self._first if h.id.startswith(f"{datasource}.")]
            columns = _then_the_rest(held, [h for h in ours if h.kind == "column"])
        else:
            columns = [h for h in self._leaves(words, datasource) if h.kind == "column"]
            if not columns:
                return None
            chosen = self._reachable(columns, home, paths) or columns[0]
        others = [h.id for h in columns if h.id != chosen.id][:2]
        return PlanItem(id=chosen.id, words=words, alternatives=others if explain else None)

    def _reachable(
        self, columns: list[Hit], home: str, paths: dict[str, list[EdgeRecord]]
    ) -> Hit | None:
        """The first of ``columns`` on a model ``home`` joins to (its path kept in
        ``paths``)."""
        for h in columns:
            model = h.id.rsplit(".", 1)[0]
            path = paths.get(model)
            if path is None:
                path = self._path(home, model)
                if path is not None:
                    paths[model] = path
            if path is not None:
                return h
        return None

    def _time(self, parts: Parts, measure: Entity, hits: list[Hit]) -> PlanTime | None:
        if parts.grain is None:
            return None
        model = f"{measure.datasource}.{measure.model}"
        dated = [
            e
            for edge in self.corpus.edges_out.get(model, [])
            if edge.type == "CONTAINS"
            and (e := self.corpus.entities.get(edge.dst)) is not None
            and e.kind == "column"
            and not e.hidden
            and any(t in (e.data_type or "").lower() for t in ("date", "time"))
        ]
        ranked = {h.id: i for i, h in enumerate(hits)}
        dated.sort(key=lambda e: (ranked.get(e.id, len(ranked)), e.id))
        return PlanTime(
            grain=parts.grain,  # type: ignore[arg-type]
            words=parts.grain_words,
            dimension=dated[0].id if dated else None,
        )

    # -- joins ----------------------------------------------------------------------------------

    def _neighbours(self, model: str) -> list[tuple[str, EdgeRecord]]:
        # (only the model's JOINS edges are decoded, not a CONTAINS edge per column)
        out = [(e.dst, e) for e in self.corpus.edges_out.of_type(model, "JOINS")]
        return out + [(e.src, e) for e in self._incoming.get(model, [])]

    def _path(self, start: str, goal: str) -> list[EdgeRecord] | None:
        """The shortest join path (edges in order) from ``start`` to ``goal``, or None."""
        if start == goal:
            return []
        seen: dict[str, list[EdgeRecord]] = {start: []}
        queue: deque[str] = deque([start])
        while queue:
            node = queue.popleft()
            if len(seen[node]) >= MAX_HOPS:
                continue
            for nxt, edge in self._neighbours(node):
                if nxt in seen:
                    continue
                seen[nxt] = [*seen[node], edge]
                if nxt == goal:
                    return seen[nxt]
                queue.append(nxt)
        return None


#: each snapshot's joins by target model (by the corpus object's id, dropped with it),
#: derived from its JOINS edges once per snapshot
_INCOMING: dict[int, dict[str, list[EdgeRecord]]] = {}
_INCOMING_LOCK = threading.Lock()


def _incoming_joins(corpus: EntityCorpus) -> dict[str, list[EdgeRecord]]:
    key = id(corpus)
    with _INCOMING_LOCK:
        found = _INCOMING.get(key)
    if found is None:
        found = {}
        for edge in corpus.edges_out.all_of_type("JOINS"):
            found.setdefault(edge.dst, []).append(edge)
        with _INCOMING_LOCK:
            if key not in _INCOMING:
                _INCOMING[key] = found
                weakref.finalize(corpus, _INCOMING.pop, key, None)
    return found


def _then_the_rest(held: list[Hit], hits: list[Hit]) -> list[Hit]:
    """``held``, then the other ``hits`` in their order (the runners-up an explanation
    lists and the order a time column is chosen by)."""
    ids = {h.id for h in held}
    return held + [h for h in hits if h.id not in ids]


def _has_measures(corpus: EntityCorpus) -> bool:
    """Whether the layer defines measures (or aggregations)."""
    tables = getattr(corpus.entities, "tables", None)
    kinds = tables.kinds if tables is not None else {e.kind for e in corpus.entities.values()}
    return any(k in _MEASURES for k in kinds)


def _own_words(e: Entity) -> set[str]:
    """The words (stems) of an entity's name and label."""
    return set(token_words(e.name)) | set(token_words(e.label))


def _path_joins(paths: list[list[EdgeRecord]]) -> list[JoinInfo]:
    """The joins of every path, each once, in path order."""
    seen: set[tuple[str, str]] = set()
    out: list[JoinInfo] = []
    for path in paths:
        for edge in path:
            key = (edge.src, edge.dst)
            if key not in seen:
                seen.add(key)
                out.append(join_info(edge))
    return out
