"""Settings for long-running entry points (the MCP server): where the store is,
which semantic layer to load into an empty store, the embedder and the vault.

They come from ``layersearch.toml`` (in the working directory, or the file named
by ``--config`` / ``$LAYERSEARCH_CONFIG``), then environment variables override
the file::

    # layersearch.toml — keys at the top level or under a [layersearch] table
    store = ".layersearch/store.duckdb"     # DuckDB file or postgresql://…  [LAYERSEARCH_STORE]
    models = "models/"                      # loaded at start when the store is empty [LAYERSEARCH_MODELS]
    embedder = "litellm:openai/text-embedding-3-small"   # embedder spec [LAYERSEARCH_EMBEDDER]
    vault = "~/notes"                       # an Obsidian-style vault [LAYERSEARCH_VAULT]

    [embedder_options]                      # passed to the embedder as keyword arguments
    api_base = "http://127.0.0.1:8080"

Relative paths in the file are relative to the file; relative paths in the
environment are relative to the working directory.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError

__all__ = ["CONFIG_FILE", "ENV_VARS", "Settings", "is_loopback", "load_settings"]

CONFIG_FILE = "layersearch.toml"

#: Setting → the environment variable that overrides it.
ENV_VARS: dict[str, str] = {
    "store": "LAYERSEARCH_STORE",
    "models": "LAYERSEARCH_MODELS",
    "embedder": "LAYERSEARCH_EMBEDDER",
    "vault": "LAYERSEARCH_VAULT",
}
CONFIG_ENV = "LAYERSEARCH_CONFIG"

_STRING_KEYS = ("store", "models", "embedder", "vault")
_KNOWN_KEYS = (*_STRING_KEYS, "embedder_options")


@dataclass(frozen=True)
class Settings:
    """Resolved settings; ``None`` means "not configured" (the library default applies)."""

    store: str | None = None
    models: Path | None = None
    embedder: str | None = None
    embedder_options: dict[str, Any] = field(default_factory=dict)
    vault: Path | None = None
    #: The file the settings were read from, if any.
    source: Path | None = None

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (``None`` values are ignored)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def load_settings(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Settings:
    """Read the config file (explicit path, else $LAYERSEARCH_CONFIG, else ./layersearch.toml
    when present), then apply environment overrides."""
    env = os.environ if env is None else env
    base = Path(cwd) if cwd is not None else Path.cwd()
    file = _config_path(path, env, base)
    values: dict[str, Any] = _read_file(file) if file is not None else {}
    settings = Settings(
        store=_store_value(values.get("store"), file.parent if file else base),
        models=_path_value(values.get("models"), file.parent if file else base),
        embedder=values.get("embedder"),
        embedder_options=dict(values.get("embedder_options") or {}),
        vault=_path_value(values.get("vault"), file.parent if file else base),
        source=file,
    )
    return _apply_env(settings, env, base)


def _config_path(
    path: str | os.PathLike[str] | None, env: Mapping[str, str], base: Path
) -> Path | None:
    if path is not None:
        explicit, origin = Path(path), "--config"
    elif env.get(CONFIG_ENV):
        explicit, origin = Path(env[CONFIG_ENV]), CONFIG_ENV
    else:
        default = base / CONFIG_FILE
        return default if default.is_file() else None
    explicit = explicit.expanduser()
    if not explicit.is_absolute():
        explicit = base / explicit
    if not explicit.is_file():
        raise ConfigError(f"config file {explicit} (from {origin}) does not exist")
    return explicit


def _read_file(file: Path) -> dict[str, Any]:
    try:
        with file.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror or exc}") from exc
    section = data.get("layersearch")
    if section is not None:
        if not isinstance(section, dict):
            raise ConfigError(f"{file}: 'layersearch' must be a table, e.g. [layersearch]")
        outside = sorted(k for k in data if k != "layersearch")
        if outside:
            raise ConfigError(
                f"{file}: keys {', '.join(outside)} sit outside [layersearch]; "
                "put every key in the table or none"
            )
        data = section
    for key, value in data.items():
        _check_key(file, key, value)
    return data


def _check_key(file: Path, key: str, value: Any) -> None:
    if key not in _KNOWN_KEYS:
        raise ConfigError(f"{file}: unknown key '{key}' (known keys: {', '.join(_KNOWN_KEYS)})")
    if key in _STRING_KEYS and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(
            f"{file}: '{key}' must be a non-empty string, got {type(value).__name__} {value!r}"
        )
    if key == "embedder_options" and not isinstance(value, dict):
        raise ConfigError(
            f"{file}: 'embedder_options' must be a table, e.g. [embedder_options] "
            f'with api_base = "…"; got {type(value).__name__}'
        )


def _apply_env(settings: Settings, env: Mapping[str, str], base: Path) -> Settings:
    changes: dict[str, Any] = {}
    for key, var in ENV_VARS.items():
        raw = env.get(var)
        if raw is None or not raw.strip():
            continue
        if key == "store":
            changes[key] = _store_value(raw, base)
        elif key == "embedder":
            changes[key] = raw.strip()
        else:
            changes[key] = _path_value(raw, base)
    return settings.replace(**changes)


def _store_value(value: str | None, base: Path) -> str | None:
    if value is None:
        return None
    value = value.strip()
    # URLs and the in-memory marker are not paths.
    if value == ":memory:" or "://" in value:
        return value
    return str(_path_value(value, base))


def _path_value(value: str | None, base: Path) -> Path | None:
    if value is None:
        return None
    p = Path(value.strip()).expanduser()
    return p if p.is_absolute() else base / p


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a server reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
