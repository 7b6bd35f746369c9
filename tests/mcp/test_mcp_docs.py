"""docs/mcp.md: its client snippets parse, its settings file loads, and serve stays light."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from layersearch.config import load_settings
from layersearch.server import tool_names
from tests.support import ROOT, cli_env

DOC = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_client_snippets_are_valid_json_for_our_cli() -> None:
    snippets = [json.loads(b) for b in blocks("json")]
    assert len(snippets) == 4
    for snippet in snippets:
        server = snippet["mcpServers"]["layersearch"]
        if "url" in server:
            assert server["url"].endswith("/mcp")
            assert server["headers"]["Authorization"].startswith("Bearer ")
        else:
            assert server["command"] == "layersearch" and "serve" in server["args"]


def test_settings_example_loads(tmp_path: Path) -> None:
    """The settings file of docs/configuration.md (which mcp.md points to) loads as a
    project's file: it names no host, so it needs no trust."""
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    toml = re.findall(r"```toml\n(.*?)```", page, re.S)[0]
    (tmp_path / "layersearch.toml").write_text(toml)
    assert "configuration.md" in DOC and "LAYERSEARCH_TRUST_PROJECT_CONFIG" in page
    s = load_settings(env={}, cwd=tmp_path)
    assert s.models == tmp_path / "models"
    assert s.embedder == "local" and s.embedder_options == {"batch_size": 64}
    assert s.facts_llm_options == {"timeout": 30}


def test_every_served_tool_is_documented() -> None:
    table = DOC.split("## Tools", 1)[1].split("##", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert documented == tool_names()


def test_building_the_server_loads_no_heavy_dependency() -> None:
    code = (
        "import sys; from layersearch.server import create_server; create_server(); "
        "print(sorted(m for m in ('litellm', 'torch', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
