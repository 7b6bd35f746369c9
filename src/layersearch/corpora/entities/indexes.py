"""The indexes an entity search reads, by datasource: the schema channel's (catalog-wide
or one datasource's) and bm25 over the memories tagged with entities (the index half of
:class:`~layersearch.corpora.entities.corpus.EntityCorpus`, kept per snapshot)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from layersearch.corpora.entities.coverage import build_coverage
from layersearch.corpora.entities.rank import _memory_order
from layersearch.ranking.bm25 import EntityOverlapIndex
from layersearch.ranking.coverage_cut import within

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
        _scope_ids: dict[str, frozenset[str]]

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
            if len(self._scoped) >= SCOPED_INDEXES:
                self._scoped.pop(next(iter(self._scoped)))
            # Cut from the catalog-wide index: no entity decoded or analysed again, and the
            # bridges are its own (no second reading of WordNet).
            idx = within(self.coverage(), datasource)
            self._scoped[datasource] = idx
        return idx

    def scope_ids(self, datasource: str) -> frozenset[str]:
        """Visible entity ids under a datasource, and the memories in its scope: computed
        once per datasource until the memories change (one object, so that the vector
        index maps its ids to rows once)."""
        out = self._scope_ids.get(datasource)
        if out is None:
            ids = set(self.entities.visible_in_scope(datasource))
            ids.update(m.id for m in self.memories.values() if datasource in self.memory_scopes(m))
            if len(self._scope_ids) >= SCOPED_INDEXES:
                self._scope_ids.pop(next(iter(self._scope_ids)))
            out = self._scope_ids[datasource] = frozenset(ids)
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
