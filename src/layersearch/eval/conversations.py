"""LoCoMo evidence retrieval: does message search find the turns that answer a question?

The conversations of a LoCoMo file or folder (or the ones chosen by
``conversations``: sample ids, or 1-based positions in file order) are imported
into a store (a temporary one unless ``store_dir`` is given, which keeps vectors
between runs); each QA question is searched within its own conversation through
:meth:`ConversationService.search_messages` with each channel set, and the top
``RANK_DEPTH`` turns are scored against the question's evidence turns, as the
published LoCoMo retrieval numbers count them:

- ``recall_any@k``: 1 when some evidence turn is in the top k;
- ``recall_all@k``: 1 when every evidence turn is in the top k;
- ``evidence_recall@k``: the fraction of evidence turns in the top k;
- ``mrr``: 1 / rank of the first evidence turn in the top 10 (0 below).

each at k = 5, 10, 20, macro-averaged over questions, overall, per
conversation and per LoCoMo category.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from layersearch.corpora.conversations.locomo import (
    ImportResult,
    LocomoQuestion,
    LocomoQuestions,
    import_locomo,
    read_locomo_questions,
)
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed.base import Embedder
from layersearch.embed.llm import ChatModel
from layersearch.errors import ConfigError, LayersearchError
from layersearch.eval.metrics import (
    all_found_at_k,
    any_found_at_k,
    recall_at_k,
    reciprocal_rank,
)
from layersearch.store.duckdb import DuckDBStore

__all__ = [
    "CHANNEL_SETS",
    "DEFAULT_SET",
    "KS",
    "METRIC_KEYS",
    "best_of_sets",
    "channel_union",
    "evaluate_locomo",
    "parse_channel_sets",
    "parse_config",
    "parse_conversations",
    "score_question",
    "summarise",
]

log = logging.getLogger("layersearch.eval.conversations")

#: name → channels of search_messages
CHANNEL_SETS: dict[str, tuple[str, ...]] = {
    "fulltext": ("fulltext",),
    "vector": ("vector",),
    "fulltext+vector": ("fulltext", "vector"),
}
DEFAULT_SET = "fulltext+vector"
KS = (5, 10, 20)
#: how many turns each question retrieves (the deepest k)
RANK_DEPTH = max(KS)
#: MRR counts the first evidence turn within this many (as it always has)
MRR_DEPTH = 10
METRIC_KEYS = (
    *(f"evidence_recall@{k}" for k in KS),
    *(f"recall_any@{k}" for k in KS),
    *(f"recall_all@{k}" for k in KS),
    "mrr",
)


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


def parse_conversations(text: str | Sequence[str] | None, available: Sequence[str]) -> list[str]:
    """The conversation ids (``locomo:<sample id>``) chosen by ``text``.

    Each comma-separated item is a sample id (``26``, ``conv-26`` or ``locomo:26``),
    or, when no sample has that id, a 1-based position among ``available`` (the
    conversations in file order). ``None`` or empty chooses them all.
    """
    if text is None:
        return list(available)
    items = text.split(",") if isinstance(text, str) else list(text)
    items = [i.strip() for i in items if i.strip()]
    if not items:
        return list(available)
    chosen: list[str] = []
    bad: list[str] = []
    for item in items:
        cid = item if item.startswith("locomo:") else f"locomo:{item}"
        if cid not in available and item.isdigit() and 1 <= int(item) <= len(available):
            cid = available[int(item) - 1]
        if cid not in available:
            bad.append(item)
        elif cid not in chosen:
            chosen.append(cid)
    if bad:
        names = ", ".join(c.removeprefix("locomo:") for c in available)
        raise ConfigError(
            f"unknown conversation(s) {', '.join(bad)}: choose sample ids ({names}) "
            f"or positions 1-{len(available)}"
        )
    return chosen


def parse_config(pairs: Sequence[str]) -> MessageSearchConfig:
    """A :class:`MessageSearchConfig` with ``name=value`` overrides (``resolve_dates=true``)."""
    import dataclasses

    # the stages switched off are --without's
    fields = {f.name: f for f in dataclasses.fields(MessageSearchConfig) if f.name != "without"}
    defaults = MessageSearchConfig()
    changes: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or name not in fields:
            raise ConfigError(
                f"--set {pair!r}: expected name=value with a name from " + ", ".join(sorted(fields))
            )
        kind = type(getattr(defaults, name))
        try:
            if kind is bool:
                if raw.lower() not in ("true", "false", "1", "0", "on", "off"):
                    raise ValueError(raw)
                changes[name] = raw.lower() in ("true", "1", "on")
            else:
                changes[name] = kind(raw)
        except ValueError as exc:
            raise ConfigError(f"--set {pair!r}: {raw!r} is not a {kind.__name__}") from exc
    return dataclasses.replace(defaults, **changes)


def score_question(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """Every metric of :data:`METRIC_KEYS` for one question's ranked turn ids."""
    scores: dict[str, float] = {}
    for k in KS:
        scores[f"evidence_recall@{k}"] = recall_at_k(ranked, evidence, k)
        scores[f"recall_any@{k}"] = float(any_found_at_k(ranked, evidence, k))
        scores[f"recall_all@{k}"] = float(all_found_at_k(ranked, evidence, k))
    scores["mrr"] = reciprocal_rank(ranked[:MRR_DEPTH], evidence)
    return scores


def summarise(
    per_question: Sequence[dict[str, float]], keys: Sequence[str] = METRIC_KEYS
) -> dict[str, Any]:
    """``questions`` and the mean of each metric of ``keys`` (rounded to 4 places; None
    for none)."""
    n = len(per_question)
    out: dict[str, Any] = {"questions": n}
    for key in keys:
        out[key] = round(sum(q[key] for q in per_question) / n, 4) if n else None
    return out


def evaluate_locomo(
    path: str | Path,
    *,
    channel_sets: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    config: MessageSearchConfig | None = None,
    store_dir: str | Path | None = None,
    conversations: str | Sequence[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    details: Callable[[dict[str, Any]], None] | None = None,
    facts_llm: ChatModel | None = None,
) -> dict[str, Any]:
    """The metrics of :data:`METRIC_KEYS` per channel set; the default set's on top.

    ``facts_llm``: facts are extracted from each session first (cached in the store, so
    with ``store_dir`` a later run sends nothing) and the result gains ``facts``, the
    extraction's report.

    ``details``, when given, is called with one record per question and channel set
    (the question, its evidence, the ranked turn ids and every metric).
    """
    sets = list(channel_sets) if channel_sets is not None else list(CHANNEL_SETS)
    parse_channel_sets(",".join(sets))
    found = read_locomo_questions(path)
    imported = import_locomo(path)
    questions = _chosen(path, imported, found, conversations)
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
        facts = None
        if facts_llm is not None:
            step = None if progress is None else (lambda d, t: progress("facts", d, t))
            facts = service.extract_facts(facts_llm, progress=step)  # failures are logged
        needs_vectors = any("vector" in CHANNEL_SETS[s] for s in sets)
        if needs_vectors:
            sets = _embedded_sets(service, sets, embedder is not None, progress, warnings)
        rankings: dict[str, list[list[str]]] = {}
        results = {}
        for name in sets:
            results[name], rankings[name] = _run_set(
                service, questions, CHANNEL_SETS[name], name, progress, details
            )
    finally:
        if tmp is not None:
            tmp.cleanup()
    top = results.get(DEFAULT_SET) or next(iter(results.values()), None)
    out: dict[str, Any] = {
        "questions": len(questions),
        "skipped_without_evidence": found.skipped_without_evidence,
        "conversations": sorted({q.conversation_id for q in questions}),
        "channel_set": DEFAULT_SET if DEFAULT_SET in results else next(iter(results), None),
        "embedder": embedder.fingerprint.describe() if embedder and needs_vectors else None,
        "without": sorted(config.without) if config is not None else [],
    }
    for key in METRIC_KEYS:
        out[key] = top[key] if top else None
    out["channel_sets"] = results
    out["best_of_sets"] = best_of_sets(questions, rankings)
    out["channel_union"] = channel_union(questions, rankings)
    out["warnings"] = warnings
    if facts is not None:
        out["facts"] = facts.model_dump()
    return out


def _chosen(
    path: str | Path,
    imported: ImportResult,
    found: LocomoQuestions,
    conversations: str | Sequence[str] | None,
) -> list[LocomoQuestion]:
    """The questions of the chosen conversations; the other conversations are dropped
    from ``imported``. No question with evidence is a ConfigError."""
    available = [c.id for c in imported.conversations]
    chosen = parse_conversations(conversations, available)
    if len(chosen) < len(available):
        keep = set(chosen)
        imported.conversations[:] = [c for c in imported.conversations if c.id in keep]
        questions = [q for q in found.questions if q.conversation_id in keep]
    else:
        questions = list(found.questions)
    if not questions:
        raise ConfigError(f"{path}: no LoCoMo questions with evidence found")
    return questions


def best_of_sets(
    questions: Sequence[LocomoQuestion], rankings: dict[str, list[list[str]]]
) -> dict[str, Any] | None:
    """Per question the best of the channel sets on each metric (an oracle choosing a set
    per question with the labels), averaged: what choosing among these sets' lists could
    reach at most. None for fewer than two sets."""
    if len(rankings) < 2:
        return None
    per_question = []
    for i, q in enumerate(questions):
        scored = [score_question(ranked[i], q.evidence) for ranked in rankings.values()]
        per_question.append({key: max(s[key] for s in scored) for key in METRIC_KEYS})
    return {"sets": list(rankings), **summarise(per_question)}


def channel_union(
    questions: Sequence[LocomoQuestion], rankings: dict[str, list[list[str]]]
) -> dict[str, Any] | None:
    """What the channels hold between them: per question, each recall at k of the union
    of the single channels' top k (up to k turns per channel), averaged overall and per
    category. A fused top k holds at most what the channels' top ks hold unless fusion
    lifts a turn from below every channel's k; it says how far fusion is from what its
    inputs offer. None unless full text and vector both ran alone."""
    singles = [s for s in ("fulltext", "vector") if s in rankings]
    if len(singles) < 2:
        return None
    every: list[dict[str, float]] = []
    per_cat: dict[str, list[dict[str, float]]] = {}
    for i, q in enumerate(questions):
        scores: dict[str, float] = {}
        for k in KS:
            held = list(dict.fromkeys(t for s in singles for t in rankings[s][i][:k]))
            depth = max(1, len(held))
            scores[f"evidence_recall@{k}"] = recall_at_k(held, q.evidence, depth)
            scores[f"recall_any@{k}"] = float(any_found_at_k(held, q.evidence, depth))
            scores[f"recall_all@{k}"] = float(all_found_at_k(held, q.evidence, depth))
        every.append(scores)
        per_cat.setdefault(str(q.category), []).append(scores)
    keys = [key for key in METRIC_KEYS if key != "mrr"]
    return {
        "channels": singles,
        **summarise(every, keys),
        "per_category": {k: summarise(v, keys) for k, v in sorted(per_cat.items())},
    }


def _embedded_sets(
    service: ConversationService,
    sets: list[str],
    have_embedder: bool,
    progress: Callable[[str, int, int], None] | None,
    warnings: list[str],
) -> list[str]:
    """Embed the turns for the channel sets with vectors; the sets that can run (those
    with vectors dropped, and a warning, when there is no embedder or it failed)."""
    without = [s for s in sets if "vector" not in CHANNEL_SETS[s]]
    if not have_embedder:
        warnings.append("no embedder: channel sets with vector skipped")
        return without
    embed = None if progress is None else (lambda d, t: progress("embedding", d, t))
    try:
        service.embed(progress=embed)
    except LayersearchError as exc:
        warnings.append(f"embedding unavailable: {exc}; vector channel sets skipped")
        return without
    return sets


def _run_set(
    service: ConversationService,
    questions: Sequence[LocomoQuestion],
    channels: tuple[str, ...],
    name: str,
    progress: Callable[[str, int, int], None] | None,
    details: Callable[[dict[str, Any]], None] | None,
) -> tuple[dict[str, Any], list[list[str]]]:
    """The set's metrics (overall, per conversation, per category) and each question's
    ranked turn ids, in question order."""
    every: list[dict[str, float]] = []
    rankings: list[list[str]] = []
    per_conv: dict[str, list[dict[str, float]]] = {}
    per_cat: dict[str, list[dict[str, float]]] = {}
    for i, q in enumerate(questions, start=1):
        res = service.search_messages(
            q.question, RANK_DEPTH, conversation_id=q.conversation_id, channels=channels
        )
        ranked = [h.turn_id or h.message_id for h in res.hits]
        rankings.append(ranked)
        scores = score_question(ranked, q.evidence)
        every.append(scores)
        per_conv.setdefault(q.conversation_id, []).append(scores)
        per_cat.setdefault(str(q.category), []).append(scores)
        if details is not None:
            position = {turn: rank for rank, turn in enumerate(ranked, start=1)}
            details(
                {
                    "channel_set": name,
                    "conversation_id": q.conversation_id,
                    "category": q.category,
                    "question": q.question,
                    "answer": q.answer,
                    "evidence": list(q.evidence),
                    "evidence_ranks": {e: position.get(e) for e in q.evidence},
                    "ranked": ranked,
                    **scores,
                }
            )
        if progress and (i % 50 == 0 or i == len(questions)):
            progress(name, i, len(questions))
    return {
        **summarise(every),
        "per_conversation": {k: summarise(v) for k, v in sorted(per_conv.items())},
        "per_category": {k: summarise(v) for k, v in sorted(per_cat.items())},
    }, rankings
