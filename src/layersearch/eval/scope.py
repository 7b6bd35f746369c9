"""One search across every corpus (``scope``) against the agent calling each tool.

A mixed store is built from data that exists: the bundled semantic layer
(``models/``) with its memories, the LoCoMo conversations (imported as ``eval
conversations`` imports them), the vault fixture ``eval vault`` uses, and the
memories and vault notes of ``eval/data/scope/`` written for this evaluation
(they read LoCoMo conversation 30, Jon and Gina starting a dance studio and an
online clothing store, as merchant interviews of an analytics team and tie them
to the layer). Every labelled query of ``eval/data/scope/queries.jsonl`` names
its relevant ids in two or more sources:

- ``semantic``: entity ids (``shop.orders.net_revenue``);
- ``memory``: a piece of the memory's learning text that matches exactly one
  memory (so labels cannot drift with ``memory:N`` numbering);
- ``conversation``: ``{"conv_id": "locomo:30", "turn_id": "D2:1"}`` (the LoCoMo
  ``dia_id``; resolved to the stored message id);
- ``vault``: note slugs (``Metrics/Net revenue``).

Two runs are scored with recall@10, per source and overall (macro over queries):

- ``baseline``: the union of each tool's top 10, the way an agent calls them one
  by one: ``search`` (default scope: entities and memories), conversation message
  search, vault search;
- ``scope_all``: ``search(question=…, scope="all", max_results=10)``. When the
  installed search does not take ``scope`` yet, the run is reported as
  unsupported, with the reason, and only the baseline is scored.

Beside them, ``best_split`` (with ``scope_all``): per query, the ten places split
among the best single-source calls' own top 10s so as to hold the most relevant
items, chosen with the labels (:func:`best_split`); what ten places drawn from the
tops of those lists could hold at most. And ``own_split``: the same over the lists
``scope=all`` itself fuses (``ScopeService.source_lists``: the entity list with the
best memory's tags lifted and joined), what its fusion could hold at most.
Diagnostics, never ranking inputs.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersearch.errors import ConfigError, NotFound
from layersearch.eval.jsonl import json_lines

if TYPE_CHECKING:
    from layersearch.api import Layersearch
    from layersearch.embed.base import Embedder

__all__ = [
    "DEFAULT_MEMORIES",
    "DEFAULT_MODELS",
    "DEFAULT_NOTES",
    "DEFAULT_QUERIES",
    "DEFAULT_VAULT",
    "DEPTH",
    "SOURCES",
    "MixedStore",
    "ScopeQuery",
    "best_split",
    "build_mixed_store",
    "default_locomo",
    "evaluate_scope",
    "gold_keys",
    "read_extra_memories",
    "read_scope_queries",
    "run_baseline",
    "run_own_lists",
    "run_scope_all",
    "run_single_sources",
    "score",
    "scope_supported",
    "select_half",
    "stage_switches",
    "validate_queries",
]

log = logging.getLogger("layersearch.eval.scope")

_REPO = Path(__file__).resolve().parents[3]
_DATA = Path(__file__).resolve().parent / "data" / "scope"
DEFAULT_QUERIES = _DATA / "queries.jsonl"
DEFAULT_MEMORIES = _DATA / "memories.jsonl"
DEFAULT_NOTES = _DATA / "vault"
DEFAULT_MODELS = _REPO / "models"
DEFAULT_VAULT = _REPO / "fixtures" / "vault"
#: the sources of the scope contract, in report order
SOURCES = ("semantic", "memory", "conversation", "vault")
#: how deep each tool (and scope=all) is read
DEPTH = 10
#: the halves of the labelled set: A the odd lines (1st, 3rd, …), B the even lines, so
#: each half holds queries of every topic of the file (layer, vault, conversation 30)
HALVES = ("A", "B")


def default_locomo() -> Path:
    """``$LAYERSEARCH_SHARED_DATA/locomo``, else ``shared/data/locomo`` beside the checkout
    (or beside its parent folder, for a worktree)."""
    env = os.environ.get("LAYERSEARCH_SHARED_DATA")
    if env:
        return Path(env) / "locomo"
    for base in (_REPO.parent, _REPO.parent.parent):
        candidate = base / "shared" / "data" / "locomo"
        if candidate.exists():
            return candidate
    return _REPO.parent / "shared" / "data" / "locomo"


# -- the labelled queries ----------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeQuery:
    """One labelled query: its text and, per source, the labels of its relevant items."""

    id: str
    query: str
    relevant: Mapping[str, tuple[Any, ...]]


def read_scope_queries(path: str | Path = DEFAULT_QUERIES) -> list[ScopeQuery]:
    """Read and check a labelled query file; each error names the line."""
    out: list[ScopeQuery] = []
    seen: set[str] = set()
    for n, where, item in json_lines(path, "query file"):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise ConfigError(f"{where}: expected an object with a 'query' string")
        if not item["query"].strip():
            raise ConfigError(f"{where}: 'query' is empty")
        qid = item.get("id", f"line{n}")
        if not isinstance(qid, str) or qid in seen:
            raise ConfigError(f"{where}: 'id' must be a string not used before, got {qid!r}")
        seen.add(qid)
        relevant = item.get("relevant")
        if not isinstance(relevant, dict):
            raise ConfigError(f"{where}: 'relevant' must be an object of source → labels")
        unknown = sorted(set(relevant) - set(SOURCES))
        if unknown:
            raise ConfigError(
                f"{where}: unknown source(s) {', '.join(unknown)}: use " + ", ".join(SOURCES)
            )
        labels: dict[str, tuple[Any, ...]] = {}
        for source in SOURCES:
            values = relevant.get(source)
            if values is None:
                continue
            if not isinstance(values, list) or not values:
                raise ConfigError(f"{where}: relevant {source} must be a non-empty list")
            for v in values:
                _check_label(where, source, v)
            labels[source] = tuple(values)
        if len(labels) < 2:
            raise ConfigError(
                f"{where}: relevant items in {len(labels)} source(s); each query needs two or more"
            )
        out.append(ScopeQuery(qid, item["query"], labels))
    if not out:
        raise ConfigError(f"{path}: no queries")
    return out


def _check_label(where: str, source: str, value: Any) -> None:
    if source == "conversation":
        ok = (
            isinstance(value, dict)
            and set(value) == {"conv_id", "turn_id"}
            and all(isinstance(v, str) and v for v in value.values())
        )
        if not ok:
            raise ConfigError(
                f"{where}: a conversation label is {{'conv_id': str, 'turn_id': str}}, "
                f"got {value!r}"
            )
    elif not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: a {source} label must be a non-empty string, got {value!r}")


def select_half(queries: Sequence[ScopeQuery], half: str | None) -> list[ScopeQuery]:
    """Half ``A`` (the odd lines of the file) or ``B`` (the even lines) of ``queries``;
    None: all of them. A rule is chosen on one half and confirmed on the other."""
    if half is None:
        return list(queries)
    key = half.strip().upper()
    if key not in HALVES:
        raise ConfigError(f"unknown half {half!r}: use A (odd lines) or B (even lines)")
    return list(queries[HALVES.index(key) :: 2])


def read_extra_memories(path: str | Path = DEFAULT_MEMORIES) -> list[dict[str, Any]]:
    """The memories written for this evaluation: JSON lines of ``save_memories`` items."""
    items = []
    for _n, where, item in json_lines(path, "memory file"):
        if not isinstance(item, dict) or not isinstance(item.get("learning"), str):
            raise ConfigError(f"{where}: expected an object with a 'learning' string")
        items.append(item)
    return items


# -- the mixed store ---------------------------------------------------------------------------


@dataclass
class MixedStore:
    """What the evaluation needs to know of the built store to turn labels into ids."""

    memories: dict[str, str]  # memory id → learning text
    turns: dict[tuple[str, str], str]  # (conv_id, turn_id) → message id
    entities: set[str]
    slugs: set[str]
    counts: dict[str, int] = field(default_factory=dict)


def build_mixed_store(
    ls: Layersearch,
    *,
    locomo: str | Path,
    models: str | Path = DEFAULT_MODELS,
    vault: str | Path = DEFAULT_VAULT,
    notes: str | Path | None = DEFAULT_NOTES,
    memories: str | Path | None = DEFAULT_MEMORIES,
    workdir: str | Path,
    progress: Callable[[str], None] | None = None,
) -> MixedStore:
    """Load every corpus into ``ls``; the vault and ``notes`` are copied into
    ``workdir`` first (one vault), so neither folder is written to."""
    from layersearch.corpora.conversations.locomo import import_locomo

    say = progress or (lambda _msg: None)
    locomo = Path(locomo)
    if not locomo.exists():
        raise NotFound(
            f"LoCoMo data {str(locomo)!r} does not exist (pass --locomo or set "
            "LAYERSEARCH_SHARED_DATA)"
        )
    say(f"loading {models}")
    ls.load(models)
    if memories is not None:
        ls.save_memories(read_extra_memories(memories))
    say(f"importing {locomo}")
    imported = import_locomo(locomo)
    ls.conversations.import_conversations(imported.conversations, problems=imported.problems)
    root = Path(workdir) / "vault"
    for folder in (vault, notes):
        if folder is None:
            continue
        if not Path(folder).is_dir():
            raise NotFound(f"vault folder {str(folder)!r} does not exist")
        shutil.copytree(folder, root, dirs_exist_ok=True)
    say("indexing the vault")
    ls.vault.index(root)
    if ls.embedder is not None:
        say("embedding entities, memories and messages")
        ls.embed()
        ls.conversations.embed()
    corpus = ls.corpus()
    mems = {m.id: m.learning for m in ls.list_memories(limit=100_000)}
    turns: dict[tuple[str, str], str] = {}
    for conv in imported.conversations:
        for m in conv.messages:
            if m.turn_id:
                turns[(conv.id, m.turn_id)] = m.id
    slugs = _vault_slugs(ls)
    return MixedStore(
        memories=mems,
        turns=turns,
        entities={str(e) for e in corpus.entities},
        slugs=slugs,
        counts={
            "entities": len(corpus.entities),
            "memories": len(mems),
            "conversations": len(imported.conversations),
            "messages": sum(len(c.messages) for c in imported.conversations),
            "vault_notes": len(slugs),
        },
    )


def _vault_slugs(ls: Layersearch) -> set[str]:
    from layersearch.corpora.vault.store import all_slugs

    return set(all_slugs(ls.store))


def gold_keys(q: ScopeQuery, store: MixedStore) -> dict[str, set[str]]:
    """Per source, the ids of ``q``'s relevant items as hits name them; unresolvable
    labels raise :class:`ConfigError` (see :func:`validate_queries`)."""
    problems: list[str] = []
    out = _resolve(q, store, problems)
    if problems:
        raise ConfigError(f"query {q.id}: " + "; ".join(problems))
    return out


def _resolve(q: ScopeQuery, store: MixedStore, problems: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for source, labels in q.relevant.items():
        keys: set[str] = set()
        for label in labels:
            if source == "semantic":
                if label in store.entities:
                    keys.add(label)
                else:
                    problems.append(f"no entity {label!r}")
            elif source == "memory":
                found = [mid for mid, text in store.memories.items() if label in text]
                if len(found) == 1:
                    keys.add(found[0])
                else:
                    what = "no memory" if not found else f"{len(found)} memories"
                    problems.append(f"{what} with learning text containing {label!r}")
            elif source == "conversation":
                mid = store.turns.get((label["conv_id"], label["turn_id"]))
                if mid is None:
                    problems.append(
                        f"no turn {label['turn_id']} in conversation {label['conv_id']}"
                    )
                else:
                    keys.add(_conv_key(label["conv_id"], mid))
            elif label in store.slugs:
                keys.add(_vault_key(label))
            else:
                problems.append(f"no vault note {label!r}")
        out[source] = keys
    return out


def validate_queries(queries: Iterable[ScopeQuery], store: MixedStore) -> list[str]:
    """Every label that does not name exactly one item of the store, as ``id: problem``."""
    problems: list[str] = []
    for q in queries:
        mine: list[str] = []
        _resolve(q, store, mine)
        problems.extend(f"{q.id}: {p}" for p in mine)
    return problems


def _conv_key(conv_id: str, message_id: str) -> str:
    """The hit id a scoped search gives the message (``conv_id`` is in ``message_id``)."""
    from layersearch.corpora.scope import conversation_hit_id

    return conversation_hit_id(message_id)


def _vault_key(slug: str) -> str:
    return f"vault:{slug}"


# -- the two runs ------------------------------------------------------------------------------


def run_baseline(ls: Layersearch, question: str, warnings: list[str]) -> dict[str, list[str]]:
    """Each tool's top :data:`DEPTH`, as keys: ``search`` (entities and memories),
    conversation message search, vault search (hybrid: full text without an embedder)."""
    hits = ls.search(question=question, max_results=DEPTH).results
    conv = ls.conversations.search_messages(question, DEPTH)
    for w in conv.warnings:
        if w not in warnings:
            warnings.append(w)
    vault_warnings: list[str] = []
    notes = ls.vault.search(question, limit=DEPTH, mode="hybrid", warnings=vault_warnings)
    for w in vault_warnings:
        if w not in warnings:
            warnings.append(w)
    return {
        "search": [h.id for h in hits],
        "conversations": [_conv_key(h.conversation_id, h.message_id) for h in conv.hits],
        "vault": [_vault_key(h.slug) for h in notes],
    }


def scope_supported(ls: Layersearch) -> str | None:
    """None when ``search`` takes ``scope="all"`` and its hits carry ``source``, else why
    not (from a real call)."""
    try:
        res = ls.search(question="revenue", scope="all", max_results=DEPTH)
    except (ConfigError, TypeError) as exc:
        if "scope" not in str(exc):
            raise
        return f"search does not take scope yet ({exc})"
    if res.results and not all(getattr(h, "source", None) for h in res.results):
        return "search took scope='all' but its hits carry no 'source'"
    return None


def run_scope_all(ls: Layersearch, question: str) -> list[str]:
    """``search(scope="all")``'s top :data:`DEPTH` as keys (per the scope contract)."""
    res = ls.search(question=question, scope="all", max_results=DEPTH)
    return [_hit_key(h) for h in res.results]


def run_single_sources(ls: Layersearch, question: str) -> dict[str, list[str]]:
    """Each source's own top :data:`DEPTH` as keys, from ``search`` scoped to it (the
    best single-source call): entities (``scope="semantic"``, up to :data:`DEPTH` of
    them), memories, conversation messages, vault notes. A source with nothing loaded
    has an empty list."""
    found = ls.search(
        question=question, scope="semantic", max_results=2 * DEPTH, max_per_source=DEPTH
    )
    from layersearch.corpora.registry import by_source

    out = {"semantic": [_hit_key(h) for h in found.results if h.source == "semantic"]}
    for source in SOURCES[1:]:  # each alone, by its name in ``scope``
        out[source] = _scoped_keys(ls, question, by_source(source).scope)
    return out


def run_own_lists(ls: Layersearch, question: str) -> dict[str, list[str]]:
    """The per-source lists ``search(scope="all", max_results=DEPTH)`` fuses, as keys
    (each :data:`DEPTH` deep at most)."""
    from layersearch.types import SearchRequest

    req = SearchRequest.model_validate({"question": question, "scope": "all", "max_results": DEPTH})
    return {s: [_hit_key(h) for h in hits] for s, hits in ls.scope.source_lists(req).items()}


def _scoped_keys(ls: Layersearch, question: str, scope: str) -> list[str]:
    try:
        res = ls.search(question=question, scope=scope, max_results=DEPTH)
    except NotFound:  # nothing of this corpus in the store
        return []
    return [_hit_key(h) for h in res.results]


def best_split(
    gold: Mapping[str, set[str]], lists: Mapping[str, Sequence[str]], places: int = DEPTH
) -> dict[str, Any]:
    """The split of ``places`` among the sources' lists (each source's top n, the ns
    summing to at most ``places``) that holds the most of ``gold``, chosen with the
    labels: what a fused list of ``places`` drawn from the tops of these lists could
    hold at most. Scored as :func:`score`, with ``places`` per source. Among splits
    holding as much, the one using fewer places, then the one giving more places to the
    earlier sources of :data:`SOURCES`."""
    wanted = set().union(*gold.values()) if gold else set()
    tops = {s: list(dict.fromkeys(lists.get(s, ())))[:places] for s in SOURCES}
    # best[c]: (gold held, places per source) using c places over the sources so far
    best: dict[int, tuple[int, tuple[int, ...]]] = {0: (0, ())}
    for source in SOURCES:
        ranked = tops[source]
        held = [0]
        for key in ranked:
            held.append(held[-1] + (key in wanted))
        nxt: dict[int, tuple[int, tuple[int, ...]]] = {}
        for used, (got, split) in sorted(best.items()):
            for n in range(min(len(ranked), places - used) + 1):
                cand = (got + held[n], (*split, n))
                # the same places used: the suffix of the remaining sources is the same,
                # so the larger (gold held, split) here stays the larger at the end
                if used + n not in nxt or cand > nxt[used + n]:
                    nxt[used + n] = cand
        best = nxt
    _used, (_got, split) = max(best.items(), key=lambda kv: (kv[1][0], -kv[0], kv[1][1]))
    taken = dict(zip(SOURCES, split, strict=True))
    found = [k for s in SOURCES for k in tops[s][: taken[s]]]
    return {**score(gold, found), "places": {s: n for s, n in taken.items() if n}}


def _hit_key(hit: Any) -> str:
    source = getattr(hit, "source", None)
    if source == "conversation":
        conv_id, message_id = getattr(hit, "conv_id", None), getattr(hit, "message_id", None)
        if conv_id and message_id:
            return _conv_key(conv_id, message_id)
    if source == "vault":
        slug = getattr(hit, "slug", None)
        if slug:
            return _vault_key(slug)
    return str(hit.id)


def score(gold: Mapping[str, set[str]], found: Iterable[str]) -> dict[str, Any]:
    """Per source the found / relevant counts, and the query's overall recall."""
    got = set(found)
    per = {s: (len(keys & got), len(keys)) for s, keys in gold.items()}
    hit = sum(f for f, _ in per.values())
    total = sum(t for _, t in per.values())
    return {
        "per_source": {s: round(f / t, 4) for s, (f, t) in per.items()},
        "recall": round(hit / total, 4),
        "missing": sorted(k for keys in gold.values() for k in keys - got),
    }


def _summarise(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(scores)
    out: dict[str, Any] = {"recall@10": round(sum(s["recall"] for s in scores) / n, 4)}
    per: dict[str, dict[str, Any]] = {}
    for source in SOURCES:
        values = [s["per_source"][source] for s in scores if source in s["per_source"]]
        per[source] = {
            "queries": len(values),
            "recall@10": round(sum(values) / len(values), 4) if values else None,
        }
    out["per_source"] = per
    return out


#: the runs a query's record scores, in the order of the report
_RUNS = ("baseline", "scope_all", "best_split", "own_split")


def _score_query(
    ls: Layersearch, q: ScopeQuery, store: MixedStore, warnings: list[str], *, scope: bool
) -> dict[str, Any]:
    """One query's record: its gold keys, the baseline's score and tools' ranked keys,
    and (with ``scope``) the score and ranked keys of ``scope=all``."""
    gold = gold_keys(q, store)
    tools = run_baseline(ls, q.query, warnings)
    union = [k for ranked in tools.values() for k in ranked]
    record: dict[str, Any] = {
        "id": q.id,
        "query": q.query,
        "gold": {s: sorted(k) for s, k in gold.items()},
        "baseline": {**score(gold, union), "tools": tools},
    }
    if scope:
        record["best_split"] = best_split(gold, run_single_sources(ls, q.query))
        record["own_split"] = best_split(gold, run_own_lists(ls, q.query))
        ranked = run_scope_all(ls, q.query)
        scored = score(gold, ranked)
        record["scope_all"] = {
            **scored,
            "ranked": ranked,
            "places": _places(ranked),
            "misses": _misses(scored["missing"], gold, tools),
        }
    return record


def _source_of(key: str) -> str:
    """The source of a hit key: the corpus its prefix names (an entity without one)."""
    from layersearch.corpora.registry import corpus_of_id

    return corpus_of_id(key).source


def _own_rank(key: str, source: str, tools: Mapping[str, list[str]]) -> int | None:
    """``key``'s rank among its own source's hits in the tool that holds the source
    (entities and memories each ranked among their kind in ``search``); None when that
    tool's top :data:`DEPTH` does not have it."""
    tool = {"conversation": "conversations", "vault": "vault"}.get(source, "search")
    mine = [k for k in tools[tool] if tool != "search" or _source_of(k) == source]
    return mine.index(key) + 1 if key in mine else None


def _places(ranked: Sequence[str]) -> dict[str, int]:
    """How many of scope=all's places each source took, in :data:`SOURCES` order."""
    taken = [_source_of(k) for k in ranked]
    return {s: taken.count(s) for s in SOURCES if s in taken}


def _misses(
    missing: Sequence[str], gold: Mapping[str, set[str]], tools: Mapping[str, list[str]]
) -> list[dict[str, Any]]:
    """Each relevant item scope=all missed: its source and its rank in its own tool's
    top :data:`DEPTH` (None: the tool missed it too, no split of the places finds it)."""
    out = []
    for key in missing:
        source = next(s for s, keys in gold.items() if key in keys)
        out.append({"id": key, "source": source, "own_rank": _own_rank(key, source, tools)})
    return out


def stage_switches(without: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """``--without``'s stage names split into (the entity search's, scope=all's); an
    unknown name is a ConfigError listing both pipelines' stages (and the closest)."""
    import difflib

    from layersearch.corpora.entities.config import EntityRankingConfig
    from layersearch.corpora.scope_places import ScopeRankingConfig

    entity, scope = EntityRankingConfig.PIPELINE_STAGES, ScopeRankingConfig.PIPELINE_STAGES
    names = frozenset(without)
    for name in sorted(names - set(entity) - set(scope)):
        close = difflib.get_close_matches(name, [*scope, *entity], n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(
            f"unknown ranking stage '{name}'{hint}; scope=all's: {', '.join(scope)}; "
            f"the entity search's: {', '.join(entity)}"
        )
    return names & set(entity), names & set(scope)


def _score_queries(
    ls: Layersearch,
    items: Sequence[ScopeQuery],
    store: MixedStore,
    warnings: list[str],
    scope: bool,
    details: Callable[[dict[str, Any]], None] | None,
    progress: Callable[[str, int, int], None] | None,
) -> dict[str, list[dict[str, Any]]]:
    """Each run's per-query scores (:data:`_RUNS`), each record passed to ``details``."""
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in _RUNS}
    for i, q in enumerate(items, start=1):
        record = _score_query(ls, q, store, warnings, scope=scope)
        for run, scores in runs.items():
            if run in record:
                scores.append(record[run])
        if details is not None:
            details(record)
        if progress is not None:
            progress("queries", i, len(items))
    return runs


def _switch_off(ls: Layersearch, entity: Iterable[str], scope: Iterable[str]) -> list[str]:
    """Switch those stages off in ``ls``; every stage now off, sorted."""
    ls.entities.ranking = ls.entities.ranking.without_stages(entity)
    ls.scope.config = ls.scope.config.without_stages(scope)
    return sorted(ls.entities.ranking.without | ls.scope.config.without)


def evaluate_scope(
    *,
    locomo: str | Path | None = None,
    queries: str | Path = DEFAULT_QUERIES,
    models: str | Path = DEFAULT_MODELS,
    vault: str | Path = DEFAULT_VAULT,
    notes: str | Path | None = DEFAULT_NOTES,
    memories: str | Path | None = DEFAULT_MEMORIES,
    embedder: str | Embedder | None = None,
    embedder_config: dict[str, Any] | None = None,
    limit: int | None = None,
    half: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    status: Callable[[str], None] | None = None,
    details: Callable[[dict[str, Any]], None] | None = None,
    without: Iterable[str] = (),
    ranking: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build the mixed store in a temporary folder and score both runs.

    ``ranking``: the corpora's ranking settings (``[ranking.<corpus>]``); ``without``:
    stages switched off as well, of scope=all's places or of the entity search
    (:func:`stage_switches`).

    ``half`` (``A``: the odd lines of ``queries``, ``B``: the even lines) is taken before
    ``limit``. Returns ``queries``, ``half``, the store's ``counts``, the runs
    ``baseline``, ``scope_all``, ``best_split`` and ``own_split`` (each ``recall@10``
    overall and ``per_source``; all but ``baseline`` None when scope is unsupported, with
    ``scope_unsupported`` saying why) and ``warnings``."""
    from layersearch.api import Layersearch

    entity_off, scope_off = stage_switches(without)
    items = select_half(read_scope_queries(queries), half)[:limit]
    with (
        tempfile.TemporaryDirectory(prefix="layersearch-scope-") as tmp,
        Layersearch(
            Path(tmp) / "store.duckdb",
            embedder=embedder,
            embedder_config=embedder_config,
            ranking=ranking,
        ) as ls,
    ):
        off = _switch_off(ls, entity_off, scope_off)
        store = build_mixed_store(
            ls,
            locomo=locomo if locomo is not None else default_locomo(),
            models=models,
            vault=vault,
            notes=notes,
            memories=memories,
            workdir=tmp,
            progress=status,
        )
        problems = validate_queries(items, store)
        if problems:
            raise ConfigError(
                f"{len(problems)} label(s) name nothing in the store: " + "; ".join(problems[:10])
            )
        model = ls.embedder.fingerprint.describe() if ls.embedder is not None else "none"
        warnings: list[str] = []
        unsupported = scope_supported(ls)
        if unsupported:
            warnings.append(f"scope=all not run: {unsupported}; baseline only")
        runs = _score_queries(ls, items, store, warnings, not unsupported, details, progress)
    return {
        "queries": len(items),
        "half": half.strip().upper() if half is not None else None,
        "counts": store.counts,
        "embedder": model,
        "without": off,
        **{run: _summarise(scores) if scores else None for run, scores in runs.items()},
        "scope_unsupported": unsupported,
        "warnings": warnings,
    }
