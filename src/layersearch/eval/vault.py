"""Vault retrieval quality on a labelled query set: recall@5, recall@10 and MRR.

The query set is JSON lines: ``{"query": str, "relevant": [slug, …], "filters": {…}}``
where ``filters`` holds ``vault_search`` arguments (``tags``, ``domain``,
``status``, ``note_type``, ``date_range``). The vault is indexed into a
temporary store, so an evaluation never touches the user's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from layersearch.embed.base import Embedder
from layersearch.errors import ConfigError
from layersearch.eval.jsonl import json_lines
from layersearch.eval.metrics import recall_at_k, reciprocal_rank

__all__ = ["DEFAULT_QUERIES", "DEFAULT_VAULT", "evaluate_vault", "load_queries"]

_FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DEFAULT_VAULT = _FIXTURES / "vault"
DEFAULT_QUERIES = _FIXTURES / "vault_queries.jsonl"
_FILTER_KEYS = frozenset({"tags", "domain", "status", "note_type", "date_range"})
_DEPTH = 10


def load_queries(path: str | Path) -> list[dict[str, Any]]:
    """Read and check a labelled query file; errors name the line."""
    out = []
    for _n, where, item in json_lines(path, "query file"):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise ConfigError(f"{where}: expected an object with a 'query' string")
        relevant = item.get("relevant")
        if not isinstance(relevant, list) or not relevant:
            raise ConfigError(f"{where}: 'relevant' must be a non-empty list of slugs")
        filters = item.get("filters") or {}
        unknown = sorted(set(filters) - _FILTER_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown filter(s) {', '.join(unknown)}")
        out.append({"query": item["query"], "relevant": relevant, "filters": filters})
    if not out:
        raise ConfigError(f"{path}: no queries")
    return out


def evaluate_vault(
    vault: str | Path | None = None,
    queries: str | Path | None = None,
    *,
    mode: str = "vector",
    embedder: Embedder | str = "fake",
    without: Iterable[str] = (),
) -> dict[str, Any]:
    """Index ``vault`` in a temporary store and score every labelled query.

    Returns ``queries``, ``recall@5``, ``recall@10``, ``mrr`` (macro averages),
    plus ``mode``, ``embedder``, ``without`` (the ranking stages switched off, see
    ``corpora.vault.ranking``) and ``misses`` (queries with a relevant note missing
    from the first five).
    """
    from layersearch.api import Layersearch
    from layersearch.corpora.vault.ranking import VaultRankingConfig

    config = VaultRankingConfig().without_stages(without)

    items = load_queries(queries or DEFAULT_QUERIES)
    root = Path(vault) if vault is not None else DEFAULT_VAULT
    with (
        tempfile.TemporaryDirectory(prefix="layersearch-eval-") as tmp,
        Layersearch(Path(tmp) / "store.duckdb", embedder=embedder) as ls,
    ):
        ls.vault.index(root)
        model = ls.embedder.fingerprint.describe() if ls.embedder is not None else "none"
        r5 = r10 = mrr = 0.0
        # with stages switched off, what a search says of it once, not once per query
        said: list[str] | None = [] if config.without else None
        misses = []
        for item in items:
            filters = dict(item["filters"])
            hits = ls.vault.search(
                item["query"], limit=_DEPTH, mode=mode, config=config, warnings=said, **filters
            )
            ranked = [h.slug for h in hits]
            gold = item["relevant"]
            at5 = recall_at_k(ranked, gold, 5)
            r5 += at5
            r10 += recall_at_k(ranked, gold, 10)
            mrr += reciprocal_rank(ranked, gold)
            if at5 < 1.0:
                top = {s.lower() for s in ranked[:5]}
                missing = [g for g in gold if g.lower() not in top]
                misses.append({"query": item["query"], "missing": missing, "top5": ranked[:5]})
    n = len(items)
    return {
        "queries": n,
        "recall@5": round(r5 / n, 4),
        "recall@10": round(r10 / n, 4),
        "mrr": round(mrr / n, 4),
        "mode": mode,
        "embedder": model,
        "without": sorted(config.without),
        "warnings": sorted(set(said or [])),
        "misses": misses,
    }
