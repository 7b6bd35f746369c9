"""The semantic layer + memories corpus: one snapshot of the store's entities and
memories, with their lookups and schema-channel indexes (its search: ``search.py``)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

from layersearch.calls import analysed_question
from layersearch.corpora.entities.coverage import VOCABULARY_BRIDGES, build_coverage, coverage_of
from layersearch.corpora.entities.documents import entity_doc, memory_doc
from layersearch.corpora.entities.rank import MAX_QUESTION_CHARS, MAX_RESULTS_LIMIT, _memory_order
from layersearch.corpora.entities.search import CorpusSearch
from layersearch.corpora.snapshot import CoverageBuild, EdgeMap, EntityMap, Snapshot
from layersearch.errors import ConfigError, LimitExceeded
from layersearch.ranking.bm25 import EntityOverlapIndex
from layersearch.ranking.coverage import CoverageIndex
from layersearch.ranking.fulltext import FTDoc, FullTextIndex
from layersearch.semantic.canonical import Resolver
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.textcheck import check_id
from layersearch.types import CHANNELS, Memory, SearchRequest

#: Per-datasource schema indexes kept (oldest built dropped first).
SCOPED_INDEXES = 256


@dataclass
class EntityCorpus(CorpusSearch):
    """A snapshot of the semantic layer and memories, with their search channels.

    ``entities`` and ``edges_out`` are the lazy maps of a
    :class:`~layersearch.corpora.snapshot.Snapshot` (persisted, or in memory only): they
    decode entries on access, so nothing here should iterate them on a search path.
    """

    entities: EntityMap
    memories: dict[str, Memory]
    edges_out: EdgeMap
    datasources: list[str]
    fulltext: FullTextIndex
    snapshot: Snapshot
    resolver: Resolver = field(init=False)
    _overlap: dict[tuple[str | None, frozenset[str] | None], EntityOverlapIndex] = field(
        default_factory=dict, init=False
    )

    def __post_init__(self) -> None:
        self.resolver = self.snapshot.resolver(self.memories.__contains__)
        self._mentions: dict[str, list[str]] | None = None
        self._coverage: CoverageIndex | None = None
        self._scoped: dict[str, CoverageIndex] = {}
        self._tags: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        self._words: dict[str, frozenset[str]] = {}
        self._surface: dict[str, frozenset[str]] = {}
        self._doc_plain: dict[str, frozenset[str]] = {}
        self._doc_words: dict[str, frozenset[str]] = {}

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

        self._coverage = self.snapshot.coverage(build, prebuilt)

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
            joins = chain.from_iterable(edges.values())
            idx = self._scoped[datasource] = coverage_of(ents, joins, bridges_from=wide)
        return idx

    def _entities_in(self, datasource: str) -> dict[str, Entity]:
        """The visible entities of one datasource (decoding only those from a snapshot)."""
        return {i: self.entities[i] for i in self.entities.visible_in_scope(datasource)}

    def edges(self) -> list[EdgeRecord]:
        """Every edge, ordered by type, source, target."""
        return self.edges_out.all()

    # -- incremental updates -------------------------------------------------------------------

    def with_own_memories(self) -> EntityCorpus:
        """A copy sharing the snapshot, the indexes and the entity caches, with the memories
        and every cache about them of its own: a memory write changes the copy, while the
        searches in flight read this one unchanged."""
        twin = copy.copy(self)
        twin.memories = dict(self.memories)
        twin.resolver = twin.snapshot.resolver(twin.memories.__contains__)
        for name in ("_words", "_surface", "_doc_plain", "_doc_words"):
            setattr(twin, name, dict(getattr(self, name)))
        twin._overlap = {}
        twin._mentions = None
        twin._tags = None
        return twin

    def memory_added(self, m: Memory) -> None:
        self.memories[m.id] = m
        self._words.pop(m.id, None)
        self._surface.pop(m.id, None)
        self._doc_plain.pop(m.id, None)
        self._doc_words.pop(m.id, None)
        self._overlap.clear()
        self._mentions = None
        self._tags = None

    def memory_removed(self, memory_id: str) -> None:
        self.memories.pop(memory_id, None)
        self._words.pop(memory_id, None)
        self._surface.pop(memory_id, None)
        self._doc_plain.pop(memory_id, None)
        self._doc_words.pop(memory_id, None)
        self._overlap.clear()
        self._mentions = None
        self._tags = None

    # -- lookups --------------------------------------------------------------------------------

    def visible(self, entity_id: str) -> bool:
        if entity_id in self.memories:
            return True
        return self.entities.is_visible(entity_id)

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
        out = set(self.entities.visible_in_scope(datasource))
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
        check_question(req.question)
        check_id(req.datasource, "datasource")
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

    def _kind_lookup(self) -> Callable[[str], str | None]:
        """id → entity kind (None: not an entity). The snapshot remembers the kinds it was
        asked for (fusion asks for the same few hundred ids in every step)."""
        return self.entities.kind_of

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


def check_question(question: str | None) -> None:
    """Refuse a question over :data:`MAX_QUESTION_CHARS` (LimitExceeded)."""
    if question is not None and len(question) > MAX_QUESTION_CHARS:
        raise LimitExceeded(
            f"question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS} "
            "(shorten it: search needs the gist, not the document)"
        )


def bounded_request(req: SearchRequest) -> tuple[SearchRequest, str | None]:
    """``req`` with only the part of its question a search analyses
    (:func:`layersearch.calls.analysed_question`), and the warning saying so when that
    cut it; a question over :data:`MAX_QUESTION_CHARS` is refused."""
    check_question(req.question)
    question, cut = analysed_question(req.question)
    if cut is None:
        return req, None
    return req.model_copy(update={"question": question}), cut
