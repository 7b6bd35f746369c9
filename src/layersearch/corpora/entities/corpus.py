"""The semantic layer + memories corpus: one snapshot of the store's entities and
memories, with their lookups and schema-channel indexes (its search: ``search.py``)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from layersearch.calls import analysed_question
from layersearch.corpora.entities.config import DEFAULT_INDEX, EntityIndexConfig
from layersearch.corpora.entities.documents import entity_doc, memory_doc
from layersearch.corpora.entities.rank import MAX_QUESTION_CHARS, MAX_RESULTS_LIMIT
from layersearch.corpora.entities.search import CorpusSearch
from layersearch.corpora.snapshot import EdgeMap, EntityMap, Snapshot
from layersearch.errors import ConfigError, LimitExceeded
from layersearch.ranking.bm25 import EntityOverlapIndex
from layersearch.ranking.coverage import CoverageIndex
from layersearch.ranking.fulltext import FTDoc, FullTextIndex
from layersearch.semantic.canonical import Resolver
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.textcheck import check_id
from layersearch.types import CHANNELS, Memory, SearchRequest


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
    #: the index-time settings its schema indexes are built with
    index_config: EntityIndexConfig = DEFAULT_INDEX
    _overlap: dict[tuple[str | None, frozenset[str] | None], EntityOverlapIndex] = field(
        default_factory=dict, init=False
    )

    def __post_init__(self) -> None:
        self.resolver = self.snapshot.resolver(self.memories.__contains__)
        self._mentions: dict[str, list[str]] | None = None
        self._coverage: CoverageIndex | None = None
        self._scoped: dict[str, CoverageIndex] = {}
        self._scope_ids: dict[str, frozenset[str]] = {}
        self._tags: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        self._words: dict[str, frozenset[str]] = {}
        self._surface: dict[str, frozenset[str]] = {}
        self._doc_plain: dict[str, frozenset[str]] = {}
        self._doc_words: dict[str, frozenset[str]] = {}

    @classmethod
    def from_snapshot(
        cls,
        snapshot: Snapshot,
        memories: dict[str, Memory],
        fulltext: FullTextIndex,
        index_config: EntityIndexConfig = DEFAULT_INDEX,
    ) -> EntityCorpus:
        return cls(
            snapshot.entities,
            memories,
            snapshot.edges_out,
            snapshot.datasources,
            fulltext,
            snapshot=snapshot,
            index_config=index_config,
        )

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
        twin._scope_ids = {}
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
        self._scope_ids.clear()
        self._mentions = None
        self._tags = None

    def memory_removed(self, memory_id: str) -> None:
        self.memories.pop(memory_id, None)
        self._words.pop(memory_id, None)
        self._surface.pop(memory_id, None)
        self._doc_plain.pop(memory_id, None)
        self._doc_words.pop(memory_id, None)
        self._overlap.clear()
        self._scope_ids.clear()
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
