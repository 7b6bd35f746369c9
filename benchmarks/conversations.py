"""Conversation search at scale: import, keyword, semantic and hybrid summary search.

    PYTHONPATH=src python benchmarks/conversations.py [--messages 100000] [--set NAME=VALUE ...]
        [--dims 64] [--out FILE]

Builds a synthetic store of ``--messages`` messages (conversations of 20 turns
drawn from a fixed vocabulary, seeded), times the import (embedding excluded:
vectors are random unit vectors stored under the fake embedder's fingerprint,
since the targets exclude the embedding model), then the p50/p95 of
``search_conversations``, ``semantic_search`` (the query vector cached, so the
query embedding is excluded), hybrid ``search_summaries`` and message search
(``search_messages``, both channels, over all conversations; once more with a
month named in the query) over warm snapshots. ``--set`` overrides a
``MessageSearchConfig`` field as ``eval conversations --set`` does. Message search
with its second vector per turn (``turn_vector``) on and off is timed interleaved
on two warm services over the same store, with the ratio of their p50s; likewise
the question words' neighbours (``word_neighbours``) and sessions as documents
(``session_weight``), whose index is built once per snapshot (timed apart), and the
answer types (``answer_type_bonus``) on "How many …?" questions.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from layersearch.corpora.conversations.expansion import WORDS_CORPUS, turn_words
from layersearch.corpora.conversations.records import Conversation, Message, message_id
from layersearch.corpora.conversations.search import (
    MESSAGE_CORPUS,
    SUMMARY_CORPUS,
    TURN_CORPUS,
    ConversationService,
    dense_text,
    summary_dense_text,
)
from layersearch.corpora.conversations.sessions import SessionIndex
from layersearch.corpora.conversations.store import save_summaries
from layersearch.corpora.conversations.summaries import Summary
from layersearch.corpora.dense import DenseCorpus, content_hash
from layersearch.embed.fake import FakeEmbedder
from layersearch.eval.conversations import parse_config
from layersearch.store.duckdb import DuckDBStore

WORDS = [
    "revenue",
    "churn",
    "orders",
    "customers",
    "weekly",
    "monthly",
    "dashboard",
    "warehouse",
    "snowflake",
    "dbt",
    "model",
    "incremental",
    "metric",
    "measure",
    "cohort",
    "retention",
    "signup",
    "paid",
    "conversion",
    "channel",
    "campaign",
    "invoice",
    "subscription",
    "plan",
    "discount",
    "refund",
    "region",
    "store",
    "product",
    "category",
    "margin",
    "cost",
    "latency",
    "query",
    "join",
    "filter",
    "partition",
    "backfill",
    "owner",
    "definition",
    "source",
    "truth",
    "active",
]
QUERIES = ["churn", "weekly active", "revenue dashboard", "zebra", "subscription plan", "cost"]


def synth(n_messages: int, seed: int = 7) -> tuple[list[Conversation], list[Summary]]:
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    convs: list[Conversation] = []
    sums: list[Summary] = []
    per = 20
    for c in range(n_messages // per):
        cid = f"bench:{c:06d}"
        t0 = start + timedelta(minutes=37 * c)
        msgs = []
        for p in range(per):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
            if p % 2 == 0:
                text = "how do we compute " + text + "?"
            msgs.append(
                Message(
                    id=message_id(cid, p, text),
                    conversation_id=cid,
                    role="user" if p % 2 == 0 else "assistant",
                    content=text,
                    created=t0 + timedelta(seconds=30 * p),
                    position=p,
                    has_question=p % 2 == 0,
                    injected=False,
                )
            )
        convs.append(Conversation(cid, f"conversation {c}", "bench", t0, None, tuple(msgs)))
        sums.append(
            Summary(
                id=f"summary:{c:06d}",
                conversation_id=cid,
                summary=" ".join(rng.choice(WORDS) for _ in range(30)),
                domain=rng.choice(["finance", "product", "data platform"]),
                importance=rng.choice(["breakthrough", "significant", "routine"]),
                thinking_stage=rng.choice(["exploring", "refining"]),
                decisions=(" ".join(rng.choice(WORDS) for _ in range(8)),),
                open_questions=(),
                quotables=(),
                concepts=(rng.choice(WORDS),),
                created=t0,
            )
        )
    return convs, sums


def timed(fn: object, runs: int) -> dict[str, float]:
    samples = []
    for i in range(runs):
        t = time.perf_counter()
        fn(i)  # type: ignore[operator]
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 2),
    }


def interleaved(fns: dict[str, object], runs: int) -> dict[str, dict[str, float]]:
    """Each function run ``runs`` times, taking turns, so load on the machine falls on
    all of them alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(runs):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn(i)  # type: ignore[operator]
            samples[name].append((time.perf_counter() - t) * 1000)
    out = {}
    for name, xs in samples.items():
        xs.sort()
        out[name] = {
            "p50_ms": round(statistics.median(xs), 2),
            "p95_ms": round(xs[int(0.95 * (len(xs) - 1))], 2),
        }
    return out


def on_off(
    field: str,
    off: tuple[object, ConversationService],
    on: tuple[object, ConversationService],
    runs: int,
    ask: str = "{}",
) -> dict[str, object]:
    """Message search with a config ``field`` off and on (value, service each),
    interleaved on two warm services of one store, and the ratio of their p50s; ``ask``
    shapes each query ("How many {}?")."""
    n = len(QUERIES)
    pair = interleaved(
        {
            f"search_messages {field}={value}": (
                lambda i, s=svc: s.search_messages(ask.format(QUERIES[i % n]), 10)
            )
            for value, svc in (off, on)
        },
        runs,
    )
    p50 = [v["p50_ms"] for v in pair.values()]
    return {**pair, f"search_messages p50 ratio {field} on/off": round(p50[1] / p50[0], 2)}


def store_random_vectors(
    store: DuckDBStore, corpus: str, docs: list[tuple[str, str]], seed: int = 0, dims: int = 64
) -> None:
    fp = FakeEmbedder(dims).fingerprint.key()
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((len(docs), dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    store.upsert_vectors(
        corpus, fp, [d for d, _ in docs], [content_hash(t) for _, t in docs], matrix
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--out", default=None)
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    # 768: the turn encoder's dimensions (the exact scans' work; the query embedding is
    # excluded here, benchmarks/conversation_embedding.py times it)
    ap.add_argument("--dims", type=int, default=64)
    args = ap.parse_args()
    config = parse_config(args.overrides)
    convs, sums = synth(args.messages)
    with tempfile.TemporaryDirectory() as tmp:
        store = DuckDBStore(Path(tmp) / "bench.duckdb")
        embedder = FakeEmbedder(args.dims)
        dense: dict[str, DenseCorpus] = {}
        svc = ConversationService(
            store, lambda c: dense.setdefault(c, DenseCorpus(store, c, embedder)), config=config
        )
        t = time.perf_counter()
        report = svc.import_conversations(convs)
        import_s = time.perf_counter() - t
        save_summaries(store, sums)
        t = time.perf_counter()
        snap = svc.snapshot()
        index_s = time.perf_counter() - t
        docs = [
            (m.id, dense_text(turns, i, svc.config))
            for turns in snap.turns.values()
            for i, m in enumerate(turns)
        ]
        store_random_vectors(store, MESSAGE_CORPUS, docs, dims=args.dims)
        turn_docs = [
            (m.id, dense_text(turns, i, svc.config, context=False))
            for turns in snap.turns.values()
            for i, m in enumerate(turns)
        ]
        store_random_vectors(store, TURN_CORPUS, turn_docs, seed=1, dims=args.dims)
        store_random_vectors(
            store, SUMMARY_CORPUS, [(s.id, summary_dense_text(s)) for s in sums], dims=args.dims
        )
        words = turn_words(snap.messages.values())
        store_random_vectors(store, WORDS_CORPUS, [(w, w) for w in words], seed=2, dims=args.dims)
        flipped = ConversationService(
            store,
            lambda c: dense.setdefault(c, DenseCorpus(store, c, embedder)),
            config=replace(config, turn_vector=not config.turn_vector),
        )
        by_switch = {config.turn_vector: svc, not config.turn_vector: flipped}
        narrow = ConversationService(
            store,
            lambda c: dense.setdefault(c, DenseCorpus(store, c, embedder)),
            config=replace(config, word_neighbours=0),
        )
        sessionless = ConversationService(
            store,
            lambda c: dense.setdefault(c, DenseCorpus(store, c, embedder)),
            config=replace(config, session_weight=0.0),
        )
        untyped = ConversationService(
            store,
            lambda c: dense.setdefault(c, DenseCorpus(store, c, embedder)),
            config=replace(config, answer_type_bonus=0.0),
        )
        t = time.perf_counter()
        sessions = SessionIndex.build(snap.turns, snap.session)
        sessions_s = time.perf_counter() - t
        for q in QUERIES:
            flipped.search_messages(q, 10)
            narrow.search_messages(q, 10)
            sessionless.search_messages(q, 10)
            untyped.search_messages(f"How many {q}?", 10)
            svc.search_messages(f"How many {q}?", 10)
        for q in QUERIES:  # warm: snapshot, vector indexes, cached query vectors
            svc.semantic_search(q, 10)
            svc.search_summaries(q, limit=10)
            svc.search_conversations(q)
            svc.search_messages(q, 10)
        n = len(QUERIES)
        result = {
            "messages": report.messages_added,
            "summaries": len(sums),
            "import_s (embedding excluded)": round(import_s, 2),
            "first snapshot + full-text index build_s": round(index_s, 2),
            "search_conversations": timed(
                lambda i: svc.search_conversations(QUERIES[i % n], 15), args.runs
            ),
            "search_conversations role=user, empty term": timed(
                lambda i: svc.search_conversations("", 15, role="user"), args.runs
            ),
            "semantic_search (query embedding excluded)": timed(
                lambda i: svc.semantic_search(QUERIES[i % n], 10), args.runs
            ),
            "search_summaries hybrid": timed(
                lambda i: svc.search_summaries(QUERIES[i % n], limit=10), args.runs
            ),
            "search_summaries hybrid + importance filter": timed(
                lambda i: svc.search_summaries(QUERIES[i % n], limit=10, importance="routine"),
                args.runs,
            ),
            "search_messages (query embedding excluded)": timed(
                lambda i: svc.search_messages(QUERIES[i % n], 10), args.runs
            ),
            "search_messages, a month named": timed(
                lambda i: svc.search_messages(f"{QUERIES[i % n]} in March 2023", 10), args.runs
            ),
        }
        result.update(
            on_off("turn_vector", (False, by_switch[False]), (True, by_switch[True]), args.runs)
        )
        result.update(
            on_off("word_neighbours", (0, narrow), (config.word_neighbours, svc), args.runs)
        )
        result["conversation words"] = len(words)
        result.update(
            on_off("session_weight", (0.0, sessionless), (config.session_weight, svc), args.runs)
        )
        result["sessions as documents: build_s (once per snapshot)"] = round(sessions_s, 2)
        typed = (config.answer_type_bonus, svc)
        result.update(on_off("answer_type_bonus", (0.0, untyped), typed, args.runs, "How many {}?"))
        result["sessions"] = len(sessions.lengths)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
