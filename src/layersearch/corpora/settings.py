"""The ``[ranking.<corpus>]`` tables of the settings file, read into each corpus's
typed ranking config (docs/ranking.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.scope_places import ScopeRankingConfig
from layersearch.errors import ConfigError

__all__ = ["ranking_settings"]

_CONFIGS: dict[str, type[EntityRankingConfig] | type[ScopeRankingConfig]] = {
    "entities": EntityRankingConfig,
    "scope": ScopeRankingConfig,
}


def ranking_settings(
    ranking: Mapping[str, Mapping[str, Any]],
) -> tuple[EntityRankingConfig, ScopeRankingConfig]:
    """The entity and scope ranking configs ``ranking`` gives (defaults for a corpus it
    leaves out), checked: an unknown corpus, key, value type or stage name is a
    :class:`ConfigError`."""
    for corpus in ranking:
        if corpus not in _CONFIGS:
            raise ConfigError(
                f"ranking: unknown corpus '{corpus}' (known: {', '.join(sorted(_CONFIGS))})"
            )
    entities = EntityRankingConfig.from_mapping(ranking.get("entities", {}), "ranking.entities")
    scope = ScopeRankingConfig.from_mapping(ranking.get("scope", {}), "ranking.scope")
    return entities, scope
