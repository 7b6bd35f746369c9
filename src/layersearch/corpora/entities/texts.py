"""What an entity search reads of the corpus's text: the share of the question a
memory's or an entity's words hold, the ``words`` and ``tags`` memory rankings, the
table of an id (the text half of :class:`~layersearch.corpora.entities.search.CorpusSearch`,
kept per snapshot)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.documents import entity_doc, memory_doc
from layersearch.corpora.entities.indexes import CorpusIndexes
from layersearch.corpora.entities.rank import _LEAF_KINDS, _memory_order, _readers
from layersearch.corpora.entities.words import analysed_tokens, surface_words
from layersearch.semantic.model import Entity

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EntityMap
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.types import Memory

__all__ = ["ENTITY_WORDS", "CorpusText"]

#: Analysed entity documents kept for the merge of ``results`` (beside every memory's).
ENTITY_WORDS = 50_000
_DEPTH = EntityRankingConfig().channel_depth


class CorpusText(CorpusIndexes):
    """The corpus's text as the memory stages read it (caches kept per snapshot)."""

    if TYPE_CHECKING:
        entities: EntityMap
        memories: dict[str, Memory]
        _tags: tuple[dict[str, list[str]], dict[str, list[str]]] | None
        _words: dict[str, frozenset[str]]
        _surface: dict[str, frozenset[str]]
        _doc_plain: dict[str, frozenset[str]]
        _doc_words: dict[str, frozenset[str]]

        def _kind_lookup(self) -> Callable[[str], str | None]: ...

    def question_share(
        self, question: str, ds: str | None = None
    ) -> Callable[[Collection[str]], float]:
        """:meth:`_question_share` for other corpora's hits: a scoped search reads the share
        of the question every source's hits hold with the same idf (``corpora.scope``)."""
        return self._question_share(question, ds)

    def document_words(self, item_id: str) -> frozenset[str]:
        """The analysed words of an entity's or a memory's full-text document (kept per
        snapshot); empty for an id the corpus does not hold."""
        if item_id in self.memories:
            return self._memory_doc_words(item_id)
        e = self.entities.get(item_id)
        return self._entity_words(e) if e is not None else frozenset()

    def _question_share(
        self,
        question: str,
        ds: str | None,
        index: Callable[[], CoverageIndex] | None = None,
    ) -> Callable[[Collection[str]], float]:
        """The idf-weighted share of ``question``'s words among the given analysed tokens.
        Idf is the schema index's (``index``: the search's, else the datasource's; a word
        it does not know counts as its rarest)."""
        from layersearch.ranking.analyzer import analyze_query

        words = list(dict.fromkeys(analyze_query(question)))
        # (word, idf) pairs and their total, read from the index on the first call
        pairs: list[tuple[str, float]] = []
        totals: list[float] = []

        def share(have: Collection[str]) -> float:
            if not totals:
                cov = index() if index is not None else self.coverage(ds)
                rare = cov.rarest_idf()
                pairs.extend(
                    (w, float(cov.idf[j]) if (j := cov.vocab.get(w)) is not None else rare)
                    for w in words
                )
                totals.append(sum(w for _, w in pairs))
            total = totals[0]
            if total <= 0:
                return 0.0
            held = 0.0  # the same additions, in the same order, as sum() over the held words
            for word, w in pairs:
                if word in have:
                    held += w
            return held / total

        return share

    def _closeness(
        self,
        share: Callable[[Collection[str]], float],
        plain: Callable[[Collection[str]], float],
    ) -> Callable[[str], tuple[float, float]]:
        """How close a memory's own text (learning and description) is to the question:
        the idf-weighted share of the question's analysed words it holds (``share``),
        then, to order memories that share alike, the share of the question's plain words
        (``plain``: lower-cased, stop words and inflections kept) it holds. Analysis
        folds "How many accounts do we have?" and "Count the number of accounts." to the
        same evidence (``account``); of two saved examples that say the question's words,
        the one worded as the question comes first. Both are shares of the question, not
        similarities, so no length enters: memories that tie on both keep their
        full-text order."""
        cache: dict[str, tuple[float, float]] = {}

        def close(memory_id: str) -> tuple[float, float]:
            got = cache.get(memory_id)
            if got is None:
                mine = self._memory_words(memory_id)
                got = cache[memory_id] = (share(mine), plain(self._memory_surface(memory_id)))
            return got

        return close

    def _memory_doc_plain(self, memory_id: str) -> frozenset[str]:
        """The plain words of a memory's whole document, kept per snapshot."""
        words = self._doc_plain.get(memory_id)
        if words is None:
            doc = memory_doc(self.memories[memory_id]).fields
            # the learning and description's own words are kept apart: read them once
            words = self._memory_surface(memory_id) | surface_words(doc["formula"], doc["tags"])
            self._doc_plain[memory_id] = words
        return words

    def _doc_plain_words(self, e: Entity) -> frozenset[str]:
        """The plain words of an entity's full-text document, kept as :meth:`_entity_words`
        keeps its analysed ones."""
        words = self._doc_plain.get(e.id)
        if words is None:
            if len(self._doc_plain) >= ENTITY_WORDS + len(self.memories):
                self._doc_plain.clear()
            words = self._doc_plain[e.id] = surface_words(*entity_doc(e).fields.values())
        return words

    def _memory_surface(self, memory_id: str) -> frozenset[str]:
        """The plain words of a memory's learning and description, kept per snapshot."""
        words = self._surface.get(memory_id)
        if words is None:
            m = self.memories[memory_id]
            words = self._surface[memory_id] = surface_words(m.learning, m.description)
        return words

    def _covers_more(
        self,
        share: Callable[[Collection[str]], float],
        plain: Callable[[Collection[str]], float],
    ) -> Callable[[str, str], bool]:
        """Whether a memory accounts for more of the question than an entity does: the
        share (:meth:`_question_share`) of the question's words found in the memory's text
        (its learning, description, query and tag names) against the share found in the
        entity's text with its table's; when both hold the same share (more than none),
        the share of the question's stop words (``plain``: the words that say how it is
        asked, which analysis drops) in the same two texts. Rank fusion says how each
        kind's hits compare among themselves, not across kinds; this puts the two heads on
        one scale. An entity's text is names and descriptions, a saved question is worded
        as questions are: asked "How many farms are there?", the example saved with those
        words leads the column ``Farm_ID``, which holds the same content word. A keyword
        search ("store") has no stop words, and its entity keeps the lead."""

        table_of = _readers(self.entities)[1]

        def leads(memory_id: str, entity_id: str) -> bool:
            mine = share(self._memory_doc_words(memory_id))
            e = self.entities.get(entity_id)
            if e is None:
                return mine > 0
            words = self._entity_words(e)
            table = table_of(e.id)
            t = self.entities[table] if table is not None and table != e.id else None
            if t is not None:
                words = words | self._entity_words(t)
            theirs = share(words)
            if mine != theirs or mine <= 0:
                return mine > theirs
            said = self._doc_plain_words(e)
            if t is not None:
                said = said | self._doc_plain_words(t)
            return plain(self._memory_doc_plain(memory_id)) > plain(said)

        return leads

    def _memory_words(self, memory_id: str) -> frozenset[str]:
        """The analysed words of a memory's own text (learning and description), kept
        per snapshot: the memory list reads them for every question."""
        words = self._words.get(memory_id)
        if words is None:
            m = self.memories[memory_id]
            words = self._words[memory_id] = frozenset(analysed_tokens((m.learning, m.description)))
        return words

    def _memory_doc_words(self, memory_id: str) -> frozenset[str]:
        """The analysed words of a memory's whole document (learning, description, query,
        tag names), kept per snapshot: the merge of ``results`` reads them at every turn."""
        words = self._doc_words.get(memory_id)
        if words is None:
            doc = memory_doc(self.memories[memory_id]).fields
            # the learning and description's own words are kept apart: analyse them once
            words = self._memory_words(memory_id) | analysed_tokens((doc["formula"], doc["tags"]))
            self._doc_words[memory_id] = words
        return words

    def _entity_words(self, e: Entity) -> frozenset[str]:
        """The analysed words of an entity's full-text document, kept for the entities
        searches merged against (at most ENTITY_WORDS of them)."""
        words = self._doc_words.get(e.id)
        if words is None:
            if len(self._doc_words) >= ENTITY_WORDS + len(self.memories):
                self._doc_words.clear()
            words = self._doc_words[e.id] = frozenset(
                analysed_tokens(entity_doc(e).fields.values())
            )
        return words

    def _words_ranking(
        self, text_hits: Sequence[tuple[str, float]], close: Callable[[str], tuple[float, float]]
    ) -> list[tuple[str, float]]:
        """``words``: the memories full text found, ranked by the share of the question's
        words their own text holds, then by the share of its plain words
        (:meth:`_closeness`; ties in full-text order). BM25 ranks by term weights
        normalised by length, so a short note that shares a few rare words outranks one
        that says everything the question says; this ranks by how much of it is said."""
        scored = [(mid, close(mid)) for mid, _ in text_hits]
        order = sorted(range(len(scored)), key=lambda r: (-scored[r][1][0], -scored[r][1][1], r))
        return [(scored[r][0], scored[r][1][0]) for r in order]

    def _tag_ranking(
        self,
        entity_ids: Sequence[str],
        admitted: Callable[[str], bool],
        text_hits: Sequence[tuple[str, float]] = (),
        depth: int = _DEPTH,
    ) -> list[tuple[str, float]]:
        """``tags``: memories tagged with the ranked ``entity_ids`` (see the stage
        ``memory-tags``), the first ``depth``."""
        by_tag, by_table = self._tag_index()
        # Among memories tagged alike, the one whose words match the question goes first.
        words = {mid: r for r, (mid, _) in enumerate(text_hits)}
        last = len(words)
        # A memory's place is where one of its tags first ranks. The tag lists are in
        # memory order and the places only grow, so the memories come out in place
        # order group by group, and the walk stops once a group fills ``depth``.
        seen: set[str] = set()
        walked: set[str] = set()  # tables whose memories are all in ``seen`` already
        ranked: list[tuple[str, float]] = []
        for pos, eid in enumerate(entity_ids):
            table = eid if eid in by_table else eid.rsplit(".", 1)[0]
            of_table = None if table in walked else by_table.get(table)
            walked.add(table)
            for at, mids in ((float(pos), by_tag.get(eid)), (pos + 0.5, of_table)):
                if not mids:  # most ranked entities have no memory tagged with them
                    continue
                group = [m for m in mids if m not in seen]
                seen.update(group)
                group = [m for m in group if admitted(m)]
                group.sort(key=lambda m: words.get(m, last))  # stable: memory order kept
                ranked.extend((m, 1.0 / (1.0 + at)) for m in group)
            if len(ranked) >= depth:
                break
        return ranked[:depth]

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

    def _table_of_id(self, level: Callable[[str], int]) -> Callable[[str], str | None]:
        """A table by id (as :func:`~layersearch.corpora.entities.rank._readers` gives it),
        from fusion levels and visibility: nothing is decoded."""
        visible = self.entities.is_visible
        found: dict[str, str | None] = {}  # per search: join-keys asks for many hits

        def table_of(doc_id: str) -> str | None:
            if doc_id in found:
                return found[doc_id]
            at = level(doc_id)
            table = None
            if at >= 0:  # a model or a leaf
                table = doc_id if at == 1 else doc_id.rsplit(".", 1)[0]
                if not (level(table) == 1 and visible(table)):
                    table = None
            found[doc_id] = table
            return table

        return table_of
