"""Fingerprints: labels, stable keys, equality over every field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layersearch.embed import Fingerprint
from layersearch.errors import ConfigError


def test_describe():
    hosted = Fingerprint(provider="litellm", model="openai/text-embedding-3-small", dimensions=1536)
    local = Fingerprint(provider="local", model="all-MiniLM-L6-v2", dimensions=384)
    assert hosted.describe() == "openai/text-embedding-3-small (1536)"
    assert local.describe() == "local/all-MiniLM-L6-v2 (384)"


def test_key_is_sorted_json_and_round_trips():
    fp = Fingerprint(provider="fake", model="hashing-v1", dimensions=256, query_prefix="q: ")
    key = fp.key()
    assert list(json.loads(key)) == sorted(json.loads(key))
    assert " " not in key.replace("q: ", "")
    assert Fingerprint.from_key(key) == fp
    assert Fingerprint.from_key(key).key() == key


def test_same_dimension_other_model_is_not_equal():
    a = Fingerprint(provider="local", model="all-MiniLM-L6-v2", dimensions=384)
    b = Fingerprint(provider="local", model="paraphrase-MiniLM-L6-v2", dimensions=384)
    assert a != b and a.key() != b.key()
    assert a != a.model_copy(update={"document_prefix": "passage: "})
    assert a == Fingerprint(provider="local", model="all-MiniLM-L6-v2", dimensions=384)
    assert hash(a) == hash(Fingerprint.from_key(a.key()))


def test_frozen_and_validated():
    fp = Fingerprint(provider="fake", model="m", dimensions=3)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        fp.model = "other"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="not a valid embedding fingerprint"):
        Fingerprint.from_key('{"provider": "nope"}')
    with pytest.raises(ConfigError):
        Fingerprint.from_key("not json")


@given(
    provider=st.sampled_from(["litellm", "local", "fake"]),
    model=st.text(min_size=1, max_size=30),
    dims=st.integers(1, 10_000),
    normalized=st.booleans(),
    qp=st.text(max_size=10),
    dp=st.text(max_size=10),
)
def test_key_round_trip_property(provider, model, dims, normalized, qp, dp):
    fp = Fingerprint(
        provider=provider,
        model=model,
        dimensions=dims,
        normalized=normalized,
        query_prefix=qp,
        document_prefix=dp,
    )
    assert Fingerprint.from_key(fp.key()) == fp
