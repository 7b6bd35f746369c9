"""Settings for long-running entry points (the MCP server): where the store is,
which semantic layer to load into an empty store, the embedder and the vault.

They come from ``layersearch.toml`` (in the working directory, or the file named
by ``--config`` / ``$LAYERSEARCH_CONFIG``), then environment variables override
the file::

    # layersearch.toml — keys at the top level or under a [layersearch] table
    store = ".layersearch/store.duckdb"     # DuckDB file or postgresql://…  [LAYERSEARCH_STORE]
    models = "models/"                      # loaded at start when the store is empty [LAYERSEARCH_MODELS]
    embedder = "litellm:openai/text-embedding-3-small"   # embedder spec, or "none"; default: local when installed [LAYERSEARCH_EMBEDDER]
    vault = "~/notes"                       # an Obsidian-style vault [LAYERSEARCH_VAULT]
    facts_llm = "litellm:openai/gpt-4o-mini"   # facts extracted from conversation sessions at import; default: off [LAYERSEARCH_FACTS_LLM]

    [embedder_options]                      # passed to the embedder as keyword arguments
    api_base = "http://127.0.0.1:8080"

    [facts_llm_options]                     # api_base, api_key, timeout, max_tries of the facts LLM
    api_base = "http://127.0.0.1:8000/v1"

    [ranking.entities]                      # a corpus's ranking settings (docs/ranking.md)
    without = ["memory-runs"]               # stages switched off

Relative paths in the file are relative to the file; relative paths in the
environment are relative to the working directory.

A file found in the working directory (not named by ``--config`` or
``$LAYERSEARCH_CONFIG``) is a project's file: it may choose the store path and the
embedder, but a store URL, an embedder (or facts LLM) option that says where requests and
their credentials go (``api_base``, ``api_key``, …), or an ``embedder``, ``facts_llm`` or
option value that names a host whatever its provider prefix (:func:`names_host`) is
refused unless the user trusts it (``$LAYERSEARCH_TRUST_PROJECT_CONFIG``, or
``trusted_projects`` in ``~/.config/layersearch/config.toml``); a host may always come
from the environment or the command line, which the user controls. Its first use is
logged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import logging
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError

__all__ = [
    "CONFIG_FILE",
    "ENV_VARS",
    "MIN_TOKEN_BITS",
    "Settings",
    "check_token",
    "is_loopback",
    "load_settings",
    "names_host",
    "token_bits",
]

CONFIG_FILE = "layersearch.toml"

log = logging.getLogger("layersearch.config")

#: Setting → the environment variable that overrides it.
ENV_VARS: dict[str, str] = {
    "store": "LAYERSEARCH_STORE",
    "models": "LAYERSEARCH_MODELS",
    "embedder": "LAYERSEARCH_EMBEDDER",
    "vault": "LAYERSEARCH_VAULT",
    "facts_llm": "LAYERSEARCH_FACTS_LLM",
}
CONFIG_ENV = "LAYERSEARCH_CONFIG"

_STRING_KEYS = ("store", "models", "embedder", "vault", "facts_llm")
_TABLE_KEYS = ("embedder_options", "facts_llm_options")
#: ``[ranking.<corpus>]``: a corpus's ranking settings, read by the API (docs/ranking.md)
_RANKING_KEY = "ranking"
_KNOWN_KEYS = (*_STRING_KEYS, *_TABLE_KEYS, _RANKING_KEY)


@dataclass(frozen=True)
class Settings:
    """Resolved settings; ``None`` means "not configured" (the library default applies)."""

    store: str | None = None
    models: Path | None = None
    embedder: str | None = None
    embedder_options: dict[str, Any] = field(default_factory=dict)
    vault: Path | None = None
    #: the chat model that extracts facts from conversation sessions at import
    #: (``litellm:<model>``); ``None`` or ``none``: off
    facts_llm: str | None = None
    facts_llm_options: dict[str, Any] = field(default_factory=dict)
    #: corpus → its ranking settings (``[ranking.entities]``), checked by the API
    ranking: dict[str, dict[str, Any]] = field(default_factory=dict)
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
    if file is not None and path is None and not env.get(CONFIG_ENV):
        # Found in the working directory, not named by the user: a project's file.
        _check_project_file(file, values, env)
    settings = Settings(
        store=_store_value(values.get("store"), file.parent if file else base),
        models=_path_value(values.get("models"), file.parent if file else base),
        embedder=values.get("embedder"),
        embedder_options=dict(values.get("embedder_options") or {}),
        vault=_path_value(values.get("vault"), file.parent if file else base),
        facts_llm=values.get("facts_llm"),
        facts_llm_options=dict(values.get("facts_llm_options") or {}),
        ranking={k: dict(v) for k, v in (values.get(_RANKING_KEY) or {}).items()},
        source=file,
    )
    return _apply_env(settings, env, base)


#: Set to 1 to let the layersearch.toml of the working directory say where credentials
#: go (or to the file or its folder, several joined by the path separator).
TRUST_ENV = "LAYERSEARCH_TRUST_PROJECT_CONFIG"
#: the user's own settings file: ``trusted_projects = ["~/src/analytics", …]``
USER_CONFIG = "config.toml"
#: option names that say where a request (and the credentials it carries) goes
_DESTINATION = re.compile(
    r"(^|_)(api|base|url|uri|endpoint|host|key|token|secret|password|auth|headers?|proxy|"
    r"org|organization)($|_)",
    re.IGNORECASE,
)


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "layersearch"


#: a URL of any scheme, or a scheme-relative ``//host…``
_URL_IN = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^\s'\"]*")
#: an IPv6 address: ``::`` in it, or in brackets
_IPV6_MARK = re.compile(r"[^\s/@]*(?:::|\[[0-9A-Fa-f:.%]*\])[^\s/]*")
#: the parts of a value a host name could be one of
_TOKEN_SPLIT = re.compile(r"[\s/:@?#=,;'\"()<>]+")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
#: a DNS name: dotted labels ending in an alphabetic top-level label (``example.com``);
#: model names end in a version (``bge-small-en-v1.5``, ``titan-embed-text-v2``)
_DNS_NAME = re.compile(r"(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,63}\.?")


def names_host(value: str) -> str | None:
    """The part of ``value`` that names a host, or None: a URL of any scheme or ``//host``,
    an IP address (v4, or v6 with ``::`` or in brackets), ``localhost``, or a DNS name
    (dotted labels ending in an alphabetic one, as ``api.example.com``), wherever it
    stands in the value (``litellm:huggingface/http://127.0.0.1:18999/embed``)."""
    mark = _URL_IN.search(value) or _IPV6_MARK.search(value)
    if mark is not None:
        return mark.group()
    for token in _TOKEN_SPLIT.split(value):
        bare = token.strip(".")
        if (
            _IPV4.fullmatch(bare)
            or bare.lower() == "localhost"
            or bare.lower().endswith(".localhost")
            or _DNS_NAME.fullmatch(token)
        ):
            return token
    return None


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    """Every string in ``value`` (tables and lists walked), with the setting it is at."""
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [s for i, v in enumerate(value) for s in _strings(v, f"{where}[{i}]")]
    return []


def _destinations(values: Mapping[str, Any]) -> list[str]:
    """Settings of a file that choose where requests, and the credentials they carry, go:
    a store that is a URL (libpq sends $PGPASSWORD to whatever host it names); an
    ``embedder`` or ``facts_llm`` spec, or any option value, that names a host
    (:func:`names_host`), whatever its provider prefix; option keys named like a URL,
    key, token or header; and option tables or lists (they could hide headers)."""
    out: list[str] = []
    store = values.get("store")
    if isinstance(store, str) and "://" in store:
        out.append("store")
    for key in ("embedder", "facts_llm", *_TABLE_KEYS):
        for where, text in _strings(values.get(key), key):
            host = names_host(text)
            if host is not None:
                out.append(f"{where} (names a host: {host!r})")
    for table in _TABLE_KEYS:
        for key, value in (values.get(table) or {}).items():
            where = f"{table}.{key}"
            if any(o.startswith(where + " ") or o.startswith(where + ".") for o in out):
                continue
            if _DESTINATION.search(str(key)) or isinstance(value, dict | list):
                out.append(where)
    return out


def _trusted(file: Path, env: Mapping[str, str]) -> bool:
    here = file.resolve()
    raw = env.get(TRUST_ENV, "").strip()
    if raw.lower() in ("1", "true", "yes"):
        return True
    listed = [p for p in raw.split(os.pathsep) if p.strip()]
    user = user_config_dir(env) / USER_CONFIG
    if user.is_file():
        try:
            with user.open("rb") as fh:
                projects = tomllib.load(fh).get("trusted_projects", [])
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read your settings {user}: {exc}") from exc
        if not isinstance(projects, list) or not all(isinstance(p, str) for p in projects):
            raise ConfigError(f"{user}: trusted_projects must be a list of folder paths")
        listed += projects
    for entry in listed:
        p = Path(entry.strip()).expanduser().resolve()
        if p in (here, here.parent):
            return True
    return False


def _check_project_file(file: Path, values: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """A project's layersearch.toml may choose the store and the embedder, not where
    credentials go, unless the user said to trust it; its first use is said on stderr."""
    risky = _destinations(values)
    if risky and not _trusted(file, env):
        raise ConfigError(
            f"{file} (found in the working directory) sets {', '.join(risky)}, which decides "
            "where your credentials are sent; a project file may not, unless you trust it: "
            f"set {TRUST_ENV}=1 (or to its folder), add the folder to trusted_projects in "
            f"{user_config_dir(env) / USER_CONFIG}, or name the file with --config (a host "
            "may also come from your environment or command line: LAYERSEARCH_EMBEDDER, "
            "LAYERSEARCH_FACTS_LLM, --embedder)"
        )
    _announce(file, values, env)


def _announce(file: Path, values: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Log the first use of a project file (of this content) at warning, later ones at info."""
    try:
        digest = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
    except OSError:
        digest = "unreadable"
    key = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:16] + "-" + digest
    xdg = env.get("XDG_STATE_HOME")
    seen = (Path(xdg) if xdg else Path.home() / ".local" / "state") / "layersearch" / "seen"
    first = not (seen / key).exists()
    keys = (
        ", ".join(f"{k}={values[k]}" for k in ("store", "embedder") if k in values)
        or "no store or embedder"
    )
    (log.warning if first else log.info)(
        "using the project settings %s from the working directory (%s)", file, keys
    )
    if first:
        try:
            seen.mkdir(parents=True, exist_ok=True)
            (seen / key).touch()
        except OSError as exc:
            log.debug("cannot record %s as seen: %s", file, exc)


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
    if key == _RANKING_KEY and not (
        isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
    ):
        raise ConfigError(
            f"{file}: '{key}' must hold one table per corpus, e.g. [ranking.entities] "
            f'with without = ["memory-runs"]'
        )
    if key in _TABLE_KEYS and not isinstance(value, dict):
        raise ConfigError(
            f"{file}: '{key}' must be a table, e.g. [{key}] "
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
        elif key in ("embedder", "facts_llm"):
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


#: the least entropy (bits, by :func:`token_bits`) of a bearer token that protects a
#: server reachable from other machines; ``secrets.token_urlsafe(32)`` gives 256
MIN_TOKEN_BITS = 128
_TOKEN_HINT = 'make one with: python -c "import secrets; print(secrets.token_urlsafe(32))"'
_HEX = frozenset("0123456789abcdef")
_BASE64URL_EXTRA = frozenset("-_")


def _alphabet(token: str) -> int:
    """The size of the smallest usual alphabet holding every character of ``token``:
    hexadecimal (16) when it is one, else the sum of the classes it uses: digits 10,
    lowercase 26, uppercase 26, ``-`` and ``_`` 2 (base64url), other punctuation 32."""
    chars = set(token)
    if chars <= _HEX or chars <= {c.upper() for c in _HEX}:
        return 16
    size = 0
    size += 10 if any(c.isdigit() for c in chars) else 0
    size += 26 if any(c.islower() for c in chars) else 0
    size += 26 if any(c.isupper() for c in chars) else 0
    rest = {c for c in chars if not c.isalnum()}
    if rest:
        size += 2 if rest <= _BASE64URL_EXTRA else 32
    return size


def token_bits(token: str) -> float:
    """An estimate of the entropy of ``token`` in bits: log2 of its alphabet
    (:func:`_alphabet`) for each character that does not follow from those before it.
    A character follows when it continues a run (the third and later of ``aaa``, ``123``,
    ``cba``) or completes three characters already seen earlier in the token
    (``passwordpassword``). A random token loses almost nothing (``token_urlsafe(32)``,
    43 characters of 64: about 256 bits); a made-up one loses its patterns
    (``password12345678``: 52 bits; ``0123456789abcdef``: 16)."""
    if not token:
        return 0.0
    free = 0
    for i, ch in enumerate(token):
        if i >= 2:
            step = ord(ch) - ord(token[i - 1])
            if step in (-1, 0, 1) and step == ord(token[i - 1]) - ord(token[i - 2]):
                continue
            if token[i - 2 : i + 1] in token[: i - 1]:
                continue
        free += 1
    return free * math.log2(_alphabet(token))


def check_token(host: str, token: str | None) -> None:
    """Refuse a bearer token that cannot protect a server on ``host``: none (or a weak one)
    off loopback, and on any host a token that is blank or holds spaces or characters an
    HTTP header cannot carry."""
    if token is not None and (
        not token.strip()
        or any(ch.isspace() for ch in token)
        or not token.isascii()
        or not token.isprintable()
    ):
        raise ConfigError(
            "the bearer token must be printable ASCII without spaces "
            f"(got {len(token)} characters, {sum(ch.isspace() for ch in token)} of them "
            f"blank); {_TOKEN_HINT}"
        )
    if is_loopback(host):
        return
    if not token:
        raise ConfigError(
            f"refusing to serve on {host} without a bearer token: set --token or "
            "LAYERSEARCH_TOKEN, or bind a loopback address such as 127.0.0.1"
        )
    bits = token_bits(token)
    if bits < MIN_TOKEN_BITS:
        raise ConfigError(
            f"refusing to serve on {host} with a weak bearer token (about {bits:.0f} bits of "
            f"entropy by layersearch's estimate; off loopback it needs {MIN_TOKEN_BITS}): "
            f"{_TOKEN_HINT}"
        )
