"""The indexes an entity search reads, by datasource: the schema channel's (catalog-wide
or one datasource's) and bm25 over the memories tagged with entities (the index half of
:class:`~layersearch.corpora.entities.corpus.EntityCorpus`, kept per snapshot)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

from layersearch.corpora.entities.coverage import build_coverage, coverage_of
from layersearch.corpora.entities.rank import _memory_order
from layersearch.ranking.bm25 import EntityOverlapIndex

if TYPE_CHECKING:
    from layersearch.corpora.entities.config import EntityIndexConfig
    from layersearch.corpora.snapshot import CoverageBuild, EdgeMap, EntityMap, Snapshot
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.semantic.model import Entity
    from layersearch.types import Memory

__all__ = ["SCOPED_INDEXES", "CorpusIndexes"]

#: Per-datasource schema indexes kept (oldest built dropped first).
SCOPED_INDEXES = 256


class CorpusIndexes:
    """The schema and memory-overlap indexes of a corpus, built on first use."""

    if TYPE_CHECKING:
        entities: EntityMap
        memories: dict[str, Memory]
        edges_out: EdgeMap
        snapshot: Snapshot
        index_config: EntityIndexConfig
        _coverage: CoverageIndex | None
        _scoped: dict[str, CoverageIndex]
        _overlap: dict[tuple[str | None, frozenset[str] | None], EntityOverlapIndex]

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
            return build_coverage(source, self.edges_out, config=self.index_config)

        settings = self.index_config.key()
        self._coverage = self.snapshot.coverage(build, prebuilt, settings)

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
            cfg = self.index_config
            wide = self.coverage() if cfg.vocabulary_bridges else None
            joins = chain.from_iterable(edges.values())
            idx = coverage_of(ents, joins, bridges_from=wide, config=cfg)
            self._scoped[datasource] = idx
        return idx

    def _entities_in(self, datasource: str) -> dict[str, Entity]:
        """The visible entities of one datasource (decoding only those from a snapshot)."""
        return {i: self.entities[i] for i in self.entities.visible_in_scope(datasource)}

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
