"""What an analytics agent gets back for its questions, on the six real layers.

The questions (``eval/data/agent/questions.jsonl``, written by hand; see
docs/agent.md) are JSONL records with a ``sample`` (a folder of the shared data
directory, as in :mod:`layersearch.eval.layers`), a ``question`` and a ``type``:

- ``grouped`` ("total claim amount by state"): ``measure`` and ``dimension`` list
  the ids that answer each part (any one of each counts). A question is answered
  when a measure id and a dimension id are both among the first 5 leaf hits, or
  both in the response's query plan.
- ``plain``: one thing asked in other words than the layer's; ``gold`` lists the
  ids, any one counts; hit@5 over the first 5 leaf hits.
- ``none``: the layer cannot answer it. Such a response should carry the
  weak-match warning; the answerable ones (grouped and plain) should not.

    layersearch eval agent --data ../shared/data [--details]
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.eval.jsonl import json_lines
from layersearch.eval.layers import SAMPLE_PATHS

DEFAULT_QUESTIONS = Path(__file__).parent / "data" / "agent" / "questions.jsonl"
TYPES = ("grouped", "plain", "none")
_LEAF_KINDS = ("column", "measure", "aggregation")
TOP = 5


def read_agent_questions(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The labelled questions; a malformed line is a ConfigError naming it."""
    p = Path(path) if path is not None else DEFAULT_QUESTIONS
    if not p.is_file():
        raise ConfigError(f"{p}: no such questions file")
    out: list[dict[str, Any]] = []
    for _, where, rec in json_lines(p, "questions file"):
        if not (isinstance(rec, dict) and rec.get("type") in TYPES):
            raise ConfigError(f"{where}: needs a type, one of {', '.join(TYPES)}")
        need = {"grouped": ("measure", "dimension"), "plain": ("gold",), "none": ()}[rec["type"]]
        if not isinstance(rec.get("sample"), str) or not isinstance(rec.get("question"), str):
            raise ConfigError(f"{where}: needs sample and question strings")
        for key in need:
            if not (isinstance(rec.get(key), list) and rec[key]):
                raise ConfigError(f"{where}: a {rec['type']} question needs a non-empty {key}")
        out.append(rec)
    return out


def _plan_ids(plan: Any) -> set[str]:
    """Every id a response's query plan names (measures and grouping dimensions)."""
    if plan is None:
        return set()
    return {m.id.lower() for m in plan.measures} | {d.id.lower() for d in plan.dimensions}


def judge(rec: dict[str, Any], resp: Any) -> dict[str, Any]:
    """One question's outcome from its search response."""
    leaves = [h.id for h in resp.results if h.kind in _LEAF_KINDS]
    top = {h.lower() for h in leaves[:TOP]}
    plan = resp.plan
    planned = _plan_ids(plan)
    flagged = bool(resp.weak_match)
    row: dict[str, Any] = {
        "sample": rec["sample"],
        "type": rec["type"],
        "question": rec["question"],
        "top": leaves[:TOP],
        "flagged": flagged,
    }
    if rec["type"] == "grouped":
        measures = {g.lower() for g in rec["measure"]}
        dims = {g.lower() for g in rec["dimension"]}
        row["in_top"] = bool(top & measures) and bool(top & dims)
        row["in_plan"] = bool(planned & measures) and bool(planned & dims)
        row["ok"] = row["in_top"] or row["in_plan"]
        if plan is not None:
            row["plan"] = sorted(planned)
    elif rec["type"] == "plain":
        row["ok"] = bool(top & {g.lower() for g in rec["gold"]})
    else:
        row["ok"] = flagged
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The four numbers of the issue, and the question counts behind them."""

    def share(xs: list[bool]) -> float | None:
        return round(sum(xs) / len(xs), 3) if xs else None

    grouped = [r for r in rows if r["type"] == "grouped"]
    plain = [r for r in rows if r["type"] == "plain"]
    none = [r for r in rows if r["type"] == "none"]
    answerable = grouped + plain
    return {
        "questions": {"grouped": len(grouped), "plain": len(plain), "none": len(none)},
        "grouped_answered": share([r["ok"] for r in grouped]),
        "grouped_in_top5": share([r["in_top"] for r in grouped]),
        "grouped_in_plan": share([r["in_plan"] for r in grouped]),
        "plain_hit@5": share([r["ok"] for r in plain]),
        "unanswerable_flagged": share([r["flagged"] for r in none]),
        "answerable_flagged": share([r["flagged"] for r in answerable]),
    }


def run_agent_eval(
    data: str | Path,
    questions: list[dict[str, Any]],
    *,
    channels: list[str] | None = None,
    embedder: str | None = None,
) -> dict[str, Any]:
    """Load each sample into its own in-memory store and ask its questions."""
    from layersearch.api import Layersearch

    root = Path(data)
    if not root.is_dir():
        raise ConfigError(f"{root}: no such data folder")
    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_sample[q["sample"]].append(q)
    rows: list[dict[str, Any]] = []
    for sample, qs in sorted(by_sample.items()):
        path = root / SAMPLE_PATHS.get(sample, sample)
        if not path.exists():
            raise ConfigError(f"{path}: sample {sample!r} not found under {root}")
        with Layersearch(":memory:", embedder=embedder) as ls:
            ls.load(path)
            if ls.embedder is not None:
                ls.embed()
            for q in qs:
                resp = ls.search(question=q["question"], channels=channels, max_results=30)
                rows.append(judge(q, resp))
    return {"summary": summarize(rows), "questions": rows}
