"""The server loads an in-process embedder in its lifespan, before the first call."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.config import Settings
from layersearch.corpora.entities import EntityService
from layersearch.embed import LocalEmbedder
from layersearch.server import Service
from tests.support import MINI


@pytest.mark.slow
@pytest.mark.local_model
def test_the_local_model_is_loaded_when_the_store_opens(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    store = tmp_path / "s.duckdb"
    with Layersearch(store, embedder="local") as ls:
        ls.load(MINI)
        ls.embed()
    service = Service(Settings(store=str(store), embedder="local"))
    service.start()
    api = service.api()
    assert isinstance(api.embedder, LocalEmbedder)
    assert api.embedder._session is not None  # loaded (and run once) before any call
    dense = api.dense()
    assert dense._index is not None and dense.confirmed  # the stored vectors are read
    service.close()


def test_a_model_that_cannot_load_leaves_the_lexical_server_up(tmp_path: Path) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    service = Service(
        Settings(store=str(tmp_path / "s.duckdb"), models=MINI, embedder=f"local:{empty}")
    )
    service.start()
    api = service.api()
    assert api.search(question="tax").results
    service.close()


def test_a_server_without_an_embedder_runs_a_search_before_the_first_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.duckdb"
    with Layersearch(store) as ls:
        ls.load(MINI)
    searched: list[str | None] = []
    search = EntityService.search

    def counting(self: EntityService, *args: object, **kwargs: object) -> object:
        searched.append(kwargs.get("question"))  # type: ignore[arg-type]
        return search(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(EntityService, "search", counting)
    service = Service(Settings(store=str(store), embedder="none"))
    service.start()
    api = service.api()
    assert api.embedder is None
    assert len(searched) == 1  # the lifespan's warm-up: the first call finds the path warm
    service.close()


@pytest.mark.local_model
def test_the_server_defaults_to_the_installed_local_model(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    monkeypatch.delenv("LAYERSEARCH_EMBEDDER", raising=False)
    service = Service(Settings(store=str(tmp_path / "s.duckdb"), models=MINI))
    service.start()
    api = service.api()
    assert isinstance(api.embedder, LocalEmbedder)  # nothing configured: local, installed
    assert len(api.dense().index()) > 0  # the models it loaded are embedded too
    assert api.warm() == []
    service.close()
    off = Service(Settings(store=str(tmp_path / "s.duckdb"), embedder="none"))
    off.start()
    assert off.api().embedder is None
    off.close()
