"""The litellm and local embedders share one fingerprint and embed_* implementation."""

from __future__ import annotations

import pytest

from layersearch.embed import LiteLLMEmbedder, LocalEmbedder
from layersearch.embed.base import ModelEmbedder


@pytest.mark.parametrize("cls", [LiteLLMEmbedder, LocalEmbedder])
def test_model_embedders_share_the_base(cls: type) -> None:
    for name in ("fingerprint", "embed_documents", "embed_query"):
        assert getattr(cls, name) is getattr(ModelEmbedder, name), f"{cls.__name__}.{name}"


def test_fingerprint_of_a_known_dimension_needs_no_call() -> None:
    emb = LiteLLMEmbedder("openai/m", dimensions=8, query_prefix="q: ", document_prefix="d: ")
    fp = emb.fingerprint
    assert (fp.provider, fp.model, fp.dimensions) == ("litellm", "openai/m", 8)
    assert (fp.query_prefix, fp.document_prefix, fp.normalized) == ("q: ", "d: ", True)
