"""Question words read through the embedder: the catalog words nearest each question
word bridge to it in the schema channel (``ranking.neighbours``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.ranking.bridges import SYNONYM_WEIGHT
from layersearch.ranking.coverage import CoverageIndex, CoverageNode
from layersearch.ranking.neighbours import WordSpace, catalog_words
from tests.support import ConceptEmbedder, hr_layer, unit


def test_catalog_words_are_the_name_parts_that_are_words() -> None:
    names = ["Dept_Head", "budgetInBillions", "id", "no", "FCLT_ROOM_NO", None, "the_name", "2019"]
    assert catalog_words(names) == [
        "billions",
        "budget",
        "dept",
        "fclt",
        "head",
        "name",
        "room",
    ]


def test_a_word_reads_as_its_nearest_catalog_words_at_a_synonyms_weight() -> None:
    vocab = {"depart": 0, "head": 1, "budget": 2, "divis": 3}
    words = ["department", "departments", "division", "head", "budget"]
    matrix = np.stack(
        [unit(1, 0, 0), unit(1, 0.1, 0), unit(1, 0.3, 0), unit(0, 1, 0), unit(0, 0, 1)]
    )
    space = WordSpace(words, matrix, vocab)
    assert len(space) == 5
    q = np.stack([unit(1, 0.2, 0), unit(0, 0, -1)])
    found = dict(space.bridges(["divis", "deficit"], q, k=2))
    # its own term (division) never; department and departments are one term, at the
    # better cosine; a word whose neighbours all point away bridges to nothing
    assert set(found) == {"divis"}
    (depart, head) = found["divis"]
    assert depart[0] == 0 and head[0] == 1
    assert depart[1] == pytest.approx(SYNONYM_WEIGHT * float(unit(1, 0.2, 0) @ unit(1, 0.1, 0)))
    assert head[1] == pytest.approx(SYNONYM_WEIGHT * float(unit(1, 0.2, 0) @ unit(0, 1, 0)))
    assert space.bridges(["divis"], q[:1], k=0) == ()


def test_words_an_index_does_not_hold_are_left_out() -> None:
    space = WordSpace(["department", "planet"], np.stack([unit(1, 0), unit(0, 1)]), {"depart": 7})
    assert len(space) == 1
    assert space.bridges(["divis"], np.stack([unit(0.2, 1)])) == (("divis", ((7, pytest.approx(SYNONYM_WEIGHT * float(unit(0.2, 1) @ unit(1, 0)))),)),)  # fmt: skip


def _index() -> CoverageIndex:
    nodes = [
        CoverageNode("hr", "group", None, {"name": "hr"}),
        CoverageNode("hr.department", "table", "hr", {"name": "department"}),
        CoverageNode("hr.department.budget", "leaf", "hr.department", {"name": "budget"}),
        CoverageNode("zoo", "group", None, {"name": "zoo"}),
        CoverageNode("zoo.animal", "table", "zoo", {"name": "animal"}),
        CoverageNode("zoo.animal.division", "leaf", "zoo.animal", {"name": "division"}),
    ]
    return CoverageIndex(nodes, {"name": 1.0})


def test_extra_bridges_reach_what_the_words_alone_do_not() -> None:
    index = _index()
    depart = index.vocab["depart"]
    extra = (("sector", ((depart, 0.4),)),)
    assert (
        index.search_levels("sector budgets", 5)[0]
        != index.search_levels("sector budgets", 5, extra=extra)[0]
    )
    assert index.search_levels("sector budgets", 5, extra=extra)[0][0][0].startswith(
        "hr.department"
    )
    # the reading is remembered per question and bridges: neither answers for the other
    assert index.query_reach("sector", extra) == pytest.approx(0.4)
    assert index.query_reach("sector") == 0.0
    # a word the catalog uses (division, in zoo) reads its bridges only in the other
    # databases: the department table gains it, the animal table keeps its own term
    divis = (("divis", ((depart, 0.4),)),)
    ranked = [i for i, _ in index.search_levels("division", 10, extra=divis)[0]]
    assert "zoo.animal.division" in ranked and "hr.department" in ranked


def synonyms() -> ConceptEmbedder:
    """xdivs reads as department, bosses as head."""
    return ConceptEmbedder({"xdivs": 0, "department": 0, "bosses": 1, "head": 1}, "synonyms-v1")


def test_search_reads_question_words_in_their_catalog_synonyms(tmp_path: Path) -> None:
    emb = synonyms()
    with Layersearch(tmp_path / "s.duckdb", embedder=emb) as ls:  # type: ignore[arg-type]
        ls.load(hr_layer(tmp_path))
        entities, words = ls.embed()
        assert words.corpus == "words" and words.documents == len(
            catalog_words(["hr", "department", "department_id", "budget", "head", "head_id", "age"])
        )
        asked = "how many xdivs are there"
        lexical = ls.search(question=asked, channels=["fulltext"], explain=True)
        dense = ls.search(question=asked, explain=True)
        schema = {
            h.id: c.rank
            for h in dense.results
            for c in h.explanation or []
            if c.channel == "schema"
        }
        lexical_schema = {
            h.id: c.rank
            for h in lexical.results
            for c in h.explanation or []
            if c.channel == "schema"
        }
        # xdivs is no catalog word, nor WordNet's; the embedder reads it as department
        assert schema.get("hr.department") == 1, (schema, lexical_schema)
        assert "hr.department" not in lexical_schema
        assert "xdivs" in emb.documents, "the question's words were embedded"
        embedded = len(emb.documents)
        ls.search(question=asked)
        assert len(emb.documents) == embedded, "a question word is embedded once"


def test_a_question_word_the_catalog_holds_takes_its_stored_vector(tmp_path: Path) -> None:
    """A question word that is a catalog word has its vector stored (``layersearch
    embed``): it is read from there, not embedded again, and reads the same."""
    from layersearch.corpora.dense import DenseCorpus
    from layersearch.corpora.entities.neighbours import WORDS_CORPUS

    emb = synonyms()
    with Layersearch(tmp_path / "s.duckdb", embedder=emb) as ls:  # type: ignore[arg-type]
        ls.load(hr_layer(tmp_path))
        ls.embed()
        emb.documents.clear()
        asked = "budget of each department head by age"
        resp = ls.search(question=asked, explain=True)
        assert emb.documents == [], "budget, department, head and age are catalog words"
        ls.search(question="the xdivs budget")
        assert emb.documents == ["xdivs"], "only the word the catalog lacks is embedded"
        # the readings equal those of the words embedded afresh
        stored = ls.dense(WORDS_CORPUS).index()
        index = ls.corpus().coverage(None)
        read = ls.entities.vectors.words(ls.entities.request(question=asked), [])
        assert read is not None
        fresh = DenseCorpus(ls.store, WORDS_CORPUS, emb)  # type: ignore[arg-type]
        from layersearch.ranking.analyzer import read_words
        from layersearch.ranking.neighbours import WordSpace

        words = read_words(asked)
        space = WordSpace(stored.ids, np.stack([stored.vector(i) for i in stored.ids]), index.vocab)
        vectors = fresh.document_vectors([raw for raw, _ in words])
        assert read(index, asked) == space.bridges([key for _, key in words], vectors)
        assert resp.results


def test_a_store_embedded_without_word_vectors_warns_and_still_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch.corpora.dense import entity_docs

    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(hr_layer(tmp_path))
        ls.dense().embed(entity_docs(ls.corpus().entities.values()))
        resp = ls.search(question="budget of the departments")
        assert resp.results
        assert [w for w in resp.warnings if w.startswith("question words")] == [
            "question words not read through the embedder: no vectors stored for "
            "fake/hashing-v1 (256) in 'words' yet; run `layersearch embed`"
        ]
        ls.embed()
        assert ls.search(question="budget of the departments").warnings == []
        # lexical search never reads the words through the embedder (its word readings
        # come from the shipped vectors, ``ranking.static_words``)
        from layersearch.corpora.dense import DenseCorpus

        monkeypatch.setattr(DenseCorpus, "document_vectors", None)
        assert ls.search(question="budget", channels=["fulltext"]).results
