"""Settings: layersearch.toml, --config, environment overrides, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersearch.config import Settings, is_loopback, load_settings
from layersearch.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_nothing_configured(tmp_path: Path) -> None:
    assert load_settings(env={}, cwd=tmp_path) == Settings()


def test_file_in_cwd_with_paths_relative_to_it(tmp_path: Path) -> None:
    write(
        tmp_path / "layersearch.toml",
        'store = "data/s.duckdb"\nmodels = "models"\nvault = "/abs/vault"\n'
        'embedder = "openai/text-embedding-3-small"\n'
        '[embedder_options]\napi_base = "http://127.0.0.1:8080"\n',
    )
    # api_base in a project's file needs the user's trust (tests/reliability/test_trust.py)
    s = load_settings(env={"LAYERSEARCH_TRUST_PROJECT_CONFIG": "1"}, cwd=tmp_path)
    assert s.store == str(tmp_path / "data" / "s.duckdb")
    assert s.models == tmp_path / "models"
    assert s.vault == Path("/abs/vault")
    assert s.embedder == "openai/text-embedding-3-small"
    assert s.embedder_options == {"api_base": "http://127.0.0.1:8080"}
    assert s.source == tmp_path / "layersearch.toml"


def test_layersearch_table_and_urls_kept(tmp_path: Path) -> None:
    cfg = write(tmp_path / "other.toml", '[layersearch]\nstore = "postgresql://u@localhost/db"\n')
    assert load_settings(cfg, env={}, cwd="/").store == "postgresql://u@localhost/db"


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    write(tmp_path / "layersearch.toml", 'store = "a.duckdb"\nembedder = "x/y"\n')
    env = {
        "LAYERSEARCH_STORE": "b.duckdb",
        "LAYERSEARCH_MODELS": "m",
        "LAYERSEARCH_EMBEDDER": "local/minilm",
        "LAYERSEARCH_VAULT": "~/notes",
    }
    s = load_settings(env=env, cwd=tmp_path)
    assert s.store == str(tmp_path / "b.duckdb")
    assert s.models == tmp_path / "m"
    assert s.embedder == "local/minilm"
    assert s.vault == Path("~/notes").expanduser()


def test_config_from_env_var_and_explicit_path_wins(tmp_path: Path) -> None:
    a = write(tmp_path / "a.toml", 'store = ":memory:"\n')
    b = write(tmp_path / "b.toml", 'embedder = "e/f"\n')
    assert load_settings(env={"LAYERSEARCH_CONFIG": str(a)}, cwd=tmp_path).store == ":memory:"
    s = load_settings(b, env={"LAYERSEARCH_CONFIG": str(a)}, cwd=tmp_path)
    assert (s.store, s.embedder) == (None, "e/f")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('stor = "x"\n', "unknown key 'stor'"),
        ("store = 3\n", "'store' must be a non-empty string"),
        ('models = ""\n', "'models' must be a non-empty string"),
        ('embedder_options = "x"\n', "'embedder_options' must be a table"),
        ('store = "x\n', "is not valid TOML"),
        ("layersearch = 1\n", "'layersearch' must be a table"),
        ('store = "x"\n[layersearch]\nmodels = "m"\n', "outside [layersearch]"),
    ],
)
def test_bad_file_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    cfg = write(tmp_path / "layersearch.toml", text)
    with pytest.raises(ConfigError) as err:
        load_settings(env={}, cwd=tmp_path)
    assert message in str(err.value)
    assert str(cfg) in str(err.value)


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="from --config"):
        load_settings("nope.toml", env={}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="from LAYERSEARCH_CONFIG"):
        load_settings(env={"LAYERSEARCH_CONFIG": "nope.toml"}, cwd=tmp_path)


def test_replace_ignores_none() -> None:
    s = Settings(store="a").replace(store=None, embedder="e")
    assert (s.store, s.embedder) == ("a", "e")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
