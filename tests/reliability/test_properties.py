"""Search properties on the bundled sample (models/): byte-identical output across processes
whatever the hash seed, and max_results=n a prefix of n+k for any request.

The analyzer and RRF properties live in tests/test_analyzer.py and tests/test_fusion.py;
the Cypher and frontmatter parsers are fuzzed in tests/cypher/test_fuzz.py and
tests/vault/test_properties.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layersearch import Layersearch
from tests.support import MODELS, ROOT

REQUESTS: list[dict[str, Any]] = [
    {"question": "monthly revenue by store", "explain": True, "max_results": 30},
    {"entities": ["orders", "customers.country"], "compact": False},
    {"question": "refund rate", "datasource": "shop", "channels": ["fulltext"]},
    {"query": {"measures": ["shop.orders.total_revenue"], "dimensions": ["stores.store_name"]}},
    {"question": "campaign signups", "entities": ["campaigns"], "explain": True},
    {"question": "", "max_results": 100},
    {"question": "invoice", "cypher_filter": "MATCH (m:Model) RETURN m.id AS id", "explain": True},
    {"question": "zzzz nothing matches this qqq"},
]

SCRIPT = """
import json, sys
from layersearch import Layersearch
ls = Layersearch(sys.argv[1])
for req in json.loads(sys.argv[2]):
    sys.stdout.write(ls.search(**req).model_dump_json() + "\\n")
"""


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    ls = Layersearch(tmp_path_factory.mktemp("sample") / "s.duckdb")
    ls.load(MODELS)
    yield ls
    ls.close()


@pytest.mark.slow
def test_byte_identical_across_processes_and_hash_seeds(sample: Layersearch) -> None:
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT, sample.store.location, json.dumps(REQUESTS)],
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    lines = outputs.pop().decode().splitlines()
    assert len(lines) == len(REQUESTS)
    # and the same bytes in this process, with whatever seed it has
    here = [sample.search(**req).model_dump_json() for req in REQUESTS]
    assert lines == here


WORDS = [
    "revenue",
    "store",
    "monthly",
    "customer",
    "refund",
    "campaign",
    "invoice",
    "tax",
    "signup",
    "order",
    "the",
    "by",
    "ledger",
    "spend",
    "session",
    "zzz",
]
REFS = [
    "orders",
    "customers",
    "shop.orders.order_total",
    "campaigns",
    "invoices",
    "accounts",
    "sum(order_total)",
    "nope",
    "stores.store_name",
]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    words=st.lists(st.sampled_from(WORDS), max_size=6),
    refs=st.lists(st.sampled_from(REFS), max_size=3, unique=True),
    datasource=st.sampled_from([None, "shop", "marketing", "finance"]),
    channels=st.sampled_from([None, ["bm25"], ["fulltext"], ["bm25", "fulltext"]]),
    n=st.integers(1, 60),
    k=st.integers(1, 40),
)
def test_max_results_n_is_a_prefix_of_n_plus_k(
    sample: Layersearch,
    words: list[str],
    refs: list[str],
    datasource: str | None,
    channels: list[str] | None,
    n: int,
    k: int,
) -> None:
    req: dict[str, Any] = {
        "question": " ".join(words) or None,
        "entities": refs or None,
        "datasource": datasource,
        "channels": channels,
        "explain": True,
    }
    short = sample.search(**req, max_results=n)
    long = sample.search(**req, max_results=min(n + k, 100))
    assert short.results == long.results[:n]
    assert short.warnings == long.warnings
