"""What a Spider or BIRD download keeps beside its ``tables.json``.

Each database has a folder of its own: ``database/<db_id>/`` in Spider,
``<split>_databases/<db_id>/`` in BIRD (``dev_databases``, ``train_databases``),
or ``<db_id>/`` directly beside the file. It holds the SQLite file
``<db_id>.sqlite`` and, in BIRD, ``database_description/<table>.csv``: one row
per column with ``original_column_name``, ``column_name`` (the name spelled
out), ``column_description``, ``data_format`` and ``value_description`` (what
the codes of a column mean). The descriptions are read whenever the folder is
there; values are sampled from the SQLite file when asked (``sample_values``),
as the ``database`` importer samples a live database.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers.database import (
    _is_text,
    _sample,
    _sqlite,
    quote_ident,
)
from layersearch.semantic.model import Catalog, Column, Model

#: One table as its ``tables.json`` names it: the model, and each column with its
#: original name (the model's names went through ``safe_name``).
Table = tuple[Model, list[tuple[str, Column]]]

log = logging.getLogger("layersearch.semantic.importers.spider")

DESCRIPTIONS = "database_description"
#: A description file larger than this is not read (BIRD's largest is ~20 KB).
MAX_CSV_BYTES = 4 * 1024 * 1024
#: A column's description is cut to this many characters.
MAX_DESCRIPTION_CHARS = 2000
_SPACE = re.compile(r"\s+")


def database_dir(tables_json: Path, db_id: str) -> Path | None:
    """The folder of database ``db_id`` beside ``tables_json``, or None."""
    base = tables_json.parent
    candidates = [base / "database" / db_id]
    candidates += sorted(p / db_id for p in base.glob("*_databases") if p.is_dir())
    candidates.append(base / db_id)
    return next((p for p in candidates if p.is_dir()), None)


def read_beside(
    tables_json: Path,
    db_id: str,
    tables: list[Table],
    catalog: Catalog,
    *,
    sample_values: int = 0,
) -> None:
    """Add to one database's ``tables`` the column descriptions of its
    ``database_description`` folder and, with ``sample_values``, up to that many
    distinct values of each text column from its SQLite file."""
    folder = database_dir(tables_json, db_id)
    if folder is None:
        if sample_values:
            catalog.skipped.append(
                f"{tables_json} (db_id {db_id}): no database folder beside it "
                f"(database/{db_id}/ or *_databases/{db_id}/): values not sampled"
            )
        return
    described = folder / DESCRIPTIONS
    if described.is_dir():
        n = _read_descriptions(described, tables, catalog)
        log.info("%s: descriptions of %d columns", described, n)
    if sample_values:
        _sample_sqlite(folder / f"{db_id}.sqlite", tables, catalog, sample_values)


def _decode(raw: bytes) -> str:
    """UTF-8 (a byte-order mark dropped), else Windows-1252: BIRD's files are both."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def _one_line(text: str | None) -> str:
    return _SPACE.sub(" ", text or "").strip()


def _read_descriptions(folder: Path, tables: list[Table], catalog: Catalog) -> int:
    by_table = {(t[0].sql_table or t[0].name).strip().casefold(): t for t in tables}
    described = 0
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
    for path in files:
        table = by_table.get(path.stem.strip().casefold())
        if table is None:
            catalog.skipped.append(f"{path}: names no table of its database; not read")
            continue
        try:
            if path.stat().st_size > MAX_CSV_BYTES:
                catalog.skipped.append(f"{path}: over {MAX_CSV_BYTES} bytes; not read")
                continue
            reader = csv.DictReader(io.StringIO(_decode(path.read_bytes()), newline=""))
            header = {_one_line(h).lower() for h in reader.fieldnames or ()}
            rows = list(reader)
        except (OSError, csv.Error) as exc:
            catalog.skipped.append(f"{path}: cannot read: {exc}")
            continue
        if "original_column_name" not in header:
            catalog.skipped.append(f"{path}: no original_column_name column; not read")
            continue
        described += _describe(path, table, rows, catalog)
    return described


def _describe(path: Path, table: Table, rows: list[dict[str, Any]], catalog: Catalog) -> int:
    """Describe a table's columns from the rows of its file; returns how many."""
    model, originals = table
    columns = {name.strip().casefold(): col for name, col in originals}
    folded = {_fold(name): col for name, col in originals}
    unknown: list[str] = []
    n = 0
    for row in rows:
        cells = {_one_line(str(k)).lower(): _one_line(v) for k, v in row.items() if k}
        name = cells.get("original_column_name", "")
        if not name:
            continue
        col = columns.get(name.casefold()) or folded.get(_fold(name))
        if col is None:
            unknown.append(name)
            continue
        text = _description(cells.get("column_description", ""), cells.get("value_description"))
        if text:
            col.description = text
            n += 1
        spelled = cells.get("column_name", "")
        if spelled and (col.label is None or _fold(col.label) == _fold(col.name)):
            col.label = spelled
    if unknown:
        catalog.skipped.append(
            f"{path}: {len(unknown)} row(s) name no column of table '{model.name}': "
            + ", ".join(unknown[:5])
            + (" …" if len(unknown) > 5 else "")
        )
    return n


def _fold(name: str) -> str:
    """A name compared without case, spaces or underscores (``Free Meal`` ~ ``free_meal``)."""
    return re.sub(r"[\s_]+", "", name).casefold()


def _description(column: str, values: str | None) -> str:
    parts = [column.rstrip(". ") + "." if column else ""]
    if values:
        parts.append(f"Values: {values}")
    return " ".join(p for p in parts if p)[:MAX_DESCRIPTION_CHARS]


def _sample_sqlite(path: Path, tables: list[Table], catalog: Catalog, n: int) -> None:
    if not path.is_file():
        catalog.skipped.append(f"{path}: no such SQLite file; values not sampled")
        return
    try:
        with _sqlite(path) as (_tables, sampler):
            for model, originals in tables:
                if model.hidden:
                    continue
                qualified = quote_ident(model.sql_table or model.name)
                for name, col in originals:
                    if _is_text(col.data_type or ""):
                        col.values = _sample(sampler, qualified, name, n, catalog, model)
    except ModelLoadError as exc:  # a damaged file beside the catalog does not stop its load
        catalog.skipped.append(f"{exc}; values not sampled")
