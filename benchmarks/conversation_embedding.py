"""What conversations cost at embed time and per query, and their model's recall alone.

    PYTHONPATH=src python benchmarks/conversation_embedding.py [--locomo DIR] [--embedder local]
        [--queries 200] [--out FILE]

Imports the LoCoMo conversations of ``--locomo`` (default /work/shared/data/locomo) into
a fresh store, then times ``conversations embed`` with ``turn_vector`` off (the turns
with context: the ``messages`` corpus) and again with it on, which embeds only the
``message-turns`` corpus (the first is unchanged); prints both with their ratio. The
embedder is the one conversations use for ``--embedder``: that one, or
LAYERSEARCH_TURN_EMBEDDER's (``layersearch.embed.conversation_embedder``), e.g. a turn
encoder made by ``scripts/export_turn_encoder.py``. The model is loaded (one text
embedded) before either is timed. Then the p50/p95 of ``--queries`` LoCoMo questions'
query embeddings, one at a time, and the embed time of 100,000 messages extrapolated
from the measured one per message (both vectors and the words; linear: each turn is
embedded once, on ``bulk_workers`` threads), in wall time and in CPU time over those
threads (the wall time on idle cores; this machine's cores are shared). Query latency
likewise in CPU time too (one thread). Last, the model alone: dense-only recall of the
evidence turns, each question's cosine to every turn of its conversation embedded as
``speaker: text`` (no context, no full text), the measure turn encoders were first
compared by (``--skip-recall`` leaves it out).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from layersearch.corpora.conversations.locomo import import_locomo, read_locomo_questions
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed import conversation_embedder, make_embedder
from layersearch.embed.base import Embedder
from layersearch.eval.conversations import score_question, summarise
from layersearch.store.duckdb import DuckDBStore

RECALL_KEYS = ("evidence_recall@10", "recall_any@10", "recall_all@10", "mrr")


def dense_recall(embedder: Embedder, locomo: str) -> dict[str, object]:
    """Evidence recall of the model alone: questions against ``speaker: text`` turns."""
    imported = import_locomo(locomo)
    turns = {}
    for c in imported.conversations:
        texts = [f"{m.speaker}: {m.content}" for m in c.messages]
        ids = [m.turn_id or m.id for m in c.messages]
        turns[c.id] = (ids, np.asarray(embedder.embed_documents(texts), dtype=np.float32))
    scores = []
    for q in read_locomo_questions(locomo).questions:
        ids, matrix = turns[q.conversation_id]
        cosines = matrix @ np.asarray(embedder.embed_query(q.question), dtype=np.float32)
        ranked = [ids[i] for i in np.argsort(-cosines, kind="stable")[:20]]
        scores.append(score_question(ranked, q.evidence))
    return summarise(scores, RECALL_KEYS)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", default="/work/shared/data/locomo")
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--skip-recall", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    embedder = conversation_embedder(make_embedder(args.embedder))
    assert embedder is not None
    embedder.embed_documents(["load the model before the clock starts"])
    imported = import_locomo(args.locomo)
    with tempfile.TemporaryDirectory() as tmp:
        store = DuckDBStore(Path(tmp) / "locomo.duckdb")
        dense: dict[str, DenseCorpus] = {}

        def getter(corpus: str) -> DenseCorpus:
            return dense.setdefault(corpus, DenseCorpus(store, corpus, embedder))

        off = MessageSearchConfig(turn_vector=False)
        svc = ConversationService(store, getter, config=off)
        svc.import_conversations(imported.conversations)
        svc.snapshot()
        result: dict[str, object] = {"embedder": embedder.fingerprint.describe()}
        for name, config in (("off", off), ("on", replace(off, turn_vector=True))):
            svc.config = config
            t, cpu = time.perf_counter(), time.process_time()
            reports = svc.embed()
            result[f"embed_s turn_vector={name}"] = round(time.perf_counter() - t, 2)
            result[f"embed_cpu_s turn_vector={name}"] = round(time.process_time() - cpu, 2)
            result[f"embedded turn_vector={name}"] = {r.corpus: r.embedded for r in reports}
        first, second = result["embed_s turn_vector=off"], result["embed_s turn_vector=on"]
        assert isinstance(first, float) and isinstance(second, float)
        result["total with turn vectors / without"] = round((first + second) / first, 2)
        messages = sum(len(c.messages) for c in imported.conversations)
        result["messages"] = messages
        result["100k messages embed min (extrapolated)"] = round(
            (first + second) / messages * 100_000 / 60, 1
        )
        # CPU seconds over the cores the embedding threads use: the wall time on idle cores
        cpu_total = sum(
            v for k, v in result.items() if k.startswith("embed_cpu_s") and isinstance(v, float)
        )
        workers = getattr(embedder, "bulk_workers", 1)
        result["100k messages embed min on idle cores (CPU / workers)"] = round(
            cpu_total / workers / messages * 100_000 / 60, 1
        )
    questions = [q.question for q in read_locomo_questions(args.locomo).questions]
    times, cpus = [], []
    for q in questions[: args.queries]:
        t, cpu = time.perf_counter(), time.process_time()
        embedder.embed_query(q)
        times.append((time.perf_counter() - t) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    times.sort()
    result["query embedding p50 ms"] = round(statistics.median(times), 2)
    result["query embedding p95 ms"] = round(times[int(0.95 * (len(times) - 1))], 2)
    # one thread: its CPU time is the latency on an idle core
    result["query embedding p50 CPU ms"] = round(statistics.median(cpus), 2)
    result["load average"] = round(os.getloadavg()[0], 1)
    if not args.skip_recall:
        result["dense only, speaker: text"] = dense_recall(embedder, args.locomo)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
