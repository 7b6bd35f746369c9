"""One datasource's schema index cut from the catalog-wide one, and the bridges of a wide
index restricted to a narrower one's terms.

A search confined to one datasource ranks with that datasource's own term statistics
(``CorpusIndexes.coverage``), so it needs an index of its own. Building it from the
entities decodes and analyses each of them again (a quarter of a second for a warehouse
database of 3,000 columns); :func:`within` takes the nodes, their terms and joins from
the wide index instead and builds only what depends on the group's statistics.
:func:`own_terms` reads a node's own terms off an index the same way.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from layersearch.ranking.coverage_terms import Forward
from layersearch.ranking.persist import sorted_position

if TYPE_CHECKING:
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Abbreviations

__all__ = ["SynonymArrays", "bridges_for", "inverted", "within"]

#: Per index: its ``str → int`` maps inverted (:func:`inverted`)
_INVERTED: weakref.WeakKeyDictionary[CoverageIndex, dict[str, list[str]]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def within(wide: CoverageIndex, group: str) -> CoverageIndex:
    """The index of one group (a datasource: its node and the nodes under ``group.``),
    cut from the catalog-wide ``wide`` without reading an entity again: the arrays that
    building from those nodes gives (the same terms, their ids by first appearance, idf
    and BM25 statistics over the group alone, the joins within it), with ``wide``'s
    bridges for its terms (none when ``wide`` was built without). A node counts as a key
    as it does in ``wide``: a column another datasource joins to stays one."""
    ids = wide.ids
    lo, hi = sorted_position(ids, group + "."), sorted_position(ids, group + "/")
    at = sorted_position(ids, group)
    head = [at] if at < len(ids) and ids[at] == group else []
    sel = np.array(head + list(range(lo, hi)), dtype=np.int64)
    take = getattr(ids, "take", None)  # a mapped index's ids decode in one pass
    sub_ids = take(sel) if take is not None else [ids[i] for i in sel.tolist()]
    level = np.asarray(wide.level[sel])
    index = {node_id: i for i, node_id in enumerate(sub_ids)}
    parent = np.array(
        [
            index.get(node_id.rsplit(".", 1)[0], -1) if lv else -1
            for node_id, lv in zip(sub_ids, level.tolist(), strict=True)
        ],
        dtype=np.int64,
    )
    # the forward index of the selected nodes, terms renumbered by first appearance
    starts = wide.fwd_ptr[sel]
    lens = wide.fwd_ptr[sel + 1] - starts
    ptr = np.zeros(len(sel) + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    entry = np.arange(int(ptr[-1])) - np.repeat(ptr[:-1], lens) + np.repeat(starts, lens)
    old = wide.fwd_term[entry].astype(np.int64)
    uniq, first = np.unique(old, return_index=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    words = inverted(wide, "vocab")
    theirs = uniq[order].tolist()  # the wide index's term of each of the group's terms
    vocab = {words[j]: k for k, j in enumerate(theirs)}
    term = rank[np.searchsorted(uniq, old)].astype(np.int32)
    forward = Forward(
        vocab,
        ptr,
        term,
        np.asarray(wide.fwd_code[entry]),
        np.asarray(wide.field_w),
        np.asarray(wide.fwd_own[entry]),
    )
    # the joins within the group, from the wide index's table pairs: its tables are the
    # compact numbers t_lo..t_hi (nodes lo..hi), and the pairs are sorted by source
    t_lo, t_hi = np.searchsorted(wide.table_nodes, [lo, hi]).tolist()
    r_lo, r_hi = np.searchsorted(wide.nb_src, [t_lo, t_hi]).tolist()
    src, dst = np.asarray(wide.nb_src[r_lo:r_hi]), np.asarray(wide.nb_dst[r_lo:r_hi])
    inside = (dst >= t_lo) & (dst < t_hi)
    shift = len(head) - lo  # a node of lo..hi is at len(head) + (node - lo) in the cut
    node_src = wide.table_nodes[src[inside]] + shift
    node_dst = wide.table_nodes[dst[inside]] + shift
    links = list(zip(node_src.tolist(), node_dst.tolist(), strict=True))
    out = type(wide).__new__(type(wide))
    out.settings = wide.settings
    keys, kinds = np.asarray(wide.is_key[sel]), np.asarray(wide.value_kind[sel])
    out._build(sub_ids, level, parent, forward, links, keys, kinds)
    out._build_bridges((), wide, terms={j: k for k, j in enumerate(theirs)})
    return out


#: question-side bridges as arrays: the keys (question tokens), a CSR pointer over them,
#: and each entry's term and weight, a key's entries sorted by (term, weight)
SynonymArrays = tuple[list[str], np.ndarray, np.ndarray, np.ndarray]


def bridges_for(
    wide: CoverageIndex, vocab: Mapping[str, int], terms: Mapping[int, int] | None = None
) -> tuple[Abbreviations, SynonymArrays]:
    """``wide``'s bridges restricted to the terms of ``vocab``, in ``vocab``'s term ids
    (``terms``: ``wide``'s term id → ``vocab``'s, when known; else looked up): a key keeps
    the entries whose term ``vocab`` has, and only a key with one is kept, in ``wide``'s
    key order. In arrays, not a key at a time: a Spider-sized catalog has ~7,000 keys,
    and a datasource's first search cut them all."""
    mine = (
        {j: vocab[t] for t in vocab if (j := wide.vocab.get(t)) is not None}
        if terms is None
        else terms
    )
    ours = np.fromiter(mine, dtype=np.int64, count=len(mine))
    abbr: Abbreviations = ([], [], [])
    for i in np.flatnonzero(np.isin(wide.abbr_term, ours)).tolist():
        abbr[0].append(wide.abbr_parts[i])
        abbr[1].append(mine[int(wide.abbr_term[i])])
        abbr[2].append(bool(wide.abbr_word[i]))
    their = np.asarray(wide.bridge_term, dtype=np.int64)
    if not len(their) or not len(ours):
        return abbr, ([], np.zeros(1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0))
    lut = np.full(max(int(their.max()), int(ours.max())) + 1, -1, dtype=np.int64)
    lut[ours] = np.fromiter(mine.values(), dtype=np.int64, count=len(mine))
    entry = np.flatnonzero(lut[their] >= 0)
    row = np.searchsorted(wide.bridge_ptr, entry, side="right") - 1
    term = lut[their[entry]]
    weight = np.asarray(wide.bridge_w, dtype=np.float64)[entry]
    order = np.lexsort((weight, term, row))  # by key, then as sorted (term, weight) pairs
    row, term, weight = row[order], term[order], weight[order]
    kept, counts = np.unique(row, return_counts=True)
    names = inverted(wide, "bridge_row")
    ptr = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return abbr, ([names[r] for r in kept.tolist()], ptr, term, weight)


def inverted(index: CoverageIndex, name: str) -> list[str]:
    """A ``str → int`` attribute of ``index`` (``vocab``, ``bridge_row``) as the list of
    its keys by value, computed once per index."""
    with _LOCK:
        done = _INVERTED.setdefault(index, {}).get(name)
    if done is None:
        mapping: Mapping[str, int] = getattr(index, name)
        done = [""] * len(mapping)
        for key, value in mapping.items():
            done[value] = key
        with _LOCK:
            _INVERTED[index][name] = done
    return done


def own_terms(index: CoverageIndex, node_id: str) -> frozenset[int] | None:
    """The terms of a node's own name, label and description (``coverage_terms.
    OWN_FIELDS``), from the forward index; None for an id the index does not hold."""
    ids = index.ids
    i = sorted_position(ids, node_id)
    if i >= len(ids) or ids[i] != node_id:
        return None
    a, b = int(index.fwd_ptr[i]), int(index.fwd_ptr[i + 1])
    return frozenset(index.fwd_term[a:b][index.fwd_own[a:b]].tolist())
