"""LoCoMo evidence retrieval: does message search find the turns that answer a question?

The conversations of a LoCoMo file or folder are imported into a store (a
temporary one unless ``store_dir`` is given, which keeps vectors between runs);
each QA question is searched within its own conversation through
:meth:`ConversationService.search_messages` with each channel set, and the
ranked turns are scored against the question's evidence turns: recall@5,
recall@10 (the fraction of evidence turns ranked that high) and MRR (first
evidence turn), macro-averaged over questions.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from layersearch.corpora.conversations.locomo import import_locomo, read_locomo_questions
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed.base import Embedder
from layersearch.errors import ConfigError, LayersearchError
from layersearch.eval.metrics import recall_at_k, reciprocal_rank
from layersearch.store.duckdb import DuckDBStore

__all__ = ["CHANNEL_SETS", "DEFAULT_SET", "evaluate_locomo", "parse_channel_sets"]

log = logging.getLogger("layersearch.eval.conversations")

#: name → channels of search_messages
CHANNEL_SETS: dict[str, tuple[str, ...]] = {
    "fulltext": ("fulltext",),
    "vector": ("vector",),
    "fulltext+vector": ("fulltext", "vector"),
}
DEFAULT_SET = "fulltext+vector"
KS = (5, 10)


def parse_channel_sets(text: str | None) -> list[str]:
    if not text:
        return list(CHANNEL_SETS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in CHANNEL_SETS]
    if bad or not names:
        raise ConfigError(
            f"unknown channel set(s) {', '.join(bad) or '(none)'}: choose from "
            + ", ".join(CHANNEL_SETS)
        )
    return names


def evaluate_locomo(
    path: str | Path,
    *,
    channel_sets: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    config: MessageSearchConfig | None = None,
    store_dir: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Evidence recall@5/@10 and MRR per channel set; the default set's numbers on top."""
    sets = list(channel_sets) if channel_sets is not None else list(CHANNEL_SETS)
    parse_channel_sets(",".join(sets))
    found = read_locomo_questions(path)
    if not found.questions:
        raise ConfigError(f"{path}: no LoCoMo questions with evidence found")
    imported = import_locomo(path)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if store_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="layersearch-locomo-")
        store_dir = tmp.name
    try:
        store = DuckDBStore(Path(store_dir) / "locomo.duckdb")
        dense: dict[str, DenseCorpus] = {}

        def getter(corpus: str) -> DenseCorpus:
            if embedder is None:
                raise ConfigError("no embedder")
            return dense.setdefault(corpus, DenseCorpus(store, corpus, embedder))

        service = ConversationService(store, getter if embedder else None, config=config)
        service.import_conversations(imported.conversations, problems=imported.problems)
        warnings: list[str] = []
        needs_vectors = any("vector" in CHANNEL_SETS[s] for s in sets)
        if needs_vectors:
            if embedder is None:
                warnings.append("no embedder: channel sets with vector skipped")
                sets = [s for s in sets if "vector" not in CHANNEL_SETS[s]]
            else:
                embed = None if progress is None else (lambda d, t: progress("embedding", d, t))
                try:
                    service.embed(progress=embed)
                except LayersearchError as exc:
                    warnings.append(f"embedding unavailable: {exc}; vector channel sets skipped")
                    sets = [s for s in sets if "vector" not in CHANNEL_SETS[s]]
        results = {
            name: _run_set(service, found.questions, CHANNEL_SETS[name], progress, name)
            for name in sets
        }
    finally:
        if tmp is not None:
            tmp.cleanup()
    top = results.get(DEFAULT_SET) or next(iter(results.values()), None)
    out: dict[str, Any] = {
        "questions": len(found.questions),
        "skipped_without_evidence": found.skipped_without_evidence,
        "conversations": sorted({q.conversation_id for q in found.questions}),
        "channel_set": DEFAULT_SET if DEFAULT_SET in results else next(iter(results), None),
        "embedder": embedder.fingerprint.describe() if embedder and needs_vectors else None,
    }
    for key in (*(f"evidence_recall@{k}" for k in KS), "mrr"):
        out[key] = top[key] if top else None
    out["channel_sets"] = results
    out["warnings"] = warnings
    return out


def _run_set(
    service: ConversationService,
    questions: Sequence[Any],
    channels: tuple[str, ...],
    progress: Callable[[str, int, int], None] | None,
    name: str,
) -> dict[str, Any]:
    per_conv: dict[str, dict[str, float]] = {}
    per_cat: dict[str, dict[str, float]] = {}
    totals = {"n": 0.0, "r5": 0.0, "r10": 0.0, "mrr": 0.0}
    for i, q in enumerate(questions, start=1):
        res = service.search_messages(
            q.question, 10, conversation_id=q.conversation_id, channels=channels
        )
        ranked = [h.turn_id or h.message_id for h in res.hits]
        scores = {
            "n": 1.0,
            "r5": recall_at_k(ranked, q.evidence, 5),
            "r10": recall_at_k(ranked, q.evidence, 10),
            "mrr": reciprocal_rank(ranked, q.evidence),
        }
        for bucket in (
            totals,
            per_conv.setdefault(q.conversation_id, dict.fromkeys(totals, 0.0)),
            per_cat.setdefault(str(q.category), dict.fromkeys(totals, 0.0)),
        ):
            for key, value in scores.items():
                bucket[key] += value
        if progress and (i % 50 == 0 or i == len(questions)):
            progress(name, i, len(questions))
    return {
        **_means(totals),
        "per_conversation": {k: _means(v) for k, v in sorted(per_conv.items())},
        "per_category": {k: _means(v) for k, v in sorted(per_cat.items())},
    }


def _means(t: dict[str, float]) -> dict[str, Any]:
    n = t["n"]
    return {
        "questions": int(n),
        "evidence_recall@5": round(t["r5"] / n, 4) if n else None,
        "evidence_recall@10": round(t["r10"] / n, 4) if n else None,
        "mrr": round(t["mrr"] / n, 4) if n else None,
    }
