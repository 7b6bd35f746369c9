"""Example-query retrieval: do saved examples come back when their question is asked?

For each pair (``db_id``, ``question``, ``original_question``, ``sql``,
``gold_tables``, ``gold_columns``; Spider-Syn's rows have exactly these), the
pair's ``original_question`` is saved with its SQL as an example-query memory
tagged with the gold ids, and ``question`` (or ``original_question``, with
``ask="original_question"``) is asked in catalog mode through
:meth:`Layersearch.search`, the path the CLI and the MCP tool take.

Reported, as macro averages over the pairs:

- ``example@k`` (k = 1, 5, 10): the pair's own memory is among the first k hits
  of ``results`` (the merged list an agent reads);
- ``memory_mrr``: the reciprocal rank of the pair's own memory in ``results``
  (0 when it is not among the first 100);
- ``same_query@k``: some saved example with the pair's SQL (case and white space
  folded) is among the first k: Spider asks many questions twice in other words,
  and an example with the same SQL answers the agent as well as its own;
- ``table_recall@5`` with the memories present and without them (the same
  questions asked before anything is saved), and their difference: saved
  examples must not push the right tables out.

A pair whose gold ids do not all resolve against the catalog is saved with the
ids that do (``unresolved_tags`` counts the others).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.eval.metrics import recall_at_k
from layersearch.eval.schema_linking import SEARCH_DEPTH, ranked_links
from layersearch.types import SearchRequest

__all__ = ["ASK_FIELDS", "EXAMPLE_KS", "ExamplesResult", "read_pairs", "run_examples"]

EXAMPLE_KS = (1, 5, 10)
ASK_FIELDS = ("question", "original_question")
PAIR_FIELDS = ("db_id", "question", "original_question", "sql", "gold_tables", "gold_columns")


@dataclass
class ExamplesResult:
    """The metrics, the per-pair rows and the timings of one run."""

    metrics: dict[str, float | int]
    details: list[dict[str, Any]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    save_seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        p50 = statistics.median(lat) if lat else 0.0
        return {
            **self.metrics,
            "search_p50_ms": round(p50, 3),
            "save_s": round(self.save_seconds, 3),
        }


def read_pairs(path: str | Path) -> list[dict[str, Any]]:
    """The pairs of a JSONL file; anything malformed names ``file:line``."""
    from layersearch.eval.spider import read_jsonl

    p = Path(path)
    pairs = []
    for where, row in read_jsonl(p, "pairs"):
        if not isinstance(row, dict):
            raise ConfigError(f"{where}: expected an object with {', '.join(PAIR_FIELDS)}")
        missing = [k for k in PAIR_FIELDS if k not in row]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        for key in ("db_id", "question", "original_question", "sql"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise ConfigError(f"{where}: '{key}' must be a non-empty string")
        for key in ("gold_tables", "gold_columns"):
            if not isinstance(row[key], list) or not all(isinstance(x, str) for x in row[key]):
                raise ConfigError(f"{where}: '{key}' must be a list of ids")
        pairs.append(row)
    if not pairs:
        raise ConfigError(f"{p}: no pairs")
    return pairs


def run_examples(
    ls: Any,
    pairs: Sequence[dict[str, Any]],
    *,
    ask: str = "question",
    channels: list[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ExamplesResult:
    """Save the pairs as example queries on an open store holding their catalog, ask
    them, and measure (see the module docstring). ``progress(stage, done, total)``."""
    if ask not in ASK_FIELDS:
        raise ConfigError(f"ask must be one of {', '.join(ASK_FIELDS)}, not {ask!r}")
    if not pairs:
        raise ConfigError("no pairs to evaluate")
    if ls.corpus().memories:
        raise ConfigError("the evaluation store must start without memories")
    known = set(ls.corpus().datasources)
    for i, pair in enumerate(pairs):
        if pair["db_id"] not in known:
            raise ConfigError(f"pair {i}: db_id '{pair['db_id']}' is not in the catalog")
    total = len(pairs)

    def ask_all(stage: str) -> tuple[list[Any], list[float]]:
        out, lat = [], []
        for n, pair in enumerate(pairs, start=1):
            req = SearchRequest.model_validate(
                {"question": pair[ask], "max_results": SEARCH_DEPTH, "channels": channels}
            )
            t0 = time.perf_counter()
            out.append(ls.search(req).results)
            lat.append((time.perf_counter() - t0) * 1000)
            if progress is not None:
                progress(stage, n, total)
        return out, lat

    without, _ = ask_all("asking without memories")
    items, unresolved = _memory_items(ls, pairs)
    t0 = time.perf_counter()
    saved = ls.save_memories(items)
    save_seconds = time.perf_counter() - t0
    if progress is not None:
        progress("saving examples", total, total)
    with_memories, latencies = ask_all("asking with memories")
    rows = []
    sql_of = {m.id: _folded(p["sql"]) for p, m in zip(pairs, saved, strict=True)}
    for pair, memory, before, after in zip(pairs, saved, without, with_memories, strict=True):
        ranked = [h.id for h in after]
        rank = ranked.index(memory.id) + 1 if memory.id in ranked else None
        same = _folded(pair["sql"])
        same_rank = next((n for n, i in enumerate(ranked, 1) if sql_of.get(i) == same), None)
        gold = pair["gold_tables"]
        rows.append(
            {
                "question": pair[ask],
                "db_id": pair["db_id"],
                "memory": memory.id,
                "memory_rank": rank,
                "same_query_rank": same_rank,
                "table_recall@5_without": recall_at_k(ranked_links(before)[0], gold, 5)
                if gold
                else None,
                "table_recall@5_with": recall_at_k(ranked_links(after)[0], gold, 5)
                if gold
                else None,
                "top": ranked[:10],
            }
        )
    return ExamplesResult(_metrics(rows, unresolved), rows, latencies, save_seconds)


def _memory_items(ls: Any, pairs: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Each pair as a memory to save, tagged with the gold ids that resolve."""
    resolver = ls.corpus().resolver
    items, unresolved = [], 0
    for pair in pairs:
        tags: list[str] = []
        for ref in [*pair["gold_tables"], *pair["gold_columns"]]:
            ids, _warning = resolver.resolve_one(ref, pair["db_id"])
            if ids:
                tags.extend(i for i in ids if i not in tags)
            else:
                unresolved += 1
        items.append(
            {"learning": pair["original_question"], "entities": tags, "query": {"sql": pair["sql"]}}
        )
    return items, unresolved


def _folded(sql: str) -> str:
    return " ".join(sql.lower().replace(";", " ").split())


def _metrics(rows: list[dict[str, Any]], unresolved: int) -> dict[str, float | int]:
    n = len(rows)
    out: dict[str, float | int] = {"pairs": n}
    for k in EXAMPLE_KS:
        found = sum(1 for r in rows if r["memory_rank"] is not None and r["memory_rank"] <= k)
        out[f"example@{k}"] = found / n
    out["memory_mrr"] = sum(1.0 / r["memory_rank"] for r in rows if r["memory_rank"]) / n
    for k in EXAMPLE_KS:
        found = sum(1 for r in rows if r["same_query_rank"] and r["same_query_rank"] <= k)
        out[f"same_query@{k}"] = found / n
    scored = [r for r in rows if r["table_recall@5_with"] is not None]
    if scored:
        without = sum(r["table_recall@5_without"] for r in scored) / len(scored)
        with_ = sum(r["table_recall@5_with"] for r in scored) / len(scored)
        out["table_recall@5_without"] = without
        out["table_recall@5_with"] = with_
        out["table_recall@5_delta"] = with_ - without
    out["unresolved_tags"] = unresolved
    return out
