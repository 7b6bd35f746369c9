"""Imports stay linear in their input: time at 1x and 10x size, and the ratio.

    PYTHONPATH=src python benchmarks/import_scaling.py [--quick] [--out FILE]

Each row times one import step on synthetic adversarial input at a base size and
at ten times it; a linear step has a ratio near 10, a quadratic one near 100.

- ``vault-tags-*``: ``notes._inline_tags`` (tags, code, links, URLs and comments
  blanked) on one long line: a lowercase token, a hex string, ``[[`` repeated,
  ``](`` repeated, ``<!--`` repeated, ``<a://`` repeated. Base 60,000 characters.
- ``chatgpt-branch``: ``importers._chatgpt_branch`` on a ChatGPT ``mapping`` that
  is one chain of messages, walked back from ``current_node``. Base 100,000 nodes.
- ``chatgpt-parse``: the whole ChatGPT conversation parse (branch walk, messages,
  timestamps) on an in-memory export. Base 10,000 messages.
- ``model-yaml``: ``native.load_yaml`` on a block-style model file. Base 2 MiB
  (10x is 20 MiB, the model-file limit).

Times are the best of ``--repeat`` runs (default 3).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layersearch.corpora.conversations import importers
from layersearch.corpora.vault import notes
from layersearch.semantic.importers import native

TOKENS: dict[str, Callable[[int], str]] = {
    "vault-tags-token": lambda n: "a" * n,
    "vault-tags-hex": lambda n: ("0123456789abcdef" * (n // 16 + 1))[:n],
    "vault-tags-wikilink": lambda n: "[[" * (n // 2),
    "vault-tags-link-target": lambda n: "](" * (n // 2),
    "vault-tags-comment": lambda n: "<!--" * (n // 4),
    "vault-tags-angle-url": lambda n: "<a://" * (n // 5),
}


def chain_mapping(n: int, *, messages: bool) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for i in range(n):
        node: dict[str, Any] = {
            "parent": f"n{i - 1}" if i else None,
            "children": [f"n{i + 1}"] if i < n - 1 else [],
        }
        if messages:
            node["message"] = {
                "author": {"role": "user" if i % 2 == 0 else "assistant"},
                "content": {"content_type": "text", "parts": [f"message {i} about revenue"]},
                "create_time": 1_700_000_000 + i,
            }
        mapping[f"n{i}"] = node
    return mapping


def model_yaml(target_bytes: int) -> str:
    lines = ["datasource:", "  name: big", "  models:"]
    size = 0
    m = 0
    while size < target_bytes:
        block = [
            f"    - model: model_{m}",
            f"      description: model number {m}",
            "      columns:",
        ]
        for c in range(20):
            block.append(f"        - name: column_{c}")
            block.append(f"          description: column {c} of model {m}, in plain words")
        text = "\n".join(block)
        lines.append(text)
        size += len(text) + 1
        m += 1
    return "\n".join(lines) + "\n"


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/import_scaling.json"))
    args = ap.parse_args(argv)
    scale = 0.02 if args.quick else 1.0

    rows: list[dict[str, Any]] = []

    def measure(name: str, base: int, unit: str, run: Callable[[int], Callable[[], Any]]) -> None:
        small, large = int(base * scale), int(base * scale) * 10
        t1 = best(run(small), args.repeat)
        t10 = best(run(large), args.repeat)
        rows.append(
            {
                "step": name,
                "unit": unit,
                "size_1x": small,
                "size_10x": large,
                "seconds_1x": round(t1, 4),
                "seconds_10x": round(t10, 4),
                "ratio": round(t10 / t1, 1) if t1 > 0 else None,
            }
        )
        print(
            f"{name:<24} {small:>10,} {large:>11,} {unit:<6} {t1:>9.4f} {t10:>9.4f} "
            f"{rows[-1]['ratio']:>6}",
            flush=True,
        )

    print(
        f"{'step':<24} {'1x':>10} {'10x':>11} {'unit':<6} {'s @1x':>9} {'s @10x':>9} {'ratio':>6}"
    )
    for name, make in TOKENS.items():

        def tags(n: int, make: Callable[[int], str] = make) -> Callable[[], Any]:
            text = make(n)
            return lambda: notes._inline_tags(text)

        measure(name, 60_000, "chars", tags)

    def branch(n: int) -> Callable[[], Any]:
        mapping = chain_mapping(n, messages=False)
        return lambda: importers._chatgpt_branch(mapping, f"n{n - 1}")

    measure("chatgpt-branch", 100_000, "nodes", branch)

    def parse(n: int) -> Callable[[], Any]:
        record = {
            "id": "c",
            "title": "t",
            "create_time": 1.7e9,
            "mapping": chain_mapping(n, messages=True),
            "current_node": f"n{n - 1}",
        }
        return lambda: importers._chatgpt_conversation(record, "bench", [])

    measure("chatgpt-parse", 10_000, "msgs", parse)

    def yaml_load(n: int) -> Callable[[], Any]:
        text = model_yaml(n)
        return lambda: native.load_yaml(text)

    measure("model-yaml", 2 * 1024 * 1024, "bytes", yaml_load)

    result = {
        "command": "PYTHONPATH=src python benchmarks/import_scaling.py"
        + (" --quick" if args.quick else ""),
        "python": sys.version.split()[0],
        "yaml_loader": "CSafeLoader" if hasattr(native.yaml, "CSafeLoader") else "SafeLoader",
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
