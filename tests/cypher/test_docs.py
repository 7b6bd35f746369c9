"""docs/cypher.md runs: its Python block executes and its example filters parse and
return something on the bundled models."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from layersearch.graph.cypher import run_filter

from .graphs import BUNDLED_MODELS, REPO, load_graph

DOC = REPO / "docs" / "cypher.md"
TEXT = DOC.read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", TEXT, re.S)


def test_python_block_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    if not BUNDLED_MODELS.is_dir():
        pytest.skip("models/ is not in this checkout")
    monkeypatch.chdir(REPO)
    for block in _blocks("python"):
        exec(compile(block, str(DOC), "exec"), {})  # noqa: S102


def test_cypher_examples_run() -> None:
    if not BUNDLED_MODELS.is_dir():
        pytest.skip("models/ is not in this checkout")
    graph = load_graph(BUNDLED_MODELS)
    (block,) = _blocks("cypher")
    examples = [e.strip() for e in re.split(r"\n\s*\n", block) if e.strip()]
    assert len(examples) == 5
    for example in examples:
        assert run_filter(graph, example, {"ds": "shop"}), example


def test_documented_bounds_match_the_code() -> None:
    from layersearch.graph.cypher import evaluate, parser, tokens

    for name, value in [
        ("MAX_HOPS", parser.MAX_HOPS),
        ("MAX_BINDINGS", evaluate.MAX_BINDINGS),
        ("MAX_QUERY_CHARS", tokens.MAX_QUERY_CHARS),
        ("MAX_NESTING", parser.MAX_NESTING),
        ("MAX_REGEX_CHARS", evaluate.MAX_REGEX_CHARS),
        ("MAX_REGEX_REPEATS", evaluate.MAX_REGEX_REPEATS),
        ("MAX_REGEX_INPUT", evaluate.MAX_REGEX_INPUT),
        ("MAX_REGEX_WORK", evaluate.MAX_REGEX_WORK),
        ("MAX_FILTER_SECONDS", evaluate.MAX_FILTER_SECONDS),
        ("MAX_REGEX_MATCH_SECONDS", evaluate.MAX_REGEX_MATCH_SECONDS),
        ("MAX_INT_BITS", evaluate.MAX_INT_BITS),
        ("MAX_STRING_CHARS", evaluate.MAX_STRING_CHARS),
        ("MAX_LIST_ITEMS", evaluate.MAX_LIST_ITEMS),
        ("MAX_CONCAT_TOTAL", evaluate.MAX_CONCAT_TOTAL),
        ("MAX_EXPRESSION_DEPTH", parser.MAX_EXPRESSION_DEPTH),
        ("MAX_PATTERN_LENGTH", parser.MAX_PATTERN_LENGTH),
        ("MAX_PATTERNS", parser.MAX_PATTERNS),
    ]:
        assert f"| `{name}` | {value:,} |" in TEXT, name
    assert os.fspath(Path("fixtures/cypher/golden.yaml")) in TEXT
