"""Vault search as one declared pipeline: :data:`VAULT_PIPELINE`, its settings in
:class:`VaultRankingConfig`.

The stages, in order, on a :class:`VaultRanking` (one search's state):

- ``vector``: each note's best chunk by cosine (``mode="vector"`` ranks by it alone);
- ``fulltext``: BM25 over the notes (title, tags, headings, body at the index's field
  boosts, ``search.FT_BOOSTS``), in hybrid mode, or whenever the vector channel cannot
  rank (no embedder, no vectors);
- ``fuse``: Reciprocal Rank Fusion of the channels (k = ``rrf_k``), not switched off.

Either channel can be switched off (``without``; ``layersearch eval vault --without
STAGE``): without ``vector`` a search ranks by full text alone, as without an embedder
(and says so); without ``fulltext`` a hybrid search ranks by the vector channel alone.
No rule reorders the fused list, so its scores are the fused ones, non-increasing.
With a :class:`~layersearch.ranking.pipeline.Trace` (``explain``), each channel of a
fused list records how it moved each note: from its place in the fusion of the other
channel to its place in the list fused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

from layersearch.errors import ConfigError, EmbeddingUnavailable, ModelMismatch
from layersearch.ranking.explain import trace_channels
from layersearch.ranking.fusion import RRF_K, Fused, rrf
from layersearch.ranking.pipeline import Pipeline, RankingConfig, Stage, Trace

__all__ = ["VAULT_PIPELINE", "VaultRanking", "VaultRankingConfig"]


@dataclass(frozen=True, slots=True)
class VaultRankingConfig(RankingConfig):
    """Every tuned number of vault search.

    ``channel_depth``: each channel of a hybrid search ranks this many notes (or
    ``limit``, if more), so the results for ``limit=n`` are a prefix of those for
    ``n + k`` while ``n + k <= channel_depth`` (docs/decisions.md: ten, not 100).
    ``rrf_k``: the k of Reciprocal Rank Fusion."""

    PIPELINE_STAGES: ClassVar[tuple[str, ...]] = ("vector", "fulltext")

    channel_depth: int = 10
    rrf_k: int = RRF_K

    @classmethod
    def corpus_name(cls) -> str:
        return "vault"


@dataclass(slots=True)
class VaultRanking:
    """One vault search as its stages read and update it: ``vector`` and ``fulltext``
    rank (each a callable of the depth; ``vector`` raises EmbeddingUnavailable or
    ModelMismatch when it cannot rank)."""

    mode: str
    depth: int
    vector: Callable[[int], list[tuple[str, float]]]
    fulltext: Callable[[int], list[tuple[str, float]]]
    #: whether a failing vector channel raises (vector mode with an embedder)
    vector_required: bool
    #: called with the message when the vector channel cannot rank
    fall_back: Callable[[Exception], None]
    config: VaultRankingConfig
    channels: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    fused: list[Fused] = field(default_factory=list)
    #: what the stages did to each note, with ``explain`` (None without)
    trace: Trace | None = None


def _vector(state: VaultRanking) -> None:
    try:
        state.channels["vector"] = state.vector(state.depth)
    except (EmbeddingUnavailable, ModelMismatch) as exc:
        if state.vector_required:
            raise
        state.fall_back(exc)


def _fulltext(state: VaultRanking) -> None:
    if state.mode == "hybrid" or "vector" not in state.channels:
        state.channels["fulltext"] = state.fulltext(state.depth)


def _fuse(state: VaultRanking) -> None:
    if not state.channels:
        raise ConfigError("vault search: both channels (vector, fulltext) are switched off")
    k = state.config.rrf_k
    state.fused = rrf(state.channels, k=k)
    if state.trace is not None:
        after = [f.id for f in state.fused]
        stages = VaultRankingConfig.PIPELINE_STAGES
        trace_channels(state.trace, state.channels, partial(rrf, k=k), after, stages)


VAULT_STAGES: tuple[Stage[VaultRanking], ...] = (
    Stage("vector", "each note's best chunk by cosine", _vector),
    Stage("fulltext", "BM25 over title, tags, headings and body", _fulltext),
    Stage("fuse", "Reciprocal Rank Fusion of the channels", _fuse, switchable=False),
)
VAULT_PIPELINE: Pipeline[VaultRanking] = Pipeline("vault", VAULT_STAGES)
