"""Two processes on one DuckDB store: a writer saving memories, a reader searching.

Readers never fail on the writer's lock (the store retries with backoff), writes are
serialised, and nothing is lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from layersearch import Layersearch
from tests.support import MINI, ROOT

pytestmark = pytest.mark.slow

WRITES = 30

WRITER = """
import json, sys
from layersearch import Layersearch
ls = Layersearch(sys.argv[1])
ids = []
for i in range(int(sys.argv[2])):
    word = "zyw" + "abcdefghijklmnopqrstuvwxyz"[i % 26] * (1 + i // 26) + "q"
    ids.append([ls.save_memory(f"concurrent note {word}", entities=["shop.orders"]).id, word])
print(json.dumps(ids))
"""

READER = """
import json, sys, time
from pathlib import Path
from layersearch import Layersearch
from layersearch.errors import LayersearchError
done = Path(sys.argv[2])
searches, errors, seen = 0, [], 0
ls = Layersearch(sys.argv[1])
while not done.exists():
    try:
        r = ls.search(question="concurrent note tax", max_results=100)
        seen = max(seen, sum(h.id.startswith("memory:") for h in r.results))
        ls.list_memories(limit=5)
        searches += 1
    except LayersearchError as exc:
        errors.append(str(exc))
print(json.dumps({"searches": searches, "errors": errors, "seen": seen}))
"""


def test_writer_and_reader_processes(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    with Layersearch(store) as ls:
        ls.load(MINI)
    done = tmp_path / "writer-done"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store), str(done)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, str(store), str(WRITES)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        done.touch()
    out, err = reader.communicate(timeout=60)
    assert writer.returncode == 0, writer.stderr[-2000:]
    assert reader.returncode == 0, err[-2000:]
    report = json.loads(out)
    assert report["errors"] == [], report["errors"][:5]
    assert report["searches"] > 0
    saved = json.loads(writer.stdout)
    assert len({mid for mid, _ in saved}) == WRITES  # serialised: no id handed out twice
    with Layersearch(store) as ls:
        for mid, word in saved:
            assert ls.get_memory(mid).learning == f"concurrent note {word}"
            assert ls.search(question=word).results[0].id == mid
