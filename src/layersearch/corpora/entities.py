"""The semantic layer + memories corpus: ranking documents, channels, hit rendering.

It turns entities and memories into ranking documents (tantivy fields and
entity-tag lists), runs the channels a request asks for, fuses them with RRF,
and renders hits in the search contract's compact or full form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from layersearch.errors import ConfigError, LimitExceeded
from layersearch.ranking.bm25 import EntityOverlapIndex
from layersearch.ranking.coverage import CoverageIndex, CoverageNode, links_from_edges
from layersearch.ranking.explain import explain
from layersearch.ranking.fulltext import FTDoc, FullTextIndex
from layersearch.ranking.fusion import Fused, rrf
from layersearch.semantic.canonical import Resolver, in_scope
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.types import CHANNELS, ChannelScore, Hit, Memory, SearchRequest, SearchResponse

__all__ = [
    "ENTITY_BOOSTS",
    "MAX_RESULTS_LIMIT",
    "MAX_QUESTION_CHARS",
    "CHANNEL_DEPTH",
    "EntityCorpus",
    "entity_doc",
    "memory_doc",
]

#: Field boosts for channel 2. A name match is the strongest evidence that an
#: entity is meant; labels are curated names; the parent (model / datasource
#: name) and sample values give context; formulas are code, weakest.
ENTITY_BOOSTS: dict[str, float] = {
    "name": 3.0,
    "label": 2.0,
    "parent": 1.0,
    "description": 1.0,
    "values": 1.0,
    "formula": 0.7,
    "text": 1.5,
    "tags": 0.7,
}
MAX_RESULTS_LIMIT = 100
#: Every channel ranks this deep whatever max_results is, so that the results
#: for n are a prefix of those for n+k.
CHANNEL_DEPTH = MAX_RESULTS_LIMIT
MAX_QUESTION_CHARS = 100_000
SHORT_DESCRIPTION = 160


def entity_doc(e: Entity) -> FTDoc:
    parent = e.model if e.kind in ("column", "measure", "aggregation") else e.datasource
    if e.kind == "datasource":
        parent = None
    return FTDoc(
        id=e.id,
        kind=e.kind,
        scopes=(e.datasource,),
        fields={
            "name": e.name,
            "label": e.label,
            "parent": parent,
            "description": e.description,
            "formula": e.formula,
            "values": " ".join(e.values) if e.values else None,
        },
    )


def memory_doc(m: Memory) -> FTDoc:
    scopes = sorted({t.split(".", 1)[0] for t in m.entities if not t.startswith("memory:")})
    tags = " ".join(t.rsplit(".", 1)[-1] for t in m.entities)
    query_text = json.dumps(m.query, sort_keys=True) if m.query else None
    return FTDoc(
        id=m.id,
        kind="memory",
        scopes=scopes,
        fields={
            "text": m.learning,
            "description": " ".join(x for x in (m.description, query_text) if x) or None,
            "tags": tags or None,
        },
    )


def _short(text: str | None, limit: int = SHORT_DESCRIPTION) -> str:
    if not text:
        return ""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


def describe_entity(e: Entity) -> str:
    head = e.label if e.label and e.label.lower() != e.name.lower() else ""
    typ = f"[{e.data_type}]" if e.data_type else ""
    parts = [p for p in (head, typ, _short(e.description, 120)) if p]
    if e.formula and e.kind in ("measure", "aggregation"):
        parts.append(f"= {_short(e.formula, 60)}")
    return _short(" ".join(parts))


def render_entity(e: Entity, edges_out: Sequence[EdgeRecord], memories: Sequence[str]) -> str:
    lines = [f"{e.kind} {e.id}"]
    if e.label:
        lines.append(f"label: {e.label}")
    if e.data_type:
        lines.append(f"type: {e.data_type}")
    if e.primary_key:
        lines.append("primary key")
    if e.description:
        lines.append(f"description: {e.description}")
    if e.formula:
        lines.append(f"formula: {e.formula}")
    if e.values:
        lines.append("values: " + ", ".join(e.values[:20]))
    for edge in edges_out:
        if edge.type == "JOINS":
            on = ", ".join(
                f"{a} = {b}"
                for a, b in zip(
                    edge.props.get("source_columns") or [],
                    edge.props.get("target_columns") or [],
                    strict=False,
                )
            )
            card = edge.props.get("cardinality") or "unknown cardinality"
            lines.append(f"joins {edge.dst} ({card}){' on ' + on if on else ''}")
        elif edge.type == "REFERENCES":
            lines.append(f"references {edge.dst}")
    if memories:
        lines.append("memories: " + ", ".join(memories))
    return "\n".join(lines)


def render_memory(m: Memory) -> str:
    lines = [f"memory {m.id} ({m.created_at.isoformat()})", m.learning]
    if m.description:
        lines.append(f"description: {m.description}")
    if m.entities:
        lines.append("entities: " + ", ".join(m.entities))
    if m.query:
        lines.append("query: " + json.dumps(m.query, sort_keys=True))
    return "\n".join(lines)


def describe_memory(m: Memory) -> str:
    # A short description is a heading ("Example query"), not a summary: keep the note with it.
    if m.description and len(m.description) <= 40:
        return _short(f"{m.description}: {m.learning}")
    return _short(m.description or m.learning)


@dataclass
class EntityCorpus:
    """A snapshot of the semantic layer and memories, with their search channels."""

    entities: dict[str, Entity]
    memories: dict[str, Memory]
    edges_out: dict[str, list[EdgeRecord]]
    datasources: list[str]
    fulltext: FullTextIndex
    resolver: Resolver = field(init=False)
    _overlap: dict[tuple[str | None, frozenset[str] | None], EntityOverlapIndex] = field(
        default_factory=dict, init=False
    )

    def __post_init__(self) -> None:
        self.resolver = Resolver(self.entities.values(), self.memories.__contains__)
        self._mentions: dict[str, list[str]] | None = None
        self._coverage: CoverageIndex | None = None

    def coverage(self) -> CoverageIndex:
        """The schema channel's index over visible entities, built on first use."""
        if self._coverage is None:
            self._coverage = build_coverage(self.entities, self.edges_out)
        return self._coverage

    # -- incremental updates -------------------------------------------------------------------

    def memory_added(self, m: Memory) -> None:
        self.memories[m.id] = m
        self._overlap.clear()
        self._mentions = None

    def memory_removed(self, memory_id: str) -> None:
        self.memories.pop(memory_id, None)
        self._overlap.clear()
        self._mentions = None

    # -- lookups --------------------------------------------------------------------------------

    def visible(self, entity_id: str) -> bool:
        if entity_id in self.memories:
            return True
        e = self.entities.get(entity_id)
        return e is not None and not e.hidden

    def mentions(self, entity_id: str) -> list[str]:
        if self._mentions is None:
            index: dict[str, list[str]] = {}
            for m in self.memories.values():
                for t in m.entities:
                    index.setdefault(t, []).append(m.id)
            self._mentions = index
        return self._mentions.get(entity_id, [])

    def scope_ids(self, datasource: str) -> set[str]:
        """Visible entity ids under a datasource, and the memories in its scope."""
        out = {i for i, e in self.entities.items() if not e.hidden and in_scope(i, datasource)}
        out.update(m.id for m in self.memories.values() if datasource in self.memory_scopes(m))
        return out

    def memory_scopes(self, m: Memory) -> set[str]:
        return {t.split(".", 1)[0] for t in m.entities if not t.startswith("memory:")}

    def _overlap_index(
        self, datasource: str | None, allow: frozenset[str] | None
    ) -> EntityOverlapIndex:
        key = (datasource, allow)
        idx = self._overlap.get(key)
        if idx is None:
            docs = [
                (m.id, m.entities)
                for m in sorted(self.memories.values(), key=lambda m: _memory_order(m.id))
                if (datasource is None or datasource in self.memory_scopes(m))
                and (allow is None or m.id in allow)
            ]
            idx = EntityOverlapIndex(docs)
            if len(self._overlap) > 16:
                self._overlap.clear()
            self._overlap[key] = idx
        return idx

    # -- search --------------------------------------------------------------------------------

    def check_request(self, req: SearchRequest) -> list[str]:
        if req.max_results < 1 or req.max_results > MAX_RESULTS_LIMIT:
            raise ConfigError(
                f"max_results must be between 1 and {MAX_RESULTS_LIMIT}, got {req.max_results}"
            )
        if req.question is not None and len(req.question) > MAX_QUESTION_CHARS:
            raise LimitExceeded(
                f"question is {len(req.question)} characters; the limit is {MAX_QUESTION_CHARS} "
                "(shorten it: search needs the gist, not the document)"
            )
        if req.datasource is not None and req.datasource not in self.datasources:
            known = ", ".join(self.datasources) or "none loaded: run `layersearch load PATH`"
            raise ConfigError(f"unknown datasource '{req.datasource}'; known datasources: {known}")
        channels = list(CHANNELS) if req.channels is None else list(req.channels)
        bad = [c for c in channels if c not in CHANNELS]
        if not channels:
            raise ConfigError(f"channels is empty; name at least one of {', '.join(CHANNELS)}")
        if bad:
            raise ConfigError(
                f"unknown channel(s) {', '.join(map(repr, bad))}; valid channels: {', '.join(CHANNELS)}"
            )
        return channels

    def search(
        self,
        req: SearchRequest,
        *,
        allow: Collection[str] | None = None,
        vector: Callable[[str, int, str | None, Collection[str] | None], list[tuple[str, float]]]
        | None = None,
        warnings: list[str] | None = None,
    ) -> SearchResponse:
        channels = self.check_request(req)
        warnings = list(warnings or [])
        allow_set = frozenset(allow) if allow is not None else None
        ds = req.datasource

        def admitted(doc_id: str) -> bool:
            if allow_set is not None and doc_id not in allow_set:
                return False
            if ds is None:
                return True
            m = self.memories.get(doc_id)
            if m is not None:
                return ds in self.memory_scopes(m)
            return in_scope(doc_id, ds)

        rankings: dict[str, list[tuple[str, float]]] = {}
        res = self.resolver.resolve(req.entities, req.query, ds)
        warnings.extend(res.warnings)
        question = req.question if req.question and req.question.strip() else None
        if res.ids:
            named = [(i, 1.0) for i in res.ids if admitted(i)]
            if named:
                rankings["input"] = named
            if "bm25" in channels:
                idx = self._overlap_index(ds, allow_set if allow_set is not None else None)
                hits = idx.search(res.ids, CHANNEL_DEPTH)
                if hits:
                    rankings["bm25"] = hits
        if question is not None:
            if "fulltext" in channels:
                hits = self.fulltext.search(
                    question,
                    CHANNEL_DEPTH,
                    scopes=[ds] if ds is not None else None,
                    ids=allow_set,
                )
                # The index on disk may already hold a document another process added after
                # this snapshot was taken: it is answered by the next snapshot, not half now.
                hits = [h for h in hits if h[0] in self.memories or h[0] in self.entities]
                if not hits and not self._has_words(question):
                    warnings.append(
                        "question has no searchable words (only stop words or punctuation)"
                    )
                # Rankings are prefixes of deeper ones: the over-fetch only pays when a filter
                # may drop hits.
                depth = CHANNEL_DEPTH if ds is None and allow_set is None else CHANNEL_DEPTH * 2
                schema = [
                    h for h in self.coverage().search(question, depth, scope=ds) if admitted(h[0])
                ][:CHANNEL_DEPTH]
                if schema:
                    rankings["schema"] = schema
                if hits:
                    rankings["fulltext"] = hits
            if "vector" in channels and vector is not None:
                hits = [h for h in vector(question, CHANNEL_DEPTH, ds, allow_set) if admitted(h[0])]
                hits = [h for h in dense_in_context(hits, self.entities) if admitted(h[0])]
                if hits:
                    rankings["vector"] = hits
        no_input = not req.entities and not req.query and question is None
        if no_input:
            warnings.append("no entities, query or question given: showing the newest memories")
            newest = sorted(
                (m for m in self.memories.values() if admitted(m.id)),
                key=lambda m: (m.created_at, _memory_order(m.id)),
                reverse=True,
            )
            rankings["recent"] = [(m.id, 0.0) for m in newest[:CHANNEL_DEPTH]]
        fused = rrf(rankings)
        if "schema" in rankings:
            fused = self._schema_supersedes_fulltext(fused)
        fused = fused[: req.max_results]
        if not fused and not no_input:
            warnings.append(
                "no results: nothing matched"
                + (f" in datasource '{ds}'" if ds else "")
                + (" within the filter" if allow_set is not None else "")
            )
        results = [
            self.hit(
                f.id, f.score, compact=req.compact, explanation=explain(f) if req.explain else None
            )
            for f in fused
        ]
        return SearchResponse(results=results, warnings=warnings)

    def _schema_ranked(self, doc_id: str) -> bool:
        e = self.entities.get(doc_id)
        return e is not None and e.kind in _SCHEMA_KINDS

    def _schema_supersedes_fulltext(self, fused: list[Fused]) -> list[Fused]:
        """Drop full text's vote on tables and leaves once the schema channel ranked them.

        The schema channel scores those same words with their table and database
        context; counting their per-entity full-text ranks as well would count the
        words twice and let isolated matches from unrelated databases back in.
        Memories and datasources keep their full-text rank as it was (among all
        documents), so moving entities out does not promote them.
        """
        out = []
        for f in fused:
            if "fulltext" in f.channels and self._schema_ranked(f.id):
                del f.channels["fulltext"]
                if not f.channels:
                    continue
                f.score = sum(c[2] for c in f.channels.values())
                f.best_rank = min(c[0] for c in f.channels.values())
            out.append(f)
        out.sort(key=lambda f: (-f.score, f.best_rank, f.id))
        return out

    @staticmethod
    @lru_cache(maxsize=1024)
    def _has_words(text: str) -> bool:
        from layersearch.ranking.analyzer import analyze_query

        return bool(analyze_query(text))

    def hit(
        self,
        doc_id: str,
        score: float,
        *,
        compact: bool,
        explanation: list[ChannelScore] | None = None,
    ) -> Hit:
        m = self.memories.get(doc_id)
        if m is not None:
            return Hit(
                kind="memory",
                id=m.id,
                score=round(score, 6),
                description=describe_memory(m),
                text=None if compact else render_memory(m),
                explanation=explanation,
            )
        e = self.entities[doc_id]
        return Hit(
            kind=e.kind,  # type: ignore[arg-type]
            id=e.id,
            score=round(score, 6),
            description=describe_entity(e),
            text=None
            if compact
            else render_entity(e, self.edges_out.get(e.id, []), self.mentions(e.id)),
            explanation=explanation,
        )

    def documents(self) -> Iterable[FTDoc]:
        for e in self.entities.values():
            if not e.hidden:
                yield entity_doc(e)
        for m in self.memories.values():
            yield memory_doc(m)


_SCHEMA_KINDS = frozenset({"model", "column", "measure", "aggregation"})
_LEAF_KINDS = frozenset({"column", "measure", "aggregation"})
_COVERAGE_LEVEL = {
    "datasource": "group",
    "model": "table",
    "column": "leaf",
    "measure": "leaf",
    "aggregation": "leaf",
}


def dense_in_context(
    hits: Sequence[tuple[str, float]], entities: Mapping[str, Entity]
) -> list[tuple[str, float]]:
    """The vector ranking with tables and leaves scored in their table's context.

    A table's own embedding (its name and description) is one short text; a
    question usually describes it through its columns. As the schema channel
    aggregates words up to tables, a table's dense score is the highest cosine
    among itself and its ranked leaves, and a table ranked only through a leaf
    joins the list (just below that leaf). A leaf's score is the mean of its own
    cosine and its table's, so the columns of a table that matches as a whole
    come before an isolated look-alike column elsewhere. Memories and
    datasources keep their cosine. Scores stay cosines (averages of them), so a
    hit's vector score still reads as a similarity.
    """
    best: dict[str, float] = {}
    for doc_id, score in hits:
        table = _table_of(entities.get(doc_id), entities)
        if table is not None and score > best.get(table, -math.inf):
            best[table] = score
    out = dict(hits)
    for doc_id, score in hits:
        e = entities.get(doc_id)
        if e is not None and e.kind in _LEAF_KINDS and e.parent in best:
            out[doc_id] = (score + best[e.parent]) / 2
    out.update(best)
    # on equal scores the leaf (the specific evidence) before the table it lifted, then ids
    return sorted(out.items(), key=lambda h: (-h[1], h[0] in best, h[0]))


def _table_of(e: Entity | None, entities: Mapping[str, Entity]) -> str | None:
    """The visible model a schema entity belongs to (itself for a model)."""
    if e is None or e.kind not in _SCHEMA_KINDS:
        return None
    table = e.id if e.kind == "model" else e.parent
    t = entities.get(table) if table is not None else None
    return table if t is not None and t.kind == "model" and not t.hidden else None


def build_coverage(
    entities: Mapping[str, Entity], edges_out: Mapping[str, Sequence[EdgeRecord]]
) -> CoverageIndex:
    """Coverage nodes for every visible entity, linked along joins (foreign keys)."""
    nodes = []
    for e in sorted(entities.values(), key=lambda e: e.id):
        if e.hidden:
            continue
        doc = entity_doc(e)
        fields = {k: v for k, v in doc.fields.items() if k != "parent"}
        parent = None if e.kind == "datasource" else e.id.rsplit(".", 1)[0]
        nodes.append(CoverageNode(e.id, _COVERAGE_LEVEL[e.kind], parent, fields))
    joins = [
        (edge.src, edge.dst)
        for out in edges_out.values()
        for edge in out
        if edge.type == "JOINS"
        and not _hidden(entities, edge.src)
        and not _hidden(entities, edge.dst)
    ]
    keys = {e.id for e in entities.values() if e.primary_key and not e.hidden}
    for out in edges_out.values():
        for edge in out:
            if edge.type == "JOINS":
                keys.update(f"{edge.src}.{c}" for c in edge.props.get("source_columns") or [])
                keys.update(f"{edge.dst}.{c}" for c in edge.props.get("target_columns") or [])
    return CoverageIndex(nodes, ENTITY_BOOSTS, links_from_edges(joins), keys)


def _hidden(entities: Mapping[str, Entity], entity_id: str) -> bool:
    e = entities.get(entity_id)
    return e is None or e.hidden


def _memory_order(memory_id: str) -> int:
    try:
        return int(memory_id.split(":", 1)[1])
    except (IndexError, ValueError):
        return 0


def visible_tags(tags: Iterable[str], entities: Mapping[str, Entity]) -> list[str]:
    return [t for t in tags if t in entities and not entities[t].hidden]
