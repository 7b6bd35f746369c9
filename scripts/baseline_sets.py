"""Write the question sets of docs/quality.md's "Against a plain tantivy index" that
no CLI command writes: the Spider-Syn validation databases' questions and the
warehouse-named copy of the catalog with Spider dev's and those questions mapped.

    python scripts/baseline_sets.py --out /tmp/sets  # --data ../shared/data by default

writes ``val.jsonl`` (the Spider-Syn train rows of the databases
``split_databases(seed=0, fraction=0.2)`` of ``layersearch/eval/splits.py``
holds out), ``wh.tables.json`` (``layersearch.eval.abbreviate.warehouse_db``'s copy of every
database: a ``dim_``/``fct_``/``stg_`` prefix on tables, camelCase or UPPER_SNAKE
columns, no labels), ``wh.dev.jsonl`` and ``wh.val.jsonl`` (the questions with
their gold ids mapped by ``layersearch.eval.abbreviate.rename_spider``). Then
``layersearch --embedder none eval schema-linking --catalog … --questions …
--baseline tantivy …`` on each.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from layersearch.eval.abbreviate import rename_spider, warehouse_db
from layersearch.eval.schema_linking import read_questions
from layersearch.eval.splits import split_databases

#: the shared data beside the checkout (or beside the folder of worktrees holding it)
_ROOT = Path(__file__).resolve().parents[1]
DATA = next(
    (
        c
        for c in (_ROOT.parent / "shared" / "data", _ROOT.parent.parent / "shared" / "data")
        if c.is_dir()
    ),
    _ROOT.parent / "shared" / "data",
)


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_sets(tables: Path, dev: Path, syn: Path, out: Path) -> dict[str, int]:
    """The four files in ``out``; how many questions (or databases) each holds."""
    out.mkdir(parents=True, exist_ok=True)
    rows = read_questions(syn)
    _, val_dbs = split_databases([r["db_id"] for r in rows], 0, 0.2)
    held = set(val_dbs)
    val = [r for r in rows if r["db_id"] in held]
    _write_jsonl(out / "val.jsonl", val)
    catalog = json.loads(tables.read_text(encoding="utf-8"))
    dbs, wh_dev = rename_spider(catalog, read_questions(dev, tables), warehouse_db)
    _, wh_val = rename_spider(catalog, val, warehouse_db)
    (out / "wh.tables.json").write_text(json.dumps(dbs), encoding="utf-8")
    _write_jsonl(out / "wh.dev.jsonl", wh_dev)
    _write_jsonl(out / "wh.val.jsonl", wh_val)
    return {"val": len(val), "wh.tables": len(dbs), "wh.dev": len(wh_dev), "wh.val": len(wh_val)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="Folder to write the sets to.")
    ap.add_argument("--data", type=Path, default=DATA, help="The shared data folder.")
    args = ap.parse_args(argv)
    d = args.data
    spider, syn = d / "spider", d / "spider-syn" / "train.jsonl"
    counts = write_sets(spider / "tables.json", spider / "dev.json", syn, args.out)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
