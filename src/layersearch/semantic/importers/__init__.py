"""Semantic-layer importers: every format becomes one :class:`Catalog`.

``load_catalog(path)`` detects the format (``detect_format``) unless told;
see docs/importers.md for the mapping rules of each format.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError, ModelLoadError
from layersearch.semantic.importers.cube import cube_files, is_cube_js, is_cube_yaml, load_cube
from layersearch.semantic.importers.database import (
    check_sample_values,
    is_database_file,
    is_dsn,
    load_database,
)
from layersearch.semantic.importers.dbt import is_dbt, load_dbt
from layersearch.semantic.importers.dbt_manifest import (
    is_dbt_manifest,
    load_dbt_manifest,
    manifest_file,
)
from layersearch.semantic.importers.lookml import is_lookml, load_lookml
from layersearch.semantic.importers.native import load_native, read_text, read_yaml, yaml_files
from layersearch.semantic.importers.osi import is_osi, load_osi
from layersearch.semantic.importers.slayer import is_slayer_datasource, is_slayer_model, load_slayer
from layersearch.semantic.importers.spider import is_spider, load_spider, read_json
from layersearch.semantic.model import Catalog

__all__ = ["FORMATS", "detect_format", "load_catalog"]

FORMATS = (
    "native",
    "slayer",
    "dbt",
    "dbt-manifest",
    "cube",
    "lookml",
    "osi",
    "spider",
    "database",
)
NATIVE_KEYS = ("datasource", "model", "memories")
#: the loaders of the formats a ``datasource`` name applies to (besides database)
_NAMING_LOADERS: dict[str, Callable[..., Catalog]] = {
    "slayer": load_slayer,
    "dbt": load_dbt,
    "dbt-manifest": load_dbt_manifest,
    "cube": load_cube,
    "lookml": load_lookml,
    "osi": load_osi,
}
_FORCE_HINT = f"formats: {', '.join(FORMATS)}; name one with --format FORMAT"


def _yaml_kind(doc: Any) -> str | None:
    """The format one parsed YAML document belongs to, or None."""
    if is_osi(doc):
        return "osi"
    if is_cube_yaml(doc):
        return "cube"
    if is_dbt(doc):
        return "dbt"
    if is_slayer_model(doc):
        return "slayer"
    if isinstance(doc, dict) and any(k in doc for k in NATIVE_KEYS):
        return "native"
    return None


def detect_format(path: str | Path) -> str:
    """One of :data:`FORMATS`, from the path's shape and contents."""
    if is_dsn(path):
        return "database"
    p = Path(path)
    if not p.exists():
        raise ModelLoadError(f"{p}: no such file or directory")
    if is_database_file(p):
        return "database"
    if p.is_file() and p.suffix.lower() == ".json":
        doc = read_json(p)
        if is_spider(doc):
            return "spider"
        if is_dbt_manifest(doc):
            return "dbt-manifest"
        raise ModelLoadError(
            f"{p}: JSON that is not a Spider tables.json (a list of objects with db_id and "
            f"table_names) and not a dbt manifest.json (metadata.dbt_schema_version); "
            f"{_FORCE_HINT}"
        )
    if p.is_dir():
        mf = manifest_file(p)
        if mf is not None and is_dbt_manifest(read_json(mf)):
            return "dbt-manifest"
    if is_lookml(p):
        return "lookml"
    if any(f.suffix == ".js" and is_cube_js(read_text(f)) for f in cube_files(p)):
        return "cube"
    files = yaml_files(p)
    if not files:
        catalogs = sorted(p.glob("*tables.json")) if p.is_dir() else []
        hint = f" (for a Spider or BIRD catalog, pass the file: {catalogs[0]})" if catalogs else ""
        raise ModelLoadError(
            f"{p}: no YAML, LookML or Cube files and not a database, Spider or dbt manifest "
            f"file{hint}; {_FORCE_HINT}"
        )
    kinds: Counter[str] = Counter()
    examples: dict[str, Path] = {}
    slayer_datasources = 0
    for f in files:
        doc = read_yaml(f)
        kind = _yaml_kind(doc)
        if kind is None:
            slayer_datasources += is_slayer_datasource(doc)
            continue
        kinds[kind] += 1
        examples.setdefault(kind, f)
    if len(kinds) == 1:
        return next(iter(kinds))
    if not kinds:
        extra = " (only SLayer-style datasource files)" if slayer_datasources else ""
        raise ModelLoadError(f"{p}: no recognisable semantic-layer YAML{extra}; {_FORCE_HINT}")
    found = ", ".join(f"{k} ({n} files, e.g. {examples[k]})" for k, n in sorted(kinds.items()))
    raise ModelLoadError(f"{p}: YAML of several formats: {found}; {_FORCE_HINT}")


def load_catalog(
    path: str | Path,
    fmt: str = "auto",
    *,
    sample_values: int = 0,
    datasource: str | None = None,
) -> Catalog:
    """Load a semantic layer from ``path`` (a file, folder or PostgreSQL DSN).

    ``datasource`` names the datasource for formats that do not name one
    themselves (slayer, dbt, dbt-manifest, cube, lookml, osi, database) and
    overrides the name they would use;
    ``sample_values`` reads up to that many distinct values per text column
    (database, and spider from the SQLite files beside its tables.json).
    """
    if fmt not in ("auto", *FORMATS):
        raise ConfigError(f"unknown format '{fmt}'; use auto or one of {', '.join(FORMATS)}")
    check_sample_values(sample_values)
    kind = detect_format(path) if fmt == "auto" else fmt
    if datasource is not None and kind in ("native", "spider"):
        raise ConfigError(
            f"--datasource does not apply to the {kind} format: its files name their datasources"
        )
    catalog: Catalog
    if kind == "database":
        catalog = load_database(path, sample_values=sample_values, datasource=datasource)
    else:
        if is_dsn(path):
            raise ConfigError(
                f"a PostgreSQL DSN can only be read with --format database, not {kind}"
            )
        if kind == "native":
            catalog = load_native(path)
        elif kind == "spider":
            catalog = load_spider(path, sample_values=sample_values)
        else:
            catalog = _NAMING_LOADERS[kind](path, datasource=datasource)
        if sample_values and kind != "spider":
            catalog.skipped.append(
                f"sampling {sample_values} values per column (--sample-values): values are "
                "sampled only from databases (and Spider/BIRD SQLite files); the catalog is "
                "imported without them"
            )
    return catalog
