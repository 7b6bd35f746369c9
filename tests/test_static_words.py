"""Lexical search's word readings from the shipped word vectors
(``ranking.static_words``): a question word is read as its nearest catalog words with
no embedder at run time."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.ranking import static_words
from layersearch.ranking.bridges import SYNONYM_WEIGHT
from layersearch.ranking.coverage import CoverageIndex, CoverageNode
from layersearch.ranking.neighbours import word_key
from layersearch.ranking.static_words import StaticWords, chance_cosine, read_vectors
from tests.support import hr_layer, unit


def _index() -> CoverageIndex:
    nodes = [
        CoverageNode("hr", "group", None, {"name": "hr"}),
        CoverageNode("hr.department", "table", "hr", {"name": "department"}),
        CoverageNode("hr.department.budget", "leaf", "hr.department", {"name": "budget"}),
        CoverageNode("zoo", "group", None, {"name": "zoo"}),
        CoverageNode("zoo.animal", "table", "zoo", {"name": "animal"}),
    ]
    return CoverageIndex(nodes, {"name": 1.0})


def _write(base: Path, words: list[str], rows: np.ndarray) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    with gzip.open(base / "words.txt.gz", "wt", encoding="utf-8") as f:
        f.write("".join(f"{w} {word_key(w)}\n" for w in words))
    np.save(base / "vectors.npy", rows.astype(np.int8), allow_pickle=False)
    return base


NAMES = ["hr", "department", "budget", "zoo", "animal"]


def _names() -> list[str]:
    return NAMES


def _words(floor: float = 0.0) -> StaticWords:
    words = ["animal", "budget", "department", "departments", "divisions", "spending"]
    matrix = np.stack(
        [
            unit(0, 0, 1),
            unit(0, 1, 0),
            unit(1, 0, 0),
            unit(1, 0.05, 0),
            unit(1, 0.3, 0.1),
            unit(0.1, 1, 0),
        ]
    )
    sw = StaticWords(words, matrix)
    sw.floor = floor
    return sw


def test_a_question_word_reads_as_its_nearest_catalog_words() -> None:
    index = _index()
    sw = _words()
    found = dict(sw.bridges(index, "the divisions and their spending", _names))
    depart, budget = index.vocab["depart"], index.vocab["budget"]
    # divisions (not a catalog word) reads as department, by the catalog word's own
    # vector ("department", not "departments")
    reach = dict(found["divis"])
    expected = SYNONYM_WEIGHT * float(unit(1, 0.3, 0.1) @ unit(1, 0, 0))
    assert reach[depart] == pytest.approx(expected, abs=1e-5)
    assert dict(found["spend"])[budget] > dict(found["spend"]).get(depart, 0.0)
    # an unknown word has no vector and no reading
    assert sw.bridges(index, "wombats", _names) == ()


def test_function_words_are_not_read_through_the_vectors() -> None:
    # "several" lies as near department as "divisions" does: a quantifier has no
    # synonym in a schema, so it is not looked up at all
    sw = StaticWords(["department", "divisions", "several"], np.stack([unit(1, 0, 0)] * 3))
    sw.floor = 0.0
    found = dict(sw.bridges(_index(), "several divisions", _names))
    assert set(found) == {"divis"}


def test_a_neighbour_no_closer_than_chance_is_not_read() -> None:
    index = _index()
    loose = dict(_words(floor=0.0).bridges(index, "divisions", _names))
    strict = dict(_words(floor=0.99).bridges(index, "divisions", _names))
    assert index.vocab[word_key("animal")] in dict(loose["divis"])
    assert strict == {}


def test_words_are_looked_up_as_written_then_by_their_term() -> None:
    sw = _words()
    assert sw.row("Divisions", "divis") == sw.rows["divisions"]
    # "departmental" is not in the vocabulary: its term's shortest word stands in
    assert sw.row("departmental", "depart") == sw.rows["department"]
    assert sw.row("xyzzy", "xyzzi") is None


def test_chance_cosine_is_a_high_quantile_of_random_pairs() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(size=(500, 16)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    floor = chance_cosine(lambda rows: m[rows], len(m))
    cos = m @ m.T
    share_above = float((cos[np.triu_indices(500, 1)] > floor).mean())
    assert 0.002 < share_above < 0.03
    assert chance_cosine(lambda rows: m[rows], 1) == 0.0


def test_vectors_are_read_from_their_files(tmp_path: Path) -> None:
    rows = np.array([[127, 0, 0], [0, -127, 0]], dtype=np.int8)
    sw = read_vectors(_write(tmp_path / "v", ["alpha", "betas"], rows))
    assert len(sw) == 2
    assert sw.row("beta", "beta") == 1  # by its stored term
    assert sw.unit([1])[0] == pytest.approx([0.0, -1.0, 0.0])
    (tmp_path / "bad").mkdir()
    _write(tmp_path / "bad", ["alpha", "beta", "gamma"], rows)
    with pytest.raises(ValueError, match=r"shape \(2, 3\) for 3 words"):
        read_vectors(tmp_path / "bad")


def test_the_shipped_vectors_load_and_read_synonyms() -> None:
    sw = static_words.static_words()
    assert sw is not None and len(sw) > 50_000
    assert 0.2 < sw.floor < 0.4
    nodes = [
        CoverageNode("crm", "group", None, {"name": "crm"}),
        CoverageNode("crm.customer", "table", "crm", {"name": "customer"}),
        CoverageNode("crm.product", "table", "crm", {"name": "product"}),
        CoverageNode("geo", "group", None, {"name": "geo"}),
        CoverageNode("geo.country", "table", "geo", {"name": "country"}),
    ]
    index = CoverageIndex(nodes, {"name": 1.0})
    names = lambda: ["crm", "customer", "product", "geo", "country"]  # noqa: E731
    asked = "clients buying goods in each nation"
    found = {k: dict(v) for k, v in sw.bridges(index, asked, names)}
    assert index.vocab[word_key("customer")] in found["client"]
    assert index.vocab[word_key("product")] in found["good"]
    assert index.vocab[word_key("country")] in found["nation"]


def test_the_shipped_terms_are_the_analyzers_own() -> None:
    # words.txt.gz stores each word's analysed term; a changed analyzer needs
    # scripts/build_word_vectors.py run again
    sw = static_words.static_words()
    assert sw is not None
    fresh = StaticWords(sw.words, sw.unit(np.arange(len(sw))))
    assert fresh.by_key == sw.by_key


def test_turned_off_or_unreadable_vectors_read_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    index = _index()
    monkeypatch.setenv("LAYERSEARCH_WORD_VECTORS", "")
    assert static_words.static_words() is None
    assert static_words.static_bridges(index, "divisions", _names) == ()
    monkeypatch.setenv("LAYERSEARCH_WORD_VECTORS", str(tmp_path / "missing"))
    assert static_words.static_bridges(index, "divisions", _names) == ()
    assert "word vectors not read" in caplog.text


def test_lexical_search_finds_a_table_by_a_word_wordnet_does_not_relate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(hr_layer(tmp_path))
        question = "which divisions are there"
        monkeypatch.setenv("LAYERSEARCH_WORD_VECTORS", "")
        without = [h.id for h in ls.search(question=question, channels=["fulltext"]).results]
        monkeypatch.delenv("LAYERSEARCH_WORD_VECTORS")
        found = ls.search(question=question, channels=["fulltext"]).results
        assert "hr.department" not in without
        assert found and found[0].id == "hr.department"


def test_a_catalogs_words_are_read_once_for_all_its_indexes() -> None:
    """A datasource's index takes its words from its catalog's, read once: the names are
    not read again for it, and each index's space is the one read alone gives."""
    from layersearch.ranking.coverage_cut import within

    class Catalog:  # (a snapshot's entity map: weakly referenced, a mapping not hashable)
        __hash__ = None  # type: ignore[assignment]

    wide, catalog, reads = _index(), Catalog(), []

    def names() -> list[str]:
        reads.append(1)
        return NAMES

    sw = _words()
    question = "the divisions and their spending"
    got = [sw.bridges(ix, question, names, catalog=catalog) for ix in (wide, within(wide, "hr"))]
    assert len(reads) == 1
    alone = [_words().bridges(ix, question, _names) for ix in (wide, within(wide, "hr"))]
    assert got == alone and got[1]  # the cut index reads divisions as department too
    # a catalog that cannot be weakly referenced is read for each index
    plain = _words()
    for ix in (wide, within(wide, "hr")):
        plain.bridges(ix, question, names, catalog={})
    assert len(reads) == 3
