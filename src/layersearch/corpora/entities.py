"""The semantic layer + memories corpus: ranking documents, channels, hit rendering.

It turns entities and memories into ranking documents (tantivy fields and
entity-tag lists), runs the channels a request asks for, fuses them with RRF,
and renders hits in the search contract's compact or full form.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain

import numpy as np

from layersearch.corpora.snapshot import CoverageBuild, EdgeMap, EntityMap, Snapshot
from layersearch.errors import ConfigError, LimitExceeded
from layersearch.ranking.bm25 import EntityOverlapIndex
from layersearch.ranking.coverage import CoverageIndex, CoverageNode, links_from_edges
from layersearch.ranking.explain import explain
from layersearch.ranking.fulltext import FTDoc, FullTextIndex
from layersearch.ranking.fusion import Fused, FusedList, evidence_weights, fuse
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
#: Channels whose vote on a table is its rank among tables, and on a leaf its rank
#: among leaves. The vector ranking scores tables by their best leaf (see
#: dense_in_context), so it is a table ranking and a leaf ranking interleaved; a
#: table's position among all of them would count its own leaves (and every other
#: table's) against it a second time.
RANK_BY_LEVEL = frozenset({"vector"})
#: Channels weighed by their evidence in fusion (``ranking.fusion.evidence_weights``):
#: the two that rank the schema from the question. Their weights are read on their
#: table rankings (the level both rank) and average 1, so equally separated lists fuse
#: as plain RRF; every other channel keeps weight 1. Empty: plain RRF.
EVIDENCE_CHANNELS: tuple[str, ...] = ("schema", "vector")
#: Whether the schema channel leads question words the catalog does not use to words it
#: does (abbreviations in identifiers, WordNet synonyms when installed; ranking.bridges).
VOCABULARY_BRIDGES = True
#: Per-datasource schema indexes kept (oldest built dropped first).
SCOPED_INDEXES = 256
SHORT_DESCRIPTION = 160


#: The vector channel a search is handed: (question, k, datasource, allowed ids,
#: memories) → ranked ids; ``memories`` asks for memories only, else entities only.
VectorChannel = Callable[
    [str, int, str | None, Collection[str] | None, bool], list[tuple[str, float]]
]
#: Entities whose memories the ``tags`` channel ranks: the entity list this deep.
TAG_DEPTH = CHANNEL_DEPTH
#: A memory that only ``tags`` ranks (and perhaps dense retrieval) is merged into
#: ``results`` when one of its own tags (not their tables) is among this many first
#: entities: the entities an agent sees. A fixed depth, so that results for n stay a
#: prefix of those for n+k.
MERGE_TAG_DEPTH = 10
#: Memory channels that match the request itself: named ids, tags overlapping the named
#: entities, the question's words in the memory's text, the newest (no input).
_DIRECT_MEMORY_CHANNELS = frozenset({"input", "bm25", "fulltext", "recent"})
_ENTITY_KINDS = ("aggregation", "column", "datasource", "measure", "model")


def entity_doc(e: Entity, id_hash: int | None = None) -> FTDoc:
    """The full-text document of ``e``; ``id_hash``: its id's key hash, when known."""
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
        id_hash=id_hash,
    )


def memory_doc(m: Memory) -> FTDoc:
    scopes = sorted({t.split(".", 1)[0] for t in m.entities if not t.startswith("memory:")})
    tags = " ".join(t.rsplit(".", 1)[-1] for t in m.entities)
    return FTDoc(
        id=m.id,
        kind="memory",
        scopes=scopes,
        fields={
            "text": m.learning,
            "description": m.description,
            # an example query is code, as a measure's formula is: its weakest field
            "formula": one_line_query(m.query) if m.query else None,
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


#: A memory hit's description: its learning up to this many characters (whole words),
#: and for an example query the query's one-line form, at most as long again.
MEMORY_DESCRIPTION = 300


def describe_memory(m: Memory) -> str:
    """What an agent reads of a memory hit: its learning (the first 300 characters, on a
    word boundary) and, for an example query, the query on one line."""
    text = _words(m.learning, MEMORY_DESCRIPTION)
    if m.query:
        text += " | query: " + _words(one_line_query(m.query), MEMORY_DESCRIPTION)
    return text


def one_line_query(query: Mapping[str, object]) -> str:
    """An example query on one line: its SQL alone when that is all it holds, else its
    JSON (keys sorted, no spaces after separators)."""
    if set(query) == {"sql"} and isinstance(query["sql"], str):
        return " ".join(query["sql"].split())
    return json.dumps(
        _one_line_strings(query), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )


def _one_line_strings(value: object) -> object:
    """``value`` with the white space of its strings folded (a query is depth-checked)."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        return {k: _one_line_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_one_line_strings(v) for v in value]
    return value


def _words(text: str, limit: int) -> str:
    """``text`` on one line, cut at the last word boundary within ``limit`` characters."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    cut = one[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


@dataclass
class EntityCorpus:
    """A snapshot of the semantic layer and memories, with their search channels.

    ``entities`` and ``edges_out`` are mappings; built from a persisted
    :class:`~layersearch.corpora.snapshot.Snapshot` they decode entries on access, so
    nothing here should iterate them on a search path.
    """

    entities: Mapping[str, Entity]
    memories: dict[str, Memory]
    edges_out: Mapping[str, Sequence[EdgeRecord]]
    datasources: list[str]
    fulltext: FullTextIndex
    snapshot: Snapshot | None = None
    resolver: Resolver = field(init=False)
    _overlap: dict[tuple[str | None, frozenset[str] | None], EntityOverlapIndex] = field(
        default_factory=dict, init=False
    )

    def __post_init__(self) -> None:
        if self.snapshot is not None:
            self.resolver = self.snapshot.resolver(self.memories.__contains__)
        else:
            self.resolver = Resolver(self.entities.values(), self.memories.__contains__)
        self._mentions: dict[str, list[str]] | None = None
        self._coverage: CoverageIndex | None = None
        self._scoped: dict[str, CoverageIndex] = {}
        self._by_datasource: dict[str, dict[str, Entity]] | None = None
        self._tags: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None

    @classmethod
    def from_snapshot(
        cls, snapshot: Snapshot, memories: dict[str, Memory], fulltext: FullTextIndex
    ) -> EntityCorpus:
        return cls(
            snapshot.entities,
            memories,
            snapshot.edges_out,
            snapshot.datasources,
            fulltext,
            snapshot=snapshot,
        )

    def ensure_coverage(
        self, objects: Sequence[Entity] | None = None, prebuilt: CoverageBuild | None = None
    ) -> None:
        """Build (or read back) the catalog-wide schema index now, and persist it with the
        snapshot. ``objects``: the same entities as this snapshot's, already decoded (a
        load has them), so that building reads no row twice; ``prebuilt``: a process
        building it from those rows (taken instead of building here when it succeeds).

        A snapshot is published with its schema index: otherwise the first search after
        a load, often in another process (``layersearch load`` then ``search``), would
        build it (seconds at 100k entities) instead of reading it back."""

        def build() -> CoverageIndex:
            source = self.entities if objects is None else {e.id: e for e in objects}
            return build_coverage(source, self.edges_out)

        if self.snapshot is not None:
            self._coverage = self.snapshot.coverage(build, prebuilt)
        else:
            self._coverage = build()

    def coverage(self, datasource: str | None = None) -> CoverageIndex:
        """The schema channel's index over visible entities, built (or read back) on first use.

        With a datasource, the index of that datasource alone: a search scoped
        to one database takes its term statistics (idf, average lengths) from
        that database, the collection it searches. Catalog-wide, ``car`` is a
        rare, telling word; inside a car database it is on every other table
        and tells them apart no better than ``the``.
        """
        if datasource is None:
            if self._coverage is None:
                self.ensure_coverage()
            assert self._coverage is not None
            return self._coverage
        idx = self._scoped.get(datasource)
        if idx is None:
            ents = self._entities_in(datasource)
            edges = {k: self.edges_out[k] for k in ents if k in self.edges_out}
            if len(self._scoped) >= SCOPED_INDEXES:
                self._scoped.pop(next(iter(self._scoped)))
            # The bridges come from the catalog-wide index (no second reading of WordNet).
            wide = self.coverage() if VOCABULARY_BRIDGES else None
            idx = self._scoped[datasource] = build_coverage(ents, edges, bridges_from=wide)
        return idx

    def _entities_in(self, datasource: str) -> dict[str, Entity]:
        """The visible entities of one datasource (decoding only those from a snapshot)."""
        if isinstance(self.entities, EntityMap):
            return {i: self.entities[i] for i in self.entities.visible_in_scope(datasource)}
        if self._by_datasource is None:
            by: dict[str, dict[str, Entity]] = {}
            for e in self.entities.values():
                by.setdefault(e.datasource, {})[e.id] = e
            self._by_datasource = by
        return self._by_datasource.get(datasource, {})

    def edges(self) -> list[EdgeRecord]:
        """Every edge, ordered by type, source, target."""
        if isinstance(self.edges_out, EdgeMap):
            return self.edges_out.all()
        out = [e for es in self.edges_out.values() for e in es]
        out.sort(key=lambda e: (e.type, e.src, e.dst))
        return out

    # -- incremental updates -------------------------------------------------------------------

    def memory_added(self, m: Memory) -> None:
        self.memories[m.id] = m
        self._overlap.clear()
        self._mentions = None
        self._tags = None

    def memory_removed(self, memory_id: str) -> None:
        self.memories.pop(memory_id, None)
        self._overlap.clear()
        self._mentions = None
        self._tags = None

    # -- lookups --------------------------------------------------------------------------------

    def visible(self, entity_id: str) -> bool:
        if entity_id in self.memories:
            return True
        if isinstance(self.entities, EntityMap):
            return self.entities.is_visible(entity_id)
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
        if isinstance(self.entities, EntityMap):
            out = set(self.entities.visible_in_scope(datasource))
        else:
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
        caps = ("max_results", "max_entities", "max_memories", "max_example_queries")
        for name in caps:
            value = getattr(req, name)
            if value is not None and (value < 1 or value > MAX_RESULTS_LIMIT):
                raise ConfigError(f"{name} must be between 1 and {MAX_RESULTS_LIMIT}, got {value}")
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
        vector: VectorChannel | None = None,
        warnings: list[str] | None = None,
    ) -> SearchResponse:
        """Entities and memories ranked in their own lists, then merged (see
        :func:`merge_kinds`); the buckets a request sizes come from the same two lists."""
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

        ranks = _Rankings(self)
        res = self.resolver.resolve(req.entities, req.query, ds)
        warnings.extend(res.warnings)
        question = req.question if req.question and req.question.strip() else None
        if res.ids:
            named = [(i, 1.0) for i in res.ids if admitted(i)]
            ranks.put_mixed("input", named)
            if "bm25" in channels:
                idx = self._overlap_index(ds, allow_set if allow_set is not None else None)
                hits = idx.search(res.ids, CHANNEL_DEPTH)
                if hits:
                    ranks.memory["bm25"] = hits
        if question is not None:
            if "fulltext" in channels:
                self._lexical(question, ds, allow_set, admitted, ranks, warnings)
            if "vector" in channels and vector is not None:
                hits = [h for h in vector(question, CHANNEL_DEPTH, ds, allow_set, False)]
                hits = [h for h in hits if admitted(h[0]) and h[0] not in self.memories]
                hits = [h for h in dense_in_context(hits, self.entities) if admitted(h[0])]
                if hits:
                    ranks.entity["vector"] = hits
                if self.memories:
                    found = vector(question, CHANNEL_DEPTH, ds, allow_set, True)
                    mems = [h for h in found if h[0] in self.memories and admitted(h[0])]
                    if mems:
                        ranks.memory["vector"] = mems
        no_input = not req.entities and not req.query and question is None
        if no_input:
            warnings.append("no entities, query or question given: showing the newest memories")
            newest = sorted(
                (m for m in self.memories.values() if admitted(m.id)),
                key=lambda m: (m.created_at, _memory_order(m.id)),
                reverse=True,
            )
            ranks.memory["recent"] = [(m.id, 0.0) for m in newest[:CHANNEL_DEPTH]]
        entities = self._entity_order(ranks, question, ds)
        # ``tags`` belongs with bm25: both rank memories by the entities they are tagged with
        tags = "bm25" in channels
        memories = self._memory_order(ranks, entities, admitted, frozenset(res.ids), tags)
        lead = None
        if question is not None:
            lead = self._covers_more(question, ds)
        merged = merge_kinds(entities, memories, req.max_results, lead)
        if not merged and not no_input:
            warnings.append(
                "no results: nothing matched"
                + (f" in datasource '{ds}'" if ds else "")
                + (" within the filter" if allow_set is not None else "")
            )
        resp = SearchResponse(results=self._hits(merged, req), warnings=warnings)
        if req.max_entities is not None:
            resp.entities = self._hits(entities.top(req.max_entities), req)
        if req.max_memories is not None:
            notes = memories.where(lambda i: self.memories[i].query is None, req.max_memories)
            resp.memories = self._hits(notes, req)
        if req.max_example_queries is not None:
            examples = memories.where(
                lambda i: self.memories[i].query is not None, req.max_example_queries
            )
            resp.example_queries = self._hits(examples, req)
        return resp

    def _lexical(
        self,
        question: str,
        ds: str | None,
        allow_set: frozenset[str] | None,
        admitted: Callable[[str], bool],
        ranks: _Rankings,
        warnings: list[str],
    ) -> None:
        """The schema channel and full text (entities and memories in their own lists)."""
        # Rankings are prefixes of deeper ones: the over-fetch only pays when a filter
        # may drop hits (a scoped search has its datasource's own index).
        depth = CHANNEL_DEPTH if allow_set is None else CHANNEL_DEPTH * 2
        scopes = [ds] if ds is not None else None
        # Full text ranks on workers while the schema channel ranks here: tantivy
        # searches outside the GIL, so a search pays for the longest of them. With
        # memories present each kind is its own search, so that ten thousand saved
        # examples cannot push every entity out of the entity list, nor the reverse.
        ft_levels: dict[str, int] = {}
        pool = _fulltext_pool()
        pending = pool.submit(
            self.fulltext.search,
            question,
            CHANNEL_DEPTH,
            scopes=scopes,
            ids=allow_set,
            kinds=_ENTITY_KINDS if self.memories else None,
            resolve=self._entity_ids_by_hash(ft_levels),
        )
        pending_memories = (
            pool.submit(
                self.fulltext.search,
                question,
                CHANNEL_DEPTH,
                scopes=scopes,
                ids=allow_set,
                kinds=("memory",),
            )
            if self.memories
            else None
        )
        try:
            ranked, node_levels = self.coverage(ds).search_levels(question, depth)
        except BaseException:
            pending.cancel()
            if pending_memories is not None:
                pending_memories.cancel()
            raise
        # The schema channel says which of its ids are tables and which leaves: most
        # of the ids fusion needs a level for need no lookup in the snapshot.
        for (doc_id, _), at in zip(ranked, node_levels, strict=True):
            ranks.levels[doc_id] = _COVERAGE_FUSION_LEVEL.get(at, -1)
        schema = [h for h in ranked if admitted(h[0])][:CHANNEL_DEPTH]
        if ds is not None and len(schema) < CHANNEL_DEPTH:
            schema += self._unreached_tables(ds, schema, admitted)
        hits = pending.result()
        ranks.levels.update(ft_levels)
        # The index on disk may already hold a document another process added after
        # this snapshot was taken: it is answered by the next snapshot, not half now.
        hits = [h for h in hits if ranks.known(h[0]) and h[0] not in self.memories]
        mem_hits = [] if pending_memories is None else pending_memories.result()
        mem_hits = [h for h in mem_hits if h[0] in self.memories]
        if not hits and not mem_hits and not self._has_words(question):
            warnings.append("question has no searchable words (only stop words or punctuation)")
        if schema:
            ranks.entity["schema"] = schema
        if hits:
            ranks.entity["fulltext"] = hits
        if mem_hits:
            ranks.memory["fulltext"] = mem_hits

    def _entity_order(self, ranks: _Rankings, question: str | None, ds: str | None) -> _Ordered:
        """The entity list: its channels fused (weighed by their evidence), join keys
        lifted beside their tables."""
        # Once the schema channel ranked, full text's votes on tables and leaves do not
        # count: the schema channel scores those same words with their table and
        # database context; counting their per-entity full-text ranks as well would
        # count the words twice and let isolated matches from unrelated databases back
        # in. Datasources keep their full-text rank as it was (among all entities).
        level = ranks.level
        superseded = {"fulltext": lambda i: level(i) >= 0} if "schema" in ranks.entity else None
        weighed = self._evidence(ranks.entity, question, ds, level)
        fused = fuse(
            ranks.entity,
            weights={c: w for c, (w, _, _) in weighed.items()},
            level=level,
            by_level=RANK_BY_LEVEL,
            superseded=superseded,
        )
        lifted = None
        if question is not None and JOIN_KEY_TABLES > 0:
            table_of = self._table_of_id(level)
            lifted = join_key_order(fused.ids, table_of, self.edges_out, JOIN_KEY_TABLES)
        # (position in the fused ranking, position whose score it takes)
        order = [(i, i) for i in range(len(fused))] if lifted is None else lifted
        return _Ordered(fused, order, weighed=weighed)

    def _evidence(
        self,
        rankings: Mapping[str, Sequence[tuple[str, float]]],
        question: str | None,
        ds: str | None,
        level: Callable[[str], int],
    ) -> dict[str, tuple[float, float, float]]:
        """Fusion weights of the channels weighed by their evidence (EVIDENCE_CHANNELS):
        channel → (weight, separation, reach), see ``fusion.evidence_weights``. The schema
        channel's reach is the share of the question's words its catalog uses or bridges
        to; the vector channel reads them all."""
        if question is None or not EVIDENCE_CHANNELS:
            return {}
        reach = {"schema": self.coverage(ds).query_reach(question)} if "schema" in rankings else {}
        return evidence_weights(
            rankings, EVIDENCE_CHANNELS, keep=lambda i: level(i) == 1, reach=reach
        )

    def _memory_order(
        self,
        ranks: _Rankings,
        entities: _Ordered,
        admitted: Callable[[str], bool],
        named: frozenset[str],
        tags: bool,
    ) -> _Ordered:
        """The memory list: the memories the request itself matches (its words, named ids,
        tags overlapping the named entities, dense retrieval), fused by RRF as entities
        are; then those that only ``tags`` reaches.

        ``tags`` ranks the memories tagged with the entities the entity list ranks, by
        the best position of one of them (a memory on the #1 entity is about what is
        asked); a memory tagged with an entity's table, or with a leaf of a table that
        ranks, follows those tagged with the entity itself. It is second-hand evidence
        (the entity list comes from the same words), so it adds memories the words did
        not reach instead of voting again for those they did. Entities the request named
        are left to ``bm25``, which ranks the memories tagged with them."""
        fused = fuse({c: h for c, h in ranks.memory.items() if h})
        if tags and self.memories and entities.order:
            ids = [i for i in entities.ids(TAG_DEPTH + len(named)) if i not in named]
            tagged = self._tag_ranking(ids[:TAG_DEPTH], admitted, ranks.memory.get("fulltext", ()))
            seen = set(fused.ids)
            rest = [h for h in tagged if h[0] not in seen]
            if rest:
                fused = fused.then(fuse({"tags": rest}))
        order = [(i, i) for i in range(len(fused))]
        # A memory that only tags (or only dense retrieval) reaches takes no place from an
        # entity in ``results`` unless one of its own tags is an entity shown there.
        shown = {i for i in entities.ids(MERGE_TAG_DEPTH + len(named)) if i not in named}

        def about_shown(i: int) -> bool:
            return not shown.isdisjoint(self.memories[fused.ids[i]].entities)

        def matched(i: int) -> bool:
            f = fused.fused(i)
            if any(c in f.channels for c in _DIRECT_MEMORY_CHANNELS):
                return True
            return "tags" in f.channels and about_shown(i)

        return _Ordered(fused, order, matched)

    def _covers_more(self, question: str, ds: str | None) -> Callable[[str, str], bool]:
        """Whether a memory accounts for more of ``question`` than an entity does: the
        idf-weighted share of the question's words found in the memory's text (its
        learning, description, query and tag names) against the share found in the
        entity's text with its table's. Idf is the schema index's (a word it does not
        know counts as its rarest). Rank fusion says how each kind's hits compare among
        themselves, not across kinds; this puts the two heads on one scale."""
        from layersearch.ranking.analyzer import analyze, analyze_query

        words = list(dict.fromkeys(analyze_query(question)))
        weights: list[float] = []

        def share(texts: Iterable[str | None]) -> float:
            if not weights:
                cov = self.coverage(ds)
                rare = cov.rarest_idf()
                weights.extend(
                    float(cov.idf[j]) if (j := cov.vocab.get(w)) is not None else rare
                    for w in words
                )
            total = sum(weights)
            if total <= 0:
                return 0.0
            have = {t for text in texts for t in analyze(text)}
            return sum(w for word, w in zip(words, weights, strict=True) if word in have) / total

        def leads(memory_id: str, entity_id: str) -> bool:
            m = self.memories[memory_id]
            doc = memory_doc(m).fields
            mine = share(doc.values())
            e = self.entities.get(entity_id)
            if e is None:
                return mine > 0
            texts = list(entity_doc(e).fields.values())
            table = _table_of(e, self.entities)
            if table is not None and table != e.id:
                texts += list(entity_doc(self.entities[table]).fields.values())
            return mine > share(texts)

        return leads

    def _tag_ranking(
        self,
        entity_ids: Sequence[str],
        admitted: Callable[[str], bool],
        text_hits: Sequence[tuple[str, float]] = (),
    ) -> list[tuple[str, float]]:
        by_tag, by_table = self._tag_index()
        best: dict[str, float] = {}
        for pos, eid in enumerate(entity_ids):
            for mid in by_tag.get(eid, ()):
                best.setdefault(mid, float(pos))
            table = eid if eid in by_table else eid.rsplit(".", 1)[0]
            for mid in by_table.get(table, ()):
                best.setdefault(mid, pos + 0.5)
        # Among memories tagged alike, the one whose words match the question goes first.
        words = {mid: r for r, (mid, _) in enumerate(text_hits)}
        last = len(words)
        ranked = sorted(
            ((mid, at) for mid, at in best.items() if admitted(mid)),
            key=lambda x: (x[1], words.get(x[0], last), _memory_order(x[0])),
        )
        return [(mid, 1.0 / (1.0 + at)) for mid, at in ranked[:CHANNEL_DEPTH]]

    def _tag_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """tag → memories tagged with it; table → memories tagged with it or its leaves."""
        if self._tags is None:
            by_tag: dict[str, list[str]] = {}
            by_table: dict[str, list[str]] = {}
            for m in sorted(self.memories.values(), key=lambda m: _memory_order(m.id)):
                tables: set[str] = set()
                for t in m.entities:
                    if t.startswith("memory:"):
                        continue
                    by_tag.setdefault(t, []).append(m.id)
                    tables.update(self._tag_keys_of(t))
                for table in sorted(tables):
                    by_table.setdefault(table, []).append(m.id)
            self._tags = (by_tag, by_table)
        return self._tags

    def _tag_keys_of(self, tag: str) -> list[str]:
        """A tag's table (itself for a model); none for a datasource."""
        kind = self._kind_lookup()(tag)
        if kind == "model":
            return [tag]
        if kind in _LEAF_KINDS:
            return [tag.rsplit(".", 1)[0]]
        return []

    def _hits(self, picked: Sequence[tuple[_Ordered, int, int]], req: SearchRequest) -> list[Hit]:
        out = []
        for lst, i, src in picked:
            explanation = explain(lst.fused.fused(i), lst.weighed) if req.explain else None
            out.append(
                self.hit(
                    lst.fused.ids[i],
                    lst.fused.scores[src],
                    compact=req.compact,
                    explanation=explanation,
                )
            )
        return out

    def _unreached_tables(
        self,
        ds: str,
        ranked: list[tuple[str, float]],
        admitted: Callable[[str], bool],
    ) -> list[tuple[str, float]]:
        """The datasource's tables the schema channel did not rank, after those it did.

        A search confined to one datasource asks which of its tables matter, and
        every one of them is a candidate: a question that names its subject only by
        a value ("Jetblue Airways", "English") or a synonym reaches none of a table's
        words, but the table is still more likely than nothing. The most joined
        tables come first; they score 0, below every match.
        """
        seen = {doc_id for doc_id, _ in ranked}
        room = CHANNEL_DEPTH - len(ranked)
        out: list[tuple[str, float]] = []
        for table in self.coverage(ds).tables_by_links():
            if len(out) >= room:
                break
            if table not in seen and admitted(table):
                out.append((table, 0.0))
        return out

    def _kind_lookup(self) -> Callable[[str], str | None]:
        """id → entity kind (None: not an entity). A persisted snapshot remembers the kinds
        it was asked for (fusion asks for the same few hundred ids in every step)."""
        entities = self.entities
        if isinstance(entities, EntityMap):
            return entities.kind_of

        def kind_of(doc_id: str) -> str | None:
            e = entities.get(doc_id)
            return None if e is None else e.kind

        return kind_of

    def _entity_ids_by_hash(
        self, levels: dict[str, int]
    ) -> Callable[[Sequence[int | None]], list[str | None]] | None:
        """Full-text hits → entity ids, read from the snapshot by the documents' key hash
        (None for the others: memories, and documents newer than the snapshot, are read
        from the index); each id found has its fusion level recorded in ``levels``."""
        entities = self.entities
        if not isinstance(entities, EntityMap):
            return None
        tables = entities.tables
        kind_level = np.array([_FUSION_LEVEL.get(k, -1) for k in tables.kinds], dtype=np.int64)

        def resolve(hashes: Sequence[int | None]) -> list[str | None]:
            pos = entities.positions_by_hash(hashes)
            found = np.flatnonzero(pos >= 0)
            ids = tables.ids.take(pos[found])
            levels.update(zip(ids, kind_level[tables.kind_codes[pos[found]]].tolist(), strict=True))
            out: list[str | None] = [None] * len(pos)
            for i, doc_id in zip(found.tolist(), ids, strict=True):
                out[i] = doc_id
            return out

        return resolve

    def _table_of_id(self, level: Callable[[str], int]) -> Callable[[str], str | None]:
        """:func:`_table_of` by id, from fusion levels and visibility: nothing is decoded."""
        entities = self.entities
        visible: Callable[[str], bool]
        if isinstance(entities, EntityMap):
            visible = entities.is_visible
        else:

            def visible(doc_id: str) -> bool:
                e = entities.get(doc_id)
                return e is not None and not e.hidden

        def table_of(doc_id: str) -> str | None:
            at = level(doc_id)
            if at < 0:  # not a model or a leaf
                return None
            table = doc_id if at == 1 else doc_id.rsplit(".", 1)[0]
            return table if level(table) == 1 and visible(table) else None

        return table_of

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

    def documents(
        self, *, entities: bool = True, rows: Iterable[Entity] | None = None
    ) -> Iterable[FTDoc]:
        """Full-text documents of visible entities (unless ``entities`` is false) and memories.

        ``rows``: the same entities already as objects (just read from the store), which
        spares decoding each from the snapshot."""
        if entities:
            for e in self.entities.values() if rows is None else rows:
                if not e.hidden:
                    yield entity_doc(e)
        for m in self.memories.values():
            yield memory_doc(m)


class _Rankings:
    """The channel rankings of one search, entities and memories apart, and the fusion
    levels of the ids seen (from the channels that know them, else the snapshot)."""

    __slots__ = ("entity", "memory", "levels", "_corpus", "_kind_of")

    def __init__(self, corpus: EntityCorpus) -> None:
        self.entity: dict[str, list[tuple[str, float]]] = {}
        self.memory: dict[str, list[tuple[str, float]]] = {}
        # id → fusion level (-1: datasources, anything not a ranked schema entity)
        self.levels: dict[str, int] = {}
        self._corpus = corpus
        self._kind_of = corpus._kind_lookup()

    def put_mixed(self, channel: str, hits: list[tuple[str, float]]) -> None:
        """A channel that ranks both kinds: each kind's hits in its own list."""
        memories = self._corpus.memories
        ents = [h for h in hits if h[0] not in memories]
        mems = [h for h in hits if h[0] in memories]
        if ents:
            self.entity[channel] = ents
        if mems:
            self.memory[channel] = mems

    def known(self, doc_id: str) -> bool:
        """Whether this snapshot holds the id (an entity's level is remembered)."""
        if doc_id in self.levels or doc_id in self._corpus.memories:
            return True
        kind = self._kind_of(doc_id)
        if kind is None:
            return False
        self.levels[doc_id] = _FUSION_LEVEL.get(kind, -1)
        return True

    def level(self, doc_id: str) -> int:
        at = self.levels.get(doc_id)
        if at is None:
            self.known(doc_id)  # remembers an entity's level; any other id is -1
            at = self.levels.setdefault(doc_id, -1)
        return at


class _Ordered:
    """One kind's ranking: fused positions in their final order as (position, position
    whose score it takes), and which positions may be merged into ``results``."""

    __slots__ = ("fused", "order", "_matched", "weighed")

    def __init__(
        self,
        fused: FusedList,
        order: list[tuple[int, int]],
        matched: Callable[[int], bool] | None = None,
        weighed: Mapping[str, tuple[float, float, float]] | None = None,
    ) -> None:
        self.fused = fused
        self.order = order
        self._matched = matched
        #: channel → (weight, separation, reach) of the channels fusion weighed
        self.weighed = weighed

    def ids(self, n: int) -> list[str]:
        return [self.fused.ids[i] for i, _ in self.order[:n]]

    def top(self, n: int) -> list[tuple[_Ordered, int, int]]:
        return [(self, i, src) for i, src in self.order[:n]]

    def where(self, keep: Callable[[str], bool], n: int) -> list[tuple[_Ordered, int, int]]:
        out: list[tuple[_Ordered, int, int]] = []
        for i, src in self.order:
            if len(out) >= n:
                break
            if keep(self.fused.ids[i]):
                out.append((self, i, src))
        return out

    def mergeable(self) -> Iterator[tuple[_Ordered, int, int]]:
        for i, src in self.order:
            if self._matched is None or self._matched(i):
                yield (self, i, src)


def merge_kinds(
    entities: _Ordered,
    memories: _Ordered,
    n: int,
    memory_leads: Callable[[str, str], bool] | None = None,
) -> list[tuple[_Ordered, int, int]]:
    """``results``: the entity and memory lists taken in turn (entity, memory, entity, …
    or memory first), each in its own order; when one list runs out the other fills the
    rest. The memory list goes first when ``memory_leads(first memory, first entity)``
    says so (see :meth:`EntityCorpus._covers_more`). Otherwise,
    and always when the first entity is one the request named, an entity does. Only
    memories that match the request
    itself take a turn (see :meth:`EntityCorpus._memory_order`). Results for n are a
    prefix of those for n+k."""
    out: list[tuple[_Ordered, int, int]] = []
    ents = iter(entities.top(len(entities.order)))
    mems = memories.mergeable()
    e, m = next(ents, None), next(mems, None)
    memory_first = (
        memory_leads is not None
        and e is not None
        and m is not None
        and "input" not in e[0].fused.fused(e[1]).channels
        and memory_leads(m[0].fused.ids[m[1]], e[0].fused.ids[e[1]])
    )
    while len(out) < n and (e is not None or m is not None):
        entity_turn = out[-1][0] is memories if out else not memory_first
        if m is None or (entity_turn and e is not None):
            assert e is not None
            out.append(e)
            e = next(ents, None)
        else:
            out.append(m)
            m = next(mems, None)
    return out


_SCHEMA_KINDS = frozenset({"model", "column", "measure", "aggregation"})
_LEAF_KINDS = frozenset({"column", "measure", "aggregation"})
#: Levels for RANK_BY_LEVEL (memories and datasources keep their rank among all
#: hits); on equal fused scores a leaf, the specific evidence, precedes a table. Its
#: kinds are _SCHEMA_KINDS: a level of 0 or more says "a model or a leaf".
_FUSION_LEVEL = {"column": 0, "measure": 0, "aggregation": 0, "model": 1}
#: CoverageIndex node level (1: table, 2: leaf) → fusion level
_COVERAGE_FUSION_LEVEL = {1: 1, 2: 0}
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


#: How many of the best-ranked tables count as "the question's tables" whose join keys
#: are brought forward.
JOIN_KEY_TABLES = 5


def join_keys_in_context(
    fused: list[Fused],
    entities: Mapping[str, Entity],
    edges_out: Mapping[str, Sequence[EdgeRecord]],
    top: int | None = None,
) -> list[Fused]:
    """The fused ranking with the join keys between its best tables brought forward.

    A question that needs two joined tables is answered with the columns that
    join them, though it never names them ("students who have a dog" joins on
    ``StuID`` and ``PetID``), so every channel ranks them low. Among the first
    ``top`` tables of the ranking (a table counts from its first hit, its own
    or a leaf's), every declared join between two of them moves its key
    columns right after the later of the two tables' first hits, with that
    hit's fused score, unless they already rank higher. Only hits some channel
    ranked move (their explanation still says which channels ranked them and
    how; the lift is the difference between the contributions' sum and the
    score). Everything else keeps its order, so the list stays sorted by score.
    """
    top = JOIN_KEY_TABLES if top is None else top
    order = join_key_order(
        [f.id for f in fused], lambda i: _table_of(entities.get(i), entities), edges_out, top
    )
    if order is None:
        return list(fused)
    out = []
    for i, src in order:
        g = fused[i]
        if src != i:
            g.score = fused[src].score
        out.append(g)
    return out


def join_key_order(
    ids: Sequence[str],
    table_of: Callable[[str], str | None],
    edges_out: Mapping[str, Sequence[EdgeRecord]],
    top: int,
) -> list[tuple[int, int]] | None:
    """:func:`join_keys_in_context` on a ranking given as ids: the new order as (position,
    position whose score it takes), or None when nothing moves."""
    first: dict[str, int] = {}
    for i, doc_id in enumerate(ids):
        t = table_of(doc_id)
        if t is not None and t not in first:
            first[t] = i
            if len(first) >= top:
                break
    pos: dict[str, int] | None = None
    moving: dict[str, int] = {}
    for t in first:
        for edge in _joins_of(edges_out, t):
            if edge.dst == t or edge.dst not in first:
                continue
            at = max(first[t], first[edge.dst])
            keys = [f"{t}.{c}" for c in edge.props.get("source_columns") or []]
            keys += [f"{edge.dst}.{c}" for c in edge.props.get("target_columns") or []]
            if pos is None:
                pos = {doc_id: i for i, doc_id in enumerate(ids)}
            for c in keys:
                if pos.get(c, -1) > at:
                    moving[c] = min(moving.get(c, at), at)
    if not moving:
        return None
    assert pos is not None
    ordered = sorted(moving, key=lambda c: (moving[c], pos[c], c))
    out: list[tuple[int, int]] = []
    for i, doc_id in enumerate(ids):
        if doc_id in moving:
            continue
        out.append((i, i))
        for c in ordered:
            if moving[c] == i:
                out.append((pos[c], i))
    return out


_FULLTEXT_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _fulltext_pool() -> ThreadPoolExecutor:
    """The workers full-text searches run on (one per core, at most four: concurrent
    searches of a server each get one), started on first use."""
    global _FULLTEXT_POOL
    with _POOL_LOCK:
        if _FULLTEXT_POOL is None:
            _FULLTEXT_POOL = ThreadPoolExecutor(
                min(4, os.cpu_count() or 1), thread_name_prefix="layersearch-fulltext"
            )
        return _FULLTEXT_POOL


def _forget_pool_in_child() -> None:
    # A forked child has none of the parent's worker threads: a pool inherited from it
    # would queue work that no thread ever runs. The child starts its own on first use.
    global _FULLTEXT_POOL, _POOL_LOCK
    _FULLTEXT_POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _joins_of(edges_out: Mapping[str, Sequence[EdgeRecord]], src: str) -> list[EdgeRecord]:
    """The JOINS edges out of ``src`` (a snapshot decodes only those, not its CONTAINS)."""
    if isinstance(edges_out, EdgeMap):
        return edges_out.of_type(src, "JOINS")
    return [e for e in edges_out.get(src, ()) if e.type == "JOINS"]


def _table_of(e: Entity | None, entities: Mapping[str, Entity]) -> str | None:
    """The visible model a schema entity belongs to (itself for a model)."""
    if e is None or e.kind not in _SCHEMA_KINDS:
        return None
    table = e.id if e.kind == "model" else e.parent
    t = entities.get(table) if table is not None else None
    return table if t is not None and t.kind == "model" and not t.hidden else None


def build_coverage(
    entities: Mapping[str, Entity],
    edges_out: Mapping[str, Sequence[EdgeRecord]],
    *,
    bridges_from: CoverageIndex | None = None,
) -> CoverageIndex:
    """Coverage nodes for every visible entity, linked along joins (foreign keys)."""
    # Only joins matter here: a snapshot decodes just those (a CONTAINS edge per column
    # would be most of the decoding); coverage_of picks them out of any other mapping.
    if isinstance(edges_out, EdgeMap):
        return coverage_of(entities, edges_out.all_of_type("JOINS"), bridges_from=bridges_from)
    return coverage_of(entities, chain.from_iterable(edges_out.values()), bridges_from=bridges_from)


def coverage_of(
    entities: Mapping[str, Entity],
    edges: Iterable[EdgeRecord],
    *,
    bridges_from: CoverageIndex | None = None,
) -> CoverageIndex:
    """:func:`build_coverage` from the edges themselves (only JOINS edges are read); the
    index depends on neither the order of ``entities`` nor that of ``edges``."""
    all_joins = [e for e in edges if e.type == "JOINS"]
    nodes = []
    for e in sorted(entities.values(), key=lambda e: e.id):
        if e.hidden:
            continue
        doc = entity_doc(e)
        fields = {k: v for k, v in doc.fields.items() if k != "parent"}
        parent = None if e.kind == "datasource" else e.id.rsplit(".", 1)[0]
        nodes.append(
            CoverageNode(e.id, _COVERAGE_LEVEL[e.kind], parent, fields, data_type=e.data_type)
        )
    joins = [
        (edge.src, edge.dst)
        for edge in all_joins
        if not _hidden(entities, edge.src) and not _hidden(entities, edge.dst)
    ]
    keys = {e.id for e in entities.values() if e.primary_key and not e.hidden}
    for edge in all_joins:
        keys.update(f"{edge.src}.{c}" for c in edge.props.get("source_columns") or [])
        keys.update(f"{edge.dst}.{c}" for c in edge.props.get("target_columns") or [])
    return CoverageIndex(
        nodes,
        ENTITY_BOOSTS,
        links_from_edges(joins),
        keys,
        bridges=bridges_from if bridges_from is not None else VOCABULARY_BRIDGES,
    )


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
