"""Write fixtures/cypher/golden.yaml from golden_cases.py.

Each expected id set comes from Kùzu or from the case's Python oracle, never from our
engine; our engine's answer is only compared, and any disagreement is printed and
stops the write so that it gets looked at. Error messages are our own and are
recorded as written, for review in the diff.

    PYTHONPATH=src python -m tests.cypher.make_golden
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from layersearch.errors import CypherError
from layersearch.graph.cypher import run_filter

from .golden_cases import CASES, ERRORS
from .graphs import BUNDLED_MODELS, REPO, kuzu_connection, kuzu_ids, load_graph

GOLDEN = REPO / "fixtures" / "cypher" / "golden.yaml"


class _Literal(str):
    pass


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def main() -> int:
    graph = load_graph(BUNDLED_MODELS)
    _db, conn = kuzu_connection(graph)
    entries: list[dict[str, Any]] = []
    bad = 0
    for case in CASES:
        if case.kuzu:
            text = case.query if case.kuzu is True else case.kuzu
            expected = [i for i in kuzu_ids(conn, text, case.params) if i is not None]
            source = "kuzu" if case.kuzu is True else "kuzu (translated)"
        else:
            assert case.oracle is not None, case.query
            expected = case.oracle(graph)
            source = "python oracle"
        expected = list(dict.fromkeys(expected)) if case.ordered else sorted(set(expected))
        got = run_filter(graph, case.query, case.params)
        if got != expected:
            bad += 1
            print(
                f"DISAGREE {case.query}\n  expected {expected}\n  got      {got}", file=sys.stderr
            )
        entry: dict[str, Any] = {"query": _Literal(case.query)}
        if case.params:
            entry["params"] = case.params
        entry["expected_ids"] = expected
        if case.ordered:
            entry["ordered"] = True
        entry["checked_with"] = source
        if isinstance(case.kuzu, str):
            entry["kuzu_query"] = case.kuzu
        if case.note:
            entry["note"] = case.note
        entries.append(entry)
    for err in ERRORS:
        try:
            run_filter(graph, err.query, err.params)
        except CypherError as exc:
            if type(exc).__name__ != err.error:
                bad += 1
                print(f"WRONG ERROR {err.query}: {type(exc).__name__}: {exc}", file=sys.stderr)
            entry = {"query": _Literal(err.query)}
            if err.params:
                entry["params"] = err.params
            entry["error"] = type(exc).__name__
            entry["message"] = _Literal(str(exc))
            entries.append(entry)
        else:
            bad += 1
            print(f"NO ERROR {err.query}", file=sys.stderr)
    if bad:
        print(f"{bad} problems; golden file not written", file=sys.stderr)
        return 1
    dumper = yaml.SafeDumper
    dumper.add_representer(_Literal, _literal)
    header = (
        "# Golden filters over the bundled models/ graph (hidden entities excluded).\n"
        "# Written by tests/cypher/make_golden.py: expected ids come from Kùzu or a Python\n"
        "# oracle (see checked_with), never from our engine; error messages are ours.\n"
    )
    GOLDEN.write_text(
        header + yaml.dump(entries, Dumper=dumper, sort_keys=False, allow_unicode=True, width=160)
    )
    print(f"wrote {len(entries)} entries to {GOLDEN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
