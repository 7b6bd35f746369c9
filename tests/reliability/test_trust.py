"""What a project's files and a server's flags are trusted with (issue #20, points 11-12).

A ``layersearch.toml`` in the working directory (a cloned repository's) may choose the
store and the embedder, never where credentials go; ``serve --http`` off loopback needs a
bearer token that can protect it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from layersearch.config import check_token, load_settings, names_host, token_bits
from layersearch.embed.fake import FakeEmbedder
from layersearch.embed.testserver import EmbeddingServer
from layersearch.errors import ConfigError
from tests.support import MINI, ROOT

SECRET = "sk-user-secret-0123456789"


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full["PYTHONPATH"] = str(ROOT / "src")
    # The project's file chooses the embedder here: no LAYERSEARCH_EMBEDDER over it.
    for var in (
        "LAYERSEARCH_DEBUG",
        "LAYERSEARCH_TRUST_PROJECT_CONFIG",
        "LAYERSEARCH_CONFIG",
        "LAYERSEARCH_EMBEDDER",
    ):
        full.pop(var, None)
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "layersearch", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A cloned repository's folder with a store, and the user's environment (a real key,
    private config and state folders)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "OPENAI_API_KEY": SECRET,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    loaded = cli("--store", "s.duckdb", "load", str(MINI), "--no-embed", cwd=repo, env=env)
    assert loaded.returncode == 0, loaded.stderr
    return repo, env


def _hostile_toml(repo: Path, url: str, key: str = "api_base") -> None:
    (repo / "layersearch.toml").write_text(
        'store = "s.duckdb"\nembedder = "litellm:openai/fake-model"\n'
        f'[embedder_options]\n{key} = "{url}"\n'
    )


@pytest.mark.slow
def test_project_file_cannot_send_the_users_key_elsewhere(
    project: tuple[Path, dict[str, str]],
) -> None:
    repo, env = project
    with EmbeddingServer(FakeEmbedder(), api_key=SECRET) as listener:
        _hostile_toml(repo, listener.base_url)
        for args in (["search", "revenue"], ["embed"], ["memory", "list"]):
            done = cli(*args, cwd=repo, env=env)
            assert done.returncode == 2, (args, done.stderr)
            assert "embedder_options.api_base" in done.stderr
            assert "where your credentials are sent" in done.stderr
        assert listener.requests == [], "the user's key reached the project's listener"
        # The user's confirmation lets it through (which is how the leak looked before).
        trusted = cli("embed", cwd=repo, env={**env, "LAYERSEARCH_TRUST_PROJECT_CONFIG": "1"})
        assert trusted.returncode == 0, trusted.stderr
        assert listener.requests, "trusting the file should have used its api_base"


def test_trust_by_user_config_or_explicit_file(
    project: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = project
    _hostile_toml(repo, "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="a project file may not"):
        load_settings(env=env, cwd=repo)
    user = Path(env["XDG_CONFIG_HOME"]) / "layersearch" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'trusted_projects = ["{repo}"]\n')
    assert load_settings(env=env, cwd=repo).embedder_options["api_base"].startswith("http://")
    user.unlink()
    # Named by the user (--config or LAYERSEARCH_CONFIG): the user's choice.
    assert load_settings(repo / "layersearch.toml", env=env, cwd=tmp_path).embedder_options
    assert load_settings(
        env={**env, "LAYERSEARCH_CONFIG": str(repo / "layersearch.toml")}, cwd=tmp_path
    ).embedder_options


@pytest.mark.parametrize(
    "body",
    [
        '[embedder_options]\napi_key = "sk-attacker"\n',
        '[embedder_options]\nquery_prefix = "https://evil.example/"\n',
        '[embedder_options]\nextra_headers = {X = "1"}\n',
        'store = "postgresql://attacker.example/db"\n',
    ],
    ids=["api-key", "url-value", "headers", "store-url"],
)
def test_every_destination_setting_needs_trust(tmp_path: Path, body: str) -> None:
    (tmp_path / "layersearch.toml").write_text(body)
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    with pytest.raises(ConfigError, match="a project file may not"):
        load_settings(env=env, cwd=tmp_path)


class _Listener:
    """An HTTP listener that records every request (path and headers) and answers 500."""

    def __init__(self) -> None:
        import http.server
        import threading

        seen = self.requests = []  # type: ignore[var-annotated]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                seen.append((self.path, dict(self.headers)))
                self.send_error(500)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_a_project_embedder_naming_a_host_is_refused(project: tuple[Path, dict[str, str]]) -> None:
    """issue 42: the provider prefix made the model name a URL, and litellm posted the key
    there; a warning was all the user got."""
    repo, env = project
    listener = _Listener()
    try:
        url = f"http://127.0.0.1:{listener.port}/embed"
        (repo / "layersearch.toml").write_text(
            f'store = "s.duckdb"\nembedder = "litellm:huggingface/{url}"\n'
        )
        keys = {**env, "HUGGINGFACE_API_KEY": SECRET, "HF_TOKEN": SECRET}
        for args in (["search", "revenue"], ["embed"]):
            done = cli(*args, cwd=repo, env=keys)
            assert done.returncode == 2, (args, done.stderr)
            assert f"embedder (names a host: '{url}')" in done.stderr, done.stderr
            assert "LAYERSEARCH_EMBEDDER" in done.stderr  # where a host may come from
        assert listener.requests == [], "the user's key reached the project's host"
    finally:
        listener.close()


@pytest.mark.parametrize(
    "body, where",
    [
        ('embedder = "litellm:huggingface/http://127.0.0.1:18999/embed"', "embedder"),
        ('embedder = "litellm:hosted_vllm/evil.example.com/v1/m"', "evil.example.com"),
        ('embedder = "litellm:ollama/[::1]:11434/nomic"', "[::1]:11434"),
        ('embedder = "litellm:openai/10.0.0.5:8080/v1"', "10.0.0.5"),
        ('facts_llm = "litellm:openai//attacker.example/gpt"', "facts_llm"),
        ('facts_llm = "litellm:ollama/localhost:11434"', "localhost"),
        ('[embedder_options]\nquery_prefix = "see docs.attacker.example: "', "query_prefix"),
        ('[facts_llm_options]\ntimeout = "fe80::1"', "facts_llm_options.timeout"),
    ],
    ids=[
        "reported",
        "dns-name",
        "ipv6",
        "ipv4-no-scheme",
        "facts-scheme-relative",
        "facts-localhost",
        "option-value-dns",
        "option-value-ipv6",
    ],
)
def test_no_project_setting_names_a_host(tmp_path: Path, body: str, where: str) -> None:
    (tmp_path / "layersearch.toml").write_text(body + "\n")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    with pytest.raises(ConfigError, match="a project file may not") as info:
        load_settings(env=env, cwd=tmp_path)
    assert where in str(info.value) and "names a host" in str(info.value)
    # the same file named by the user, or the value from the environment, is the user's
    assert load_settings(tmp_path / "layersearch.toml", env=env, cwd=tmp_path)


@pytest.mark.parametrize(
    "spec",
    [
        "litellm:openai/text-embedding-3-small",
        "litellm:bedrock/amazon.titan-embed-text-v2:0",
        "litellm:bedrock/cohere.embed-english-v3",
        "litellm:huggingface/BAAI/bge-large-en-v1.5",
        "litellm:cloudflare/@cf/baai/bge-base-en-v1.5",
        "litellm:ollama/llama3.1:8b",
        "litellm:gemini/gemini-1.5-flash",
        "local:/opt/models/bge-small-en-v1.5",
        "fake:16",
    ],
)
def test_model_names_are_not_hosts(tmp_path: Path, spec: str) -> None:
    (tmp_path / "layersearch.toml").write_text(f'embedder = "{spec}"\nfacts_llm = "{spec}"\n')
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    assert load_settings(env=env, cwd=tmp_path).embedder == spec
    assert names_host(spec) is None


def test_a_project_file_choosing_only_the_embedder_is_used_and_announced_once(
    project: tuple[Path, dict[str, str]],
) -> None:
    repo, env = project
    (repo / "layersearch.toml").write_text('store = "s.duckdb"\nembedder = "fake"\n')
    first = cli("search", "revenue", cwd=repo, env=env)
    assert first.returncode == 0, first.stderr
    assert "using the project settings" in first.stderr and "embedder=fake" in first.stderr
    again = cli("search", "revenue", cwd=repo, env=env)
    assert again.returncode == 0 and "using the project settings" not in again.stderr
    (repo / "layersearch.toml").write_text('store = "s.duckdb"\nembedder = "fake:16"\n')
    changed = cli("search", "revenue", cwd=repo, env=env)
    assert "using the project settings" in changed.stderr, "a changed file is announced again"


# -- 12: bearer token strength off loopback ------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [
        " ",
        "   \t",
        "short",
        "aaaaaaaaaaaaaaaaaaaaaaaa",
        "abababababababababab",
        "x" * 15,
        # issue 42: accepted before, 16 characters of 10+ distinct ones
        "password12345678",
        "0123456789abcdef",
        # variants: long, but patterns (a repeated word, a run, a short alphabet)
        "passwordpasswordpasswordpassword1!",
        "abcdefghijklmnopqrstuvwxyz0123456789",
        "1" + "0" * 40,
    ],
)
def test_weak_tokens_are_refused_off_loopback(tmp_path: Path, token: str) -> None:
    done = cli(
        "--store",
        str(tmp_path / "s.duckdb"),
        "serve",
        "--http",
        "--host",
        "0.0.0.0",
        "--token",
        token,
        cwd=tmp_path,
        env={},
    )
    assert done.returncode == 2, done.stderr
    assert "bearer token" in done.stderr and "secrets.token_urlsafe" in done.stderr
    assert not (tmp_path / "s.duckdb").exists()


def test_token_rules() -> None:
    import secrets

    # what the error says to run, and other generators of 32 random bytes: always enough
    for _ in range(2000):
        check_token("0.0.0.0", secrets.token_urlsafe(32))
        check_token("0.0.0.0", secrets.token_hex(32))
    assert token_bits("password12345678") < 64 and token_bits("0123456789abcdef") <= 16
    with pytest.raises(ConfigError, match=r"about 96 bits .* needs 128"):
        check_token("0.0.0.0", "q8Zr-2mKx_Tn5wLp")  # 16 varied characters: not 128 bits
    check_token("127.0.0.1", None)
    check_token("localhost", "dev")  # loopback: a short token is the user's business
    for host, token in [("127.0.0.1", " "), ("::1", "a b"), ("10.0.0.5", "tok\nen1234567890ab")]:
        with pytest.raises(ConfigError, match="printable ASCII without spaces"):
            check_token(host, token)
    with pytest.raises(ConfigError, match="without a bearer token"):
        check_token("0.0.0.0", None)
    with pytest.raises(
        ConfigError, match=r'python -c "import secrets; print\(secrets.token_urlsafe\(32\)\)"'
    ):
        check_token("192.168.1.4", "0123456789abcde")
    check_token("127.0.0.1", "password12345678")  # loopback: as before, the user's business
