"""Labelled JSON-lines files of the evaluations, read with the JSON bounds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError, NotFound
from layersearch.jsonlimits import load_json

__all__ = ["json_lines"]


def json_lines(path: str | Path, what: str) -> Iterator[tuple[int, str, Any]]:
    """(line number, ``path:line``, value) of each non-blank line of ``path``; a missing
    file is NotFound naming ``what`` (e.g. "query file"), a line that is not JSON a
    ConfigError naming the line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise NotFound(f"{what} {str(path)!r} does not exist") from exc
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            yield n, where, load_json(line, where)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not JSON: {exc.msg}") from exc
