"""Calibrating the weak-match warning on Spider-Syn train questions.

Each question is asked twice with its database as the datasource filter: its own
database (answerable) and another one (the next database of the sample in id order:
the question's words are about things that database does not hold). For each, the
two signals of :mod:`layersearch.plan.confidence` are recorded; the thresholds are
chosen so that at most ``--max-false`` of the answerable askings are flagged, and
the report gives the share of the wrong-database askings flagged at them.

    python -m layersearch.eval.weak --data ../shared/data [--questions 300] [--embedder local]

Spider dev is never read (Spider-Syn rows are Spider *train* questions).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.plan import confidence

COVERAGES = tuple(round(0.05 * i, 2) for i in range(0, 21))
SIMILARITIES = tuple(round(0.05 * i, 2) for i in range(0, 21))


def sample_rows(path: Path, n: int) -> list[dict[str, Any]]:
    """Every ``len/n``-th row of the Spider-Syn file: spread over its databases."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file (the Spider-Syn train.jsonl)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    step = max(1, len(rows) // n)
    return rows[::step][:n]


def collect(
    data: Path, n: int, embedder: str | None, top: int = confidence.TOP
) -> list[dict[str, Any]]:
    """The signals of each sampled question against its own and another database."""
    from layersearch.api import Layersearch

    rows = sample_rows(data / "spider-syn" / "train.jsonl", n)
    dbs = sorted({r["db_id"] for r in rows})
    tables = json.loads((data / "spider" / "tables.json").read_text(encoding="utf-8"))
    chosen = [t for t in tables if t["db_id"] in set(dbs)]
    other = {db: dbs[(i + 1) % len(dbs)] for i, db in enumerate(dbs)}
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "tables.json"
        catalog.write_text(json.dumps(chosen), encoding="utf-8")
        with Layersearch(":memory:", embedder=embedder) as ls:
            ls.load(catalog)
            if ls.embedder is not None:
                ls.embed()
            for r in rows:
                for right, db in ((True, r["db_id"]), (False, other[r["db_id"]])):
                    resp = ls.search(question=r["question"], datasource=db, explain=True)
                    m = confidence.measure(r["question"], resp.results, top)
                    if m is not None:
                        out.append({"right": right, "coverage": m.coverage, "sim": m.similarity})
    return out


def flagged(rec: dict[str, Any], cov: float, sim: float) -> bool:
    """As :attr:`confidence.Match.weak` at these thresholds, or on coverage alone
    (``sim`` ignored) for askings without the dense channel."""
    if rec["sim"] is None:
        return rec["coverage"] < cov
    return rec["coverage"] < cov and rec["sim"] < sim


def calibrate(records: list[dict[str, Any]], max_false: float) -> dict[str, Any]:
    """The (coverage, similarity) thresholds flagging the most wrong-database askings
    with at most ``max_false`` of the right ones flagged."""
    right = [r for r in records if r["right"]]
    wrong = [r for r in records if not r["right"]]
    best: dict[str, Any] | None = None
    for cov in COVERAGES:
        for sim in SIMILARITIES:
            fp = sum(flagged(r, cov, sim) for r in right) / len(right)
            tp = sum(flagged(r, cov, sim) for r in wrong) / len(wrong)
            if fp <= max_false and (best is None or tp > best["wrong_flagged"]):
                best = {"coverage": cov, "similarity": sim, "right_flagged": round(fp, 3)}
                best["wrong_flagged"] = round(tp, 3)

    def weak(r: dict[str, Any]) -> bool:  # what search flags today
        return confidence.Match(r["coverage"], r["sim"]).weak

    current = {
        "coverage": confidence.MIN_COVERAGE,
        "similarity": confidence.MIN_SIMILARITY,
        "right_flagged": round(sum(map(weak, right)) / len(right), 3),
        "wrong_flagged": round(sum(map(weak, wrong)) / len(wrong), 3),
    }
    return {"askings": len(records), "best": best, "current": current}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the shared data folder")
    ap.add_argument("--questions", type=int, default=300, help="how many Spider-Syn rows")
    ap.add_argument("--embedder", default=None, help="e.g. local; default: none")
    ap.add_argument("--max-false", type=float, default=0.05, help="answerable share flagged")
    ap.add_argument("--top", type=int, default=confidence.TOP, help="entity hits read")
    args = ap.parse_args(argv)
    records = collect(Path(args.data), args.questions, args.embedder, args.top)
    print(json.dumps(calibrate(records, args.max_false), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
