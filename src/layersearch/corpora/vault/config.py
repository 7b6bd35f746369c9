"""A vault's own configuration and the validation of search filters against it.

The configuration is an optional ``<vault>/.layersearch-vault.toml``; keys may
sit at the top level or under a ``[vault]`` table::

    domains = ["finance", "product"]        # values a note's `domain` may take
    note_types = ["metric", "incident"]     # values of `type` / `note_type`
    statuses = ["draft", "active"]          # values of `status`
    exclude = ["Archive/**"]                # glob patterns of paths not indexed

A list that is absent (or empty) means "not declared": any value is accepted.
Declared values are compared case-insensitively, as notes' values are lowercased.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError, LimitExceeded

__all__ = [
    "CONFIG_FILE",
    "MAX_LIMIT",
    "VaultConfig",
    "VaultFilters",
    "load_config",
    "normalize_tag",
    "parse_iso_date",
    "validate_filters",
]

CONFIG_FILE = ".layersearch-vault.toml"
MAX_LIMIT = 1000
_LIST_KEYS = ("domains", "note_types", "statuses", "exclude")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class VaultConfig:
    """What a vault declares about itself; empty tuples mean "not declared"."""

    domains: tuple[str, ...] = ()
    note_types: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    source: Path | None = None


@dataclass(frozen=True)
class VaultFilters:
    """Validated, normalised search filters. ``None`` / empty means no filter."""

    domain: str | None = None
    note_type: str | None = None
    status: str | None = None
    tags: tuple[str, ...] = ()
    date_from: date | None = None
    date_to: date | None = None
    limit: int = 10
    # Which date `date_from`/`date_to` apply to: `updated` always has a value,
    # `created` only when the note declares it.
    date_field: str = "updated"


def load_config(root: Path) -> VaultConfig:
    """Read ``<root>/.layersearch-vault.toml``; a vault without one gets the empty config."""
    path = root / CONFIG_FILE
    if not path.is_file():
        return VaultConfig()
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    table = data.get("vault", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [vault] must be a table")
    unknown = sorted(k for k in table if k not in _LIST_KEYS and k != "vault")
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(_LIST_KEYS)}"
        )
    values = {key: _string_list(path, key, table.get(key, [])) for key in _LIST_KEYS}
    return VaultConfig(
        domains=tuple(v.lower() for v in values["domains"]),
        note_types=tuple(v.lower() for v in values["note_types"]),
        statuses=tuple(v.lower() for v in values["statuses"]),
        exclude=tuple(values["exclude"]),
        source=path,
    )


def _string_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of non-empty strings, got {value!r}")
    return tuple(dict.fromkeys(v.strip() for v in value))


def parse_iso_date(value: str | date, *, what: str = "date") -> date:
    """A ``YYYY-MM-DD`` date from user input; anything else is a ConfigError."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str) or not _ISO_DATE.fullmatch(value.strip()):
        raise ConfigError(f"bad {what} {value!r}: expected YYYY-MM-DD")
    try:
        return date.fromisoformat(value.strip())
    except ValueError as exc:
        raise ConfigError(f"bad {what} {value!r}: expected YYYY-MM-DD ({exc})") from exc


def normalize_tag(tag: str) -> str:
    """How tags are compared everywhere: no leading '#', no trailing '/', lowercased."""
    return tag.strip().lstrip("#").strip("/").lower()


def validate_filters(
    config: VaultConfig,
    *,
    domain: str | None = None,
    note_type: str | None = None,
    status: str | None = None,
    tags: Iterable[str] | str | None = None,
    date_range: Sequence[str | date | None] | str | None = None,
    limit: int = 10,
    date_field: str = "updated",
) -> VaultFilters:
    """Check search filters against what the vault declares; errors list the valid values.

    ``date_range`` is ``(start, end)`` (either may be None) or ``"start..end"``,
    both inclusive, as ``YYYY-MM-DD``.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ConfigError(f"limit must be an integer, got {limit!r}")
    if limit < 1:
        raise ConfigError(f"limit must be at least 1, got {limit}")
    if limit > MAX_LIMIT:
        raise LimitExceeded(
            f"limit must be at most {MAX_LIMIT}, got {limit} (narrow the search with filters)"
        )
    if date_field not in ("updated", "created"):
        raise ConfigError(f"date_field must be 'updated' or 'created', got {date_field!r}")
    start, end = _date_range(date_range)
    return VaultFilters(
        domain=_declared("domain", domain, config.domains),
        note_type=_declared("note_type", note_type, config.note_types),
        status=_declared("status", status, config.statuses),
        tags=_tags(tags),
        date_from=start,
        date_to=end,
        limit=limit,
        date_field=date_field,
    )


def _declared(name: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    norm = value.strip().lower()
    if allowed and norm not in allowed:
        raise ConfigError(
            f"unknown {name} {value!r}; this vault declares: {', '.join(sorted(allowed))}"
        )
    return norm


def _tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    if tags is None:
        return ()
    # A single string is one tag (or a comma-separated list), never its characters.
    items = tags.split(",") if isinstance(tags, str) else list(tags)
    out = []
    for tag in items:
        if not isinstance(tag, str):
            raise ConfigError(f"tags must be strings, got {tag!r}")
        norm = normalize_tag(tag)
        if norm:
            out.append(norm)
    return tuple(sorted(set(out)))


def _date_range(value: Sequence[str | date | None] | str | None) -> tuple[date | None, date | None]:
    if value is None:
        return None, None
    if isinstance(value, str):
        if ".." not in value:
            raise ConfigError(f"bad date_range {value!r}: expected START..END as YYYY-MM-DD")
        parts: list[str | date | None] = [p.strip() or None for p in value.split("..", 1)]
    else:
        parts = list(value)
    if len(parts) != 2:
        raise ConfigError(f"date_range must have two items (start, end), got {len(parts)}")
    start = None if parts[0] is None else parse_iso_date(parts[0], what="date_range start")
    end = None if parts[1] is None else parse_iso_date(parts[1], what="date_range end")
    if start and end and start > end:
        raise ConfigError(f"date_range start {start} is after its end {end}")
    return start, end
