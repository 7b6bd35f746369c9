"""What an agent's MCP client meets first (issue #19): misnamed arguments, values out of
range, the HTTP startup line, and a bad configuration."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from layersearch.config import Settings, load_settings
from layersearch.errors import ConfigError
from layersearch.server import check_settings, create_server, tool_names
from tests.support import MINI, ROOT, cli_env, free_port, wait_for_port
from tests.support import tool_error_text as error_text

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def tools_and_schemas(api: Any) -> dict[str, dict[str, Any]]:
    async with Client(create_server(api=api)) as client:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


def no_pydantic(text: str) -> None:
    assert "errors.pydantic.dev" not in text and "validation error" not in text, text
    assert "type=" not in text and "input_value=" not in text, text


async def test_a_misnamed_argument_is_an_error_naming_the_valid_ones(api: Any) -> None:
    async with Client(create_server(api=api)) as client:
        text = error_text(await client.call_tool("search", {"q": "revenue"}))
        assert "unknown argument 'q'" in text
        assert "question, entities, query" in text
        close = error_text(await client.call_tool("search", {"questoin": "revenue"}))
        assert "did you mean 'question'?" in close


async def test_every_tool_refuses_unknown_arguments(api: Any) -> None:
    schemas = await tools_and_schemas(api)
    assert sorted(schemas) == sorted(tool_names())
    async with Client(create_server(api=api)) as client:
        for name, schema in schemas.items():
            text = error_text(await client.call_tool(name, {"not_an_argument": 1}))
            assert text.startswith(f"Error executing tool {name}: invalid_argument: "), text
            assert "'not_an_argument'" in text
            for prop in schema["properties"]:
                assert prop in text, (name, prop)


async def test_max_results_500_names_the_limit_in_our_words(api: Any) -> None:
    async with Client(create_server(api=api)) as client:
        text = error_text(await client.call_tool("search", {"question": "x", "max_results": 500}))
    assert "max_results should be less than or equal to 100 (got 500)" in text
    assert "1 to 100" in text
    no_pydantic(text)


def wrong_value(prop: dict[str, Any]) -> Any:
    """A value of the wrong JSON type for ``prop``."""
    types = {prop.get("type")} | {s.get("type") for s in prop.get("anyOf", [])}
    return "not an object" if "object" in types else {"not": ["a", "scalar"]}


async def test_every_validation_error_of_every_tool_is_ours(api: Any) -> None:
    schemas = await tools_and_schemas(api)
    async with Client(create_server(api=api)) as client:
        for name, schema in schemas.items():
            for prop, spec in schema["properties"].items():
                args = {prop: wrong_value(spec)}
                text = error_text(await client.call_tool(name, args))
                assert text.startswith(f"Error executing tool {name}: invalid_argument: "), text
                assert prop in text, (name, prop, text)
                no_pydantic(text)
        missing = error_text(await client.call_tool("inspect", {}))
        assert "missing required argument ids" in missing
        no_pydantic(missing)


# -- serving ----------------------------------------------------------------------------------


def serve(
    *args: str, cwd: Path | None = None, unset: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    env = cli_env()
    for var in unset:
        env.pop(var, None)
    return subprocess.Popen(
        [sys.executable, "-m", "layersearch", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.terminate()
    try:
        return proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


@pytest.mark.parametrize("as_json", [False, True])
def test_http_startup_says_where_in_a_plain_line(tmp_path: Path, as_json: bool) -> None:
    port = free_port()
    proc = serve(
        "--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--port", str(port),
        "--models", str(MINI), *(["--json"] if as_json else []),
    )  # fmt: skip
    try:
        wait_for_port(port, proc)
    finally:
        out, err = stop(proc)
    url = f"http://127.0.0.1:{port}/mcp"
    assert "WARNING" not in err, err
    if as_json:
        assert json.loads(out) == {"transport": "streamable-http", "url": url}
    else:
        assert out == ""
        assert err.splitlines()[0] == f"serving MCP at {url} (Ctrl-C to stop)"


@pytest.mark.parametrize("transport", [(), ("--http", "--port", "8765")])
def test_a_bad_embedder_in_the_config_stops_serve_at_start(
    tmp_path: Path, transport: tuple[str, ...]
) -> None:
    (tmp_path / "layersearch.toml").write_text('embedder = "openai/text-embedding-3-small"\n')
    proc = serve(
        "--store",
        str(tmp_path / "s.duckdb"),
        "serve",
        *transport,
        cwd=tmp_path,
        unset=("LAYERSEARCH_EMBEDDER",),  # the file's embedder, not the tests' `none`
    )
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # a server that did start is not left behind on its port
            stop(proc)
    assert proc.returncode == 2
    assert out == ""
    # the first use of a project file is logged (issue #20); then one error line
    notice = "WARNING layersearch.config: using the project settings"
    lines = [line for line in err.splitlines() if not line.startswith(notice)]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {tmp_path / 'layersearch.toml'}: embedder: ")
    assert "did you mean 'litellm:openai/text-embedding-3-small'?" in lines[0]


def test_a_bad_configuration_fails_in_create_server(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not an embedder spec"):
        create_server(Settings(store=str(tmp_path / "s.duckdb"), embedder="nope"))
    with pytest.raises(ConfigError, match="does not exist"):
        create_server(Settings(store=str(tmp_path / "s.duckdb"), models=tmp_path / "absent"))
    with pytest.raises(ConfigError, match="does not apply to the fake embedder"):
        check_settings(Settings(embedder="fake", embedder_options={"api_base": "http://x"}))


def test_the_documented_settings_pass_the_startup_check(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    settings = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    toml = re.findall(r"```toml\n(.*?)```", settings, re.S)[0]
    (tmp_path / "layersearch.toml").write_text(toml)
    (tmp_path / "models").mkdir()
    check_settings(load_settings(env={}, cwd=tmp_path))
    for spec in re.findall(r'"LAYERSEARCH_EMBEDDER": "([^"]+)"', doc):
        check_settings(Settings(embedder=spec))
