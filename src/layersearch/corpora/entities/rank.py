"""How the two kinds are ranked and merged: fusion levels, dense and join-key context,
the ordered entity and memory lists, and their merge into ``results``."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import numpy as np

from layersearch.corpora.entities.config import MAX_RESULTS_LIMIT, EntityRankingConfig
from layersearch.corpora.entities.lists import FUSION_LEVEL, Picked, _Ordered, _Rankings
from layersearch.ranking.analyzer import stem
from layersearch.ranking.coverage_terms import VALUE_NONE, value_kind
from layersearch.ranking.fusion import Fused
from layersearch.ranking.pipeline import Trace, between, settle
from layersearch.semantic.model import EdgeRecord, Entity

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EntityMap

__all__ = [
    "CHANNEL_DEPTH",
    "MAX_RESULTS_LIMIT",
    "Picked",
    "_Ordered",
    "_Rankings",
]

_DEFAULTS = EntityRankingConfig()
#: Every channel ranks this deep whatever max_results is (``EntityRankingConfig``).
CHANNEL_DEPTH = _DEFAULTS.channel_depth
MAX_QUESTION_CHARS = 100_000
#: At most this many memories in a row in ``results`` (``EntityRankingConfig.memory_run``).
MEMORY_RUN = _DEFAULTS.memory_run
#: How many of the best-ranked tables count as "the question's tables" whose join keys
#: are brought forward.
JOIN_KEY_TABLES = _DEFAULTS.join_key_tables

_SCHEMA_KINDS = frozenset({"model", "column", "measure", "aggregation"})
_LEAF_KINDS = frozenset({"column", "measure", "aggregation"})
_FUSION_LEVEL = FUSION_LEVEL
#: CoverageIndex node level (1: table, 2: leaf) → fusion level
_COVERAGE_FUSION_LEVEL = {1: 1, 2: 0}


def merge_kinds(
    entities: _Ordered,
    memories: _Ordered,
    n: int,
    memory_leads: Callable[[str, str], bool] | None = None,
    *,
    lead: bool = True,
    run: int = MEMORY_RUN,
    trace: Trace | None = None,
) -> list[Picked]:
    """``results``: the entity and memory lists taken in turn (entity, memory, entity, …
    or memory first), each in its own order; when one list runs out the other fills the
    rest. The memory list goes first when ``lead`` and ``memory_leads(first memory,
    first entity)`` says so (see :meth:`EntityCorpus._covers_more`), and after a memory
    the next memory takes the entity's turn too when it leads the next entity the same
    way, up to ``run`` memories in a row. Otherwise, and always when the first entity is
    one the request named, an entity does. Only memories that match the request itself
    take a turn (see :meth:`EntityCorpus._memory_order`). Results for n are a prefix of
    those for n+k.

    Scores: an entity shows its entity-list score; a memory shows its own unless that
    is not between the score shown above it and the next entity's, when it takes their
    midpoint (``ranking.pipeline.between``): scores never increase down ``results``. A
    memory placed so is noted in ``trace`` under the stage that placed it."""
    out: list[Picked] = []
    ents = iter(entities.top(len(entities.order)))
    mems = memories.mergeable()
    e, m = next(ents, None), next(mems, None)
    memory_first = (
        lead
        and memory_leads is not None
        and e is not None
        and m is not None
        and "input" not in e[0].fused.fused(e[1]).channels
        and memory_leads(m[0].fused.ids[m[1]], e[0].fused.ids[e[1]])
    )
    streak = 0  # memories taken in a row
    taken = 0  # memories taken so far
    while len(out) < n and (e is not None or m is not None):
        entity_turn = out[-1][0] is memories if out else not memory_first
        took_turn = False
        if (
            entity_turn
            and 0 < streak < run
            and e is not None
            and m is not None
            and memory_leads is not None
            and memory_leads(m[0].fused.ids[m[1]], e[0].fused.ids[e[1]])
        ):
            entity_turn, took_turn = False, True
        streak = 0 if entity_turn else streak + 1
        if m is None or (entity_turn and e is not None):
            assert e is not None
            out.append(e)
            e = next(ents, None)
            continue
        lst, i, own = m
        shown = between(out[-1][2] if out else None, None if e is None else e[2], own)
        taken += 1
        if trace is not None:
            led = memory_first and not out
            _note_merge(trace, lst.fused.ids[i], len(out) + 1, taken, shown - own, led, took_turn)
        out.append((lst, i, shown))
        m = next(mems, None)
    return out


def _note_merge(
    trace: Trace, doc_id: str, at: int, nth: int, adj: float, led: bool, took_turn: bool
) -> None:
    """What the merge did to the memory it placed at ``at`` (its ``nth`` memory)."""
    if led:
        stage, before, note = "memory-lead", 2, "covers more of the question than the entity"
    elif took_turn:
        stage, before, note = "memory-runs", at + 1, "took an entity's turn: covers more than it"
    elif adj:
        stage, before, note = "merge", nth, f"memory #{nth} placed at its turn"
    else:
        return
    trace.note(stage, doc_id, before, at, note, adj)


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
    kind_of, table_of = _readers(entities)
    best: dict[str, float] = {}
    for doc_id, score in hits:
        table = table_of(doc_id)
        if table is not None and score > best.get(table, -math.inf):
            best[table] = score
    out = dict(hits)
    for doc_id, score in hits:
        if kind_of(doc_id) in _LEAF_KINDS and (parent := doc_id.rsplit(".", 1)[0]) in best:
            out[doc_id] = (score + best[parent]) / 2
    out.update(best)
    # on equal scores the leaf (the specific evidence) before the table it lifted, then ids
    return sorted(out.items(), key=lambda h: (-h[1], h[0] in best, h[0]))


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
    how). Everything else keeps its order; a moved key's score is lifted just
    above the hit after it (``ranking.pipeline.settle``), so the list stays
    sorted by score and no hit takes another's.
    """
    top = JOIN_KEY_TABLES if top is None else top
    order = join_key_order(
        [f.id for f in fused],
        _readers(entities)[1],
        lambda t: [e for e in edges_out.get(t, ()) if e.type == "JOINS"],
        top,
    )
    if order is None:
        return list(fused)
    out = [fused[i] for i, _ in order]
    shown = settle([g.id for g in out], [g.score for g in out])
    for g, score in zip(out, shown, strict=True):
        g.score = score
    return out


def join_key_order(
    ids: Sequence[str],
    table_of: Callable[[str], str | None],
    joins_of: Callable[[str], Iterable[EdgeRecord]],
    top: int,
    infer: InferJoins | None = None,
) -> list[tuple[int, int]] | None:
    """:func:`join_keys_in_context` on a ranking given as ids (``joins_of``: the JOINS
    edges out of a table; ``infer``: the joins inferred between the first tables, given
    them, their declared joins and the ranked leaves of theirs, see
    :func:`inferred_joins`): the new order as (position, position whose score it
    takes), or None when nothing moves."""
    first: dict[str, int] = {}
    for i, doc_id in enumerate(ids):
        t = table_of(doc_id)
        if t is not None and t not in first:
            first[t] = i
            if len(first) >= top:
                break
    edges = [e for t in first for e in joins_of(t) if e.dst != t and e.dst in first]
    if infer is not None and len(first) > 1:
        ranked = [i for i in ids if i not in first and table_of(i) in first]
        edges += infer(list(first), edges, ranked)
    pos: dict[str, int] | None = None
    moving: dict[str, int] = {}
    for edge in edges:
        t = edge.src
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


@lru_cache(maxsize=100_000)
def _name_keys(name: str) -> tuple[str, ...]:
    """An identifier as one stemmed word (``Time_Slots`` and ``timeslot`` read alike),
    and, when it ends in ``id``, the same less that ending (``RESTAURANT_ID``)."""
    lowered = re.sub(r"[^0-9a-z]", "", name.lower())
    if lowered.endswith("id") and len(lowered) > 2:
        return (stem(lowered), stem(lowered[:-2]))
    return (stem(lowered),)


def inferred_joins(
    tables: Sequence[str],
    declared: Sequence[EdgeRecord],
    ranked: Sequence[str],
    leaves_of: Callable[[str], Sequence[str]],
    entity_of: Callable[[str], Entity | None],
) -> list[EdgeRecord]:
    """The joins between two of ``tables`` (same datasource) that no declared join links,
    inferred from the names of their ``ranked`` leaves (a key no channel ranked does not
    move, so only those are read), as JOINS edges marked ``inferred``.

    Warehouses often declare no foreign keys, and Spider's catalogs miss some
    (``flights.Airline`` holds ``airlines.uid``, undeclared), so the join a question
    needs is invisible to :func:`join_key_order`. The naming convention is
    the rule: a column of T whose name, or its name less a trailing ``id``, is U's
    name (``Airline`` for ``airlines``, ``RESTAURANT_ID`` for ``RESTAURANT``, by
    stem) joins U's single primary-key column, when the two columns' types are of
    one class (number, text, time) or unknown. No name list, no sampled values.
    """
    linked = {frozenset((e.src, e.dst)) for e in declared}
    keys: dict[str, list[str] | None] = {}

    def primary_key(table: str) -> list[str] | None:
        if table not in keys:
            found = []
            for c in leaves_of(table):
                e = entity_of(c)
                if e is not None and e.kind == "column" and e.primary_key:
                    found.append(c)
            keys[table] = found if len(found) == 1 else None
        return keys[table]

    out: list[EdgeRecord] = []
    names = {u: _name_keys(u.rsplit(".", 1)[-1])[0] for u in tables}
    by_table: dict[str, list[str]] = {}
    for c in ranked:
        by_table.setdefault(c.rsplit(".", 1)[0], []).append(c)
    for t in tables:
        ds = t.rsplit(".", 1)[0]
        others = {
            names[u]: u
            for u in tables
            if u != t and u.rsplit(".", 1)[0] == ds and frozenset((t, u)) not in linked
        }
        if not others:
            continue
        for c in by_table.get(t, ()):
            name = c.rsplit(".", 1)[-1]
            u = next((others[k] for k in _name_keys(name) if k in others), None)
            if u is None:
                continue
            col = entity_of(c)
            if col is None or col.kind != "column":
                continue
            pk = primary_key(u)
            if pk is None:
                continue
            target = entity_of(pk[0])
            # (the types' value kinds, names aside: VALUE_NONE when a type is unknown)
            a = value_kind(col.data_type, None)
            b = value_kind(target.data_type if target else None, None)
            if a != VALUE_NONE and b != VALUE_NONE and a != b:
                continue
            out.append(
                EdgeRecord(
                    src=t,
                    dst=u,
                    type="JOINS",
                    props={
                        "source_columns": [name],
                        "target_columns": [pk[0].rsplit(".", 1)[-1]],
                        "inferred": True,
                    },
                )
            )
    return out


#: ``inferred_joins`` with its entity lookups bound: (tables, declared joins, ranked
#: leaves) → inferred joins.
InferJoins = Callable[[Sequence[str], Sequence[EdgeRecord], Sequence[str]], list[EdgeRecord]]


def name_joins(entities: EntityMap) -> InferJoins:
    """:func:`inferred_joins` over a snapshot's entities, for ``join_key_order``'s
    ``infer`` (``EntityRankingConfig.infer_joins`` says whether a search infers)."""

    def leaves_of(table: str) -> list[str]:
        # (the ids one level under the table: its leaves; kinds are read on a match)
        return [i for i in entities.visible_in_scope(table) if i.rsplit(".", 1)[0] == table]

    return partial(inferred_joins, leaves_of=leaves_of, entity_of=entities.get)


def _readers(
    entities: Mapping[str, Entity],
) -> tuple[Callable[[str], str | None], Callable[[str], str | None]]:
    """By id: an entity's kind (None: not an entity), and the visible model a schema
    entity belongs to (itself for a model; None otherwise). A snapshot's
    :class:`EntityMap` answers both without decoding an entity; another mapping decodes."""
    kind_of = getattr(entities, "kind_of", None)
    visible = getattr(entities, "is_visible", None)
    if kind_of is None or visible is None:

        def kind_of(i: str) -> str | None:
            e = entities.get(i)
            return None if e is None else e.kind

        def visible(i: str) -> bool:
            e = entities.get(i)
            return e is not None and not e.hidden

    def table_of(doc_id: str) -> str | None:
        kind = kind_of(doc_id)
        if kind not in _SCHEMA_KINDS:
            return None
        table = doc_id if kind == "model" else doc_id.rsplit(".", 1)[0]
        return table if kind_of(table) == "model" and visible(table) else None

    return kind_of, table_of


def _memory_order(memory_id: str) -> int:
    try:
        return int(memory_id.split(":", 1)[1])
    except (IndexError, ValueError):
        return 0


def visible_tags(tags: Iterable[str], entities: Mapping[str, Entity]) -> list[str]:
    return [t for t in tags if t in entities and not entities[t].hidden]


def ids_by_hash(
    entities: EntityMap, levels: dict[str, int]
) -> Callable[[Sequence[int | None]], list[str | None]]:
    """Full-text hits → entity ids, read from the snapshot by the documents' key hash
    (None for the others: memories, and documents newer than the snapshot, are read
    from the index); each id found has its fusion level recorded in ``levels``."""
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
