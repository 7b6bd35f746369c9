"""Schema-linking evaluation through the product's own search path.

A catalog is loaded once into a temporary store; every question is asked with
:meth:`Layersearch.search` (the same path as the CLI and the MCP tool), and
the hits are turned into a ranked table list and a ranked column list:

- a model hit counts for its table;
- a column, measure or aggregation hit counts for itself (columns list) and
  for its parent table (tables list);

both in hit order, each id once at its first position. Datasource and memory
hits are not schema links and are skipped. Metrics come from
:mod:`layersearch.eval.metrics` (macro averages over questions).

Two modes: ``catalog`` asks with no hint (every database one catalog, as a BI
agent would), ``scoped`` passes the question's gold database as the
datasource filter.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.eval.metrics import (
    COLUMN_RECALL_KS,
    METRIC_KEYS,
    TABLE_RECALL_KS,
    aggregate,
    recall_at_k,
)
from layersearch.types import CHANNELS, SearchRequest

__all__ = [
    "MODES",
    "SEARCH_DEPTH",
    "ChannelSetResult",
    "parse_channel_sets",
    "HALVES",
    "read_questions",
    "question_text",
    "ranked_links",
    "select_half",
    "run_schema_linking",
    "write_details",
    "plot_recall",
    "best_of_sets",
    "channel_union",
]

log = logging.getLogger("layersearch.eval.schema_linking")

MODES = ("catalog", "scoped")
#: Hits asked for per question: the deepest search allows, so column recall@20
#: has room even when models and columns interleave.
SEARCH_DEPTH = 100
_TABLE_KINDS = frozenset({"model"})
_LEAF_KINDS = frozenset({"column", "measure", "aggregation"})
#: k values for the recall curves of --plot.
CURVE_KS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20)


@dataclass
class ChannelSetResult:
    """The outcome for one channel set: metrics, per-question rows, latency."""

    channels: list[str]
    metrics: dict[str, float | int | None]
    details: list[dict[str, Any]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: a baseline's name (``--baseline``), which then labels the result
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name or ",".join(self.channels)

    def latency(self) -> dict[str, float]:
        lat = sorted(self.latencies_ms)
        if not lat:
            return {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
        return {
            "p50_ms": round(statistics.median(lat), 3),
            "p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 3),
            "mean_ms": round(statistics.fmean(lat), 3),
        }

    def summary(self) -> dict[str, Any]:
        """The metrics (exactly the contract's keys) plus channels (or the baseline's
        name) and latency."""
        which = {"baseline": self.name} if self.name else {"channels": self.label}
        return {**self.metrics, **which, **self.latency()}


def parse_channel_sets(values: Sequence[str] | None) -> list[list[str] | None]:
    """``["fulltext", "bm25,fulltext"]`` → ``[["fulltext"], ["bm25", "fulltext"]]``.

    None or empty gives ``[None]``: every channel that can run.
    """
    if not values:
        return [None]
    out: list[list[str] | None] = []
    for value in values:
        names = [c.strip() for c in value.split(",") if c.strip()]
        if not names:
            raise ConfigError(
                f"--channels '{value}' names no channel; valid: {', '.join(CHANNELS)}"
            )
        bad = [c for c in names if c not in CHANNELS]
        if bad:
            raise ConfigError(
                f"unknown channel(s) {', '.join(map(repr, bad))}; valid channels: {', '.join(CHANNELS)}"
            )
        ordered = [c for c in CHANNELS if c in names]
        if ordered not in out:
            out.append(ordered)
    return out


def read_questions(path: str | Path, catalog: str | Path | None = None) -> list[dict[str, Any]]:
    """Questions from JSONL, or from a Spider ``dev.json`` (converted against the
    catalog, which must then be the matching Spider ``tables.json``)."""
    from layersearch.eval.spider import read_questions_jsonl, spider_questions

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: no such questions file")
    if _looks_like_json_array(p):
        if catalog is None or not Path(catalog).is_file():
            raise ConfigError(
                f"{p} is a Spider question file (a JSON list): converting it needs the "
                "Spider tables.json as --catalog"
            )
        return spider_questions(p, Path(catalog))
    records = read_questions_jsonl(p)
    for i, r in enumerate(records):
        ev = r.get("evidence")
        if ev is not None and not isinstance(ev, str):
            raise ConfigError(f"{p}: record {i}: 'evidence' must be a string")
    return records


#: The two halves of a question file: ``A`` is the first ⌈n/2⌉ questions in file
#: order, ``B`` the rest. Choices are made on A and confirmed on B. Spider dev and
#: Spider-Syn list their questions database by database, so the halves share at
#: most one database.
HALVES = ("A", "B")


def select_half(questions: Sequence[dict[str, Any]], half: str | None) -> list[dict[str, Any]]:
    """Half ``A`` or ``B`` of ``questions`` (see :data:`HALVES`); None: all of them."""
    if half is None:
        return list(questions)
    cut = (len(questions) + 1) // 2
    if half.upper() == "A":
        return list(questions[:cut])
    if half.upper() == "B":
        return list(questions[cut:])
    raise ConfigError(f"unknown half '{half}'; use A or B")


def _looks_like_json_array(p: Path) -> bool:
    with p.open("rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def ranked_links(hits: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Ranked, deduplicated table ids and column ids from search hits (kind, id)."""
    tables: list[str] = []
    columns: list[str] = []
    seen_t: set[str] = set()
    seen_c: set[str] = set()
    for h in hits:
        if h.kind in _TABLE_KINDS:
            table = h.id
        elif h.kind in _LEAF_KINDS:
            table = h.id.rsplit(".", 1)[0]
            if h.id not in seen_c:
                seen_c.add(h.id)
                columns.append(h.id)
        else:
            continue
        if table not in seen_t:
            seen_t.add(table)
            tables.append(table)
    return tables, columns


def question_text(q: dict[str, Any]) -> str:
    """What is asked for question record ``q``."""
    # BIRD-style evidence is external knowledge given with the question: the
    # agent would search with both, so the evaluation does too.
    ev = q.get("evidence")
    return f"{q['question']} {ev}" if ev else q["question"]


#: explanation channels → the request channel that runs them
_REQUESTED_BY = {"schema": "fulltext"}


def link_row(q: dict[str, Any], tables: list[str], columns: list[str]) -> dict[str, Any]:
    """One question's row: its gold links and the ranked ones."""
    return {
        "question": q["question"],
        "db_id": q["db_id"],
        "gold_tables": list(q["gold_tables"]),
        "gold_columns": list(q["gold_columns"]),
        "ranked_tables": tables,
        "ranked_columns": columns,
    }


def run_schema_linking(
    ls: Any,
    questions: Sequence[dict[str, Any]],
    *,
    mode: str = "catalog",
    channel_sets: Sequence[list[str] | None] = (None,),
    progress: Callable[[int], None] | None = None,
) -> list[ChannelSetResult]:
    """Ask every question once per channel set on an open :class:`Layersearch`.

    ``progress(n)`` is called after each question with how many were done
    (across channel sets). Questions without gold tables are rejected: their
    recall is undefined.
    """
    if mode not in MODES:
        raise ConfigError(f"unknown mode '{mode}'; use one of {', '.join(MODES)}")
    if not questions:
        raise ConfigError("no questions to evaluate")
    known = set(ls.corpus().datasources)
    for i, q in enumerate(questions):
        if not q.get("gold_tables"):
            raise ConfigError(f"question {i} ('{q.get('question', '')[:60]}'): no gold tables")
        if mode == "scoped" and q["db_id"] not in known:
            raise ConfigError(
                f"question {i}: db_id '{q['db_id']}' is not a datasource of the catalog "
                "(scoped mode filters by it)"
            )
    done = 0
    results = []
    for channels in channel_sets:
        rows: list[dict[str, Any]] = []
        lat: list[float] = []
        warned: dict[str, None] = {}
        ran: set[str] = set()
        for q in questions:
            req = SearchRequest.model_validate(
                {
                    "question": question_text(q),
                    "datasource": q["db_id"] if mode == "scoped" else None,
                    "max_results": SEARCH_DEPTH,
                    "channels": channels,
                    # With the default channel set, explanations tell which channels really ran.
                    "explain": channels is None,
                }
            )
            t0 = time.perf_counter()
            resp = ls.search(req)
            lat.append((time.perf_counter() - t0) * 1000)
            for w in resp.warnings:
                if w.startswith("embedding unavailable") or "could not run" in w:
                    warned.setdefault(w, None)
            if channels is None:
                # the schema channel is what "fulltext" asks for
                ran.update(
                    _REQUESTED_BY.get(c.channel, c.channel)
                    for h in resp.results
                    for c in h.explanation or []
                )
            tables, columns = ranked_links(resp.results)
            rows.append(link_row(q, tables, columns))
            done += 1
            if progress is not None:
                progress(done)
        used = channels if channels is not None else [c for c in CHANNELS if c in ran]
        metrics = aggregate(rows)
        results.append(ChannelSetResult(used, metrics, rows, lat, list(warned)))
    return results


def best_of_sets(results: Sequence[ChannelSetResult]) -> dict[str, float | int | None] | None:
    """Per question the best of the channel sets on each metric (an oracle choosing a set
    per question with the labels), averaged as :func:`aggregate` averages: what any fusion
    of these sets' lists could reach at most. None for fewer than two sets."""
    if len(results) < 2:
        return None
    per_set = [[aggregate([row]) for row in res.details] for res in results]
    out: dict[str, float | int | None] = {"questions": len(per_set[0])}
    for key in METRIC_KEYS[1:]:
        best = [
            max(v for m in ms if isinstance(v := m[key], float | int))
            for ms in zip(*per_set, strict=True)
            if ms[0][key] is not None
        ]
        out[key] = sum(best) / len(best) if best else None
    return out


def channel_union(results: Sequence[ChannelSetResult]) -> dict[str, float | int | None] | None:
    """What the full-text and vector channels hold between them: per question, table
    recall at k of the union of the two runs' top k tables (up to 2k), and column recall
    at k likewise, averaged as :func:`aggregate` averages. A fused top k holds more only
    by lifting an entity from below both channels' k. None unless ``fulltext`` and
    ``vector`` each ran alone."""
    alone = {tuple(r.channels): r for r in results}
    pair = [alone.get(("fulltext",)), alone.get(("vector",))]
    if pair[0] is None or pair[1] is None:
        return None
    rows = list(zip(pair[0].details, pair[1].details, strict=True))
    out: dict[str, float | int | None] = {"questions": len(rows)}
    for kind, ks in (("table", TABLE_RECALL_KS), ("column", COLUMN_RECALL_KS)):
        scored = [(a, b) for a, b in rows if a[f"gold_{kind}s"]]
        for k in ks:
            values = []
            for a, b in scored:
                held = a[f"ranked_{kind}s"][:k] + b[f"ranked_{kind}s"][:k]
                values.append(recall_at_k(held, a[f"gold_{kind}s"], max(1, len(held))))
            out[f"{kind}_recall@{k}"] = sum(values) / len(values) if values else None
    return out


def write_details(results: Sequence[ChannelSetResult], path: str | Path) -> int:
    """Per-question JSONL for error analysis: gold, ranked lists (top 20), misses, ranks."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for res in results:
            for row in res.details:
                fh.write(json.dumps(_detail(res.label, row), ensure_ascii=False) + "\n")
                n += 1
    return n


def _detail(label: str, row: dict[str, Any]) -> dict[str, Any]:
    lower_t = [t.lower() for t in row["ranked_tables"]]
    lower_c = [c.lower() for c in row["ranked_columns"]]

    def rank(ids: list[str], gold: str) -> int | None:
        g = gold.lower()
        return ids.index(g) + 1 if g in ids else None

    return {
        "channels": label,
        "question": row["question"],
        "db_id": row["db_id"],
        "gold_tables": row["gold_tables"],
        "gold_table_ranks": {g: rank(lower_t, g) for g in row["gold_tables"]},
        "gold_columns": row["gold_columns"],
        "gold_column_ranks": {g: rank(lower_c, g) for g in row["gold_columns"]},
        "missed_tables@5": [g for g in row["gold_tables"] if g.lower() not in lower_t[:5]],
        "missed_columns@10": [g for g in row["gold_columns"] if g.lower() not in lower_c[:10]],
        "ranked_tables": row["ranked_tables"][:20],
        "ranked_columns": row["ranked_columns"][:20],
    }


def recall_curve(res: ChannelSetResult, kind: str) -> list[float]:
    """Macro-averaged recall at each of :data:`CURVE_KS` for ``tables`` or ``columns``."""
    from layersearch.eval.metrics import recall_at_k

    key_r, key_g = f"ranked_{kind}", f"gold_{kind}"
    rows = [r for r in res.details if r[key_g]]
    if not rows:
        return [0.0 for _ in CURVE_KS]
    return [sum(recall_at_k(r[key_r], r[key_g], k) for r in rows) / len(rows) for k in CURVE_KS]


def plot_recall(results: Sequence[ChannelSetResult], path: str | Path, *, title: str = "") -> None:
    """Recall@k curves, tables and columns side by side, one line per channel set."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError("--plot needs matplotlib: pip install matplotlib") from exc
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, kind in zip(axes, ("tables", "columns"), strict=True):
        for res in results:
            ax.plot(CURVE_KS, recall_curve(res, kind), marker="o", markersize=3, label=res.label)
        ax.set_title(f"{kind} recall@k")
        ax.set_xlabel("k")
        ax.set_xticks(CURVE_KS)
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("recall (macro average)")
    axes[1].legend(loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        fig.savefig(str(path), dpi=120)
    except OSError as exc:
        raise ConfigError(f"cannot write plot {path}: {exc}") from exc
    finally:
        plt.close(fig)
