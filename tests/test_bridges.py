"""Vocabulary bridges: abbreviations matched by rule, WordNet synonyms from a local copy,
weighted slots in the schema channel, and the share of a question a catalog can read."""

from __future__ import annotations

import gzip
import os
from array import array
from pathlib import Path
from typing import Any

import pytest

from layersearch.corpora.entities.config import DEFAULT_INDEX
from layersearch.ranking import lexicon
from layersearch.ranking.analyzer import FUNCTION_WORDS, STOP_WORDS, read_words
from layersearch.ranking.bridges import (
    abbreviation_candidates,
    abbreviation_weight,
    keeps_word_start,
    looks_like_word,
    skeleton,
    truncation_weight,
)
from layersearch.ranking.coverage import CoverageIndex, CoverageNode


def test_skeleton_and_the_fallback_dictionary() -> None:
    assert skeleton("facility") == "fclty"
    assert skeleton("quantity") == "qnty"
    assert looks_like_word("dept") and looks_like_word("name")
    assert not looks_like_word("qty") and not looks_like_word("fclt")
    assert abbreviation_candidates(["fclt", "room", "no", "qty", "sngr", "x1"]) == [
        "fclt",
        "qty",
        "sngr",
    ]


@pytest.mark.parametrize(
    ("part", "word", "weight"),
    [
        ("fclt", "facility", 0.8),  # (4 + 4) / (2 * len("fclty"))
        ("sngr", "singers", 1.0),  # "singer" → "sngr": all of it
        ("arpr", "airports", 0.8),
        ("aprt", "airports", 0.5),  # apartment: skips the r, shares only "a"
        ("fclt", "fclt", 0.0),  # not shorter than the word
        ("ftc", "facility", 0.0),  # letters not in order
        ("acl", "facility", 0.0),  # another first letter
        ("no", "number", 0.0),  # too short to be read as an abbreviation
    ],
)
def test_abbreviation_weight(part: str, word: str, weight: float) -> None:
    assert abbreviation_weight(part, word) == pytest.approx(weight)


def _warehouse(bridges: bool) -> CoverageIndex:
    nodes = [
        CoverageNode("ops", "group", None, {"name": "ops"}),
        CoverageNode("ops.fclt_room", "table", "ops", {"name": "fclt_room"}),
        CoverageNode("ops.fclt_room.room_no", "leaf", "ops.fclt_room", {"name": "room_no"}),
        CoverageNode("ops.fclt_room.cpct", "leaf", "ops.fclt_room", {"name": "cpct"}),
        CoverageNode("ops.room_rate", "table", "ops", {"name": "room_rate"}),
        CoverageNode("ops.room_rate.rate", "leaf", "ops.room_rate", {"name": "rate"}),
    ]
    return CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=bridges)


def test_abbreviated_names_are_found_by_the_words_they_shorten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")  # the rule alone, no lexicon
    question = "capacity of each facility room"
    plain = [i for i, _ in _warehouse(bridges=False).search(question, 10)]
    bridged = [i for i, _ in _warehouse(bridges=True).search(question, 10)]
    # without bridges "capacity" reaches nothing: cpct is only listed after the matches
    assert plain.index("ops.fclt_room.cpct") > plain.index("ops.room_rate")
    assert bridged[:2] == ["ops.fclt_room", "ops.fclt_room.cpct"]
    # "facility" alone: only the bridge reaches fclt_room
    assert "ops.fclt_room" not in [i for i, _ in _warehouse(False).search("rates per facility", 5)]
    assert "ops.fclt_room" in [i for i, _ in _warehouse(True).search("rates per facility", 5)]
    idx = _warehouse(bridges=True)
    # capacity → cpct and facility → fclt (0.8 each), room exactly
    assert idx.query_reach(question) == pytest.approx((0.8 + 0.8 + 1.0) / 3)
    assert _warehouse(bridges=False).query_reach(question) == pytest.approx(1 / 3)


def test_a_question_in_the_catalogs_words_ranks_as_without_bridges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    for question in ("room rate", "fclt room", "rate of rooms"):
        assert _warehouse(True).search(question, 10) == _warehouse(False).search(question, 10)


def _catalog(spec: dict[str, dict[str, list[str]]]) -> list[CoverageNode]:
    """Nodes of databases → tables → column names, each named by its last id part."""
    nodes = []
    for db, tables in spec.items():
        nodes.append(CoverageNode(db, "group", None, {"name": db}))
        for table, columns in tables.items():
            nodes.append(CoverageNode(f"{db}.{table}", "table", db, {"name": table}))
            nodes += [
                CoverageNode(f"{db}.{table}.{c}", "leaf", f"{db}.{table}", {"name": c})
                for c in columns
            ]
    return nodes


def _countries_and_contestants() -> CoverageIndex:
    """``cntr`` (countries) is a table here and a column of four other tables; ``cnts``
    (contestants) is one table: the faithful reading of *countries* is the common one."""
    nodes = _catalog({"geo": {"cntr": ["name"]}, "vote": {"cnts": ["name"]}})
    for k in range(4):
        db, table = f"db{k}", f"db{k}.site{k}"
        nodes += [
            CoverageNode(db, "group", None, {"name": db}),
            CoverageNode(table, "table", db, {"name": f"site{k}"}),
            CoverageNode(f"{table}.cntr", "leaf", table, {"name": "cntr"}),
        ]
    return CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)


def test_a_rare_look_alike_does_not_outrank_the_faithful_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    idx = _countries_and_contestants()
    slot = idx.query_slots("how many countries")[0]
    assert [w for _, w in slot] == pytest.approx([1.0, 0.875])  # cntr whole, cnts look-alike
    tables = [i for i, _ in idx.search("how many countries", 10) if i.count(".") == 1]
    # cnts is rarer (one table) but only a look-alike (0.875): it comes after cntr
    assert tables.index("geo.cntr") < tables.index("vote.cnts")


def test_keeps_word_start() -> None:
    assert keeps_word_start("empl", "employees") and keeps_word_start("emp", "employees")
    assert keeps_word_start("dprt", "department") and keeps_word_start("lng", "languages")
    assert not keeps_word_start("end", "enrolled")  # skips the r
    assert not keeps_word_start("crs", "countries")  # skips the n and t
    assert not keeps_word_start("no", "number")  # too short to be read as an abbreviation


def _employees(bridges: bool = True) -> CoverageIndex:
    """A catalog that spells *employee* only through one ``emp_num`` column (the analyzer
    expands ``emp``) and abbreviates it ``empl`` in three databases; it also writes
    ``language`` in three tables and ``lng`` (longitude) in one, and ``end`` in three
    columns next to one ``enrolled``."""
    nodes = [
        CoverageNode("uni", "group", None, {"name": "uni"}),
        CoverageNode("uni.prof", "table", "uni", {"name": "prof"}),
        CoverageNode("uni.prof.emp_num", "leaf", "uni.prof", {"name": "emp_num"}),
        CoverageNode("uni.prof.enrolled", "leaf", "uni.prof", {"name": "enrolled"}),
        CoverageNode("uni.prof.lng", "leaf", "uni.prof", {"name": "lng"}),
    ]
    for k in range(3):
        db = f"hr{k}"
        nodes += [
            CoverageNode(db, "group", None, {"name": db}),
            CoverageNode(f"{db}.empl", "table", db, {"name": "empl"}),
            CoverageNode(f"{db}.empl.name", "leaf", f"{db}.empl", {"name": "name"}),
            CoverageNode(f"{db}.empl.end", "leaf", f"{db}.empl", {"name": "end"}),
            CoverageNode(f"{db}.language", "table", db, {"name": "language"}),
        ]
    return CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=bridges)


def test_a_word_the_catalog_uses_is_also_read_in_its_common_abbreviation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    idx = _employees()
    terms = {j: t for t, j in idx.vocab.items()}

    def slot(question: str) -> list[tuple[str, float]]:
        (only,) = idx.query_slots(question)
        return [(terms[j], round(w, 3)) for j, w in only]

    # empl is more common than the word itself and keeps its start: a reading (0.8);
    # emp is exactly as common as the word (the column that spells it): not one
    assert slot("employees") == [("employe", 1.0), ("empl", 0.8)]
    hits = [i for i, _ in idx.search("how many employees", 10)]
    assert {"hr0.empl", "hr1.empl", "hr2.empl"} <= set(hits[:5])
    # lng keeps the start of "languages" but is rarer than the word: a look-alike
    assert slot("languages") == [("languag", 1.0)]
    # end is commoner than "enrolled" but skips its r: a look-alike
    assert slot("enrolled") == [("enrol", 1.0)]
    # a question in the catalog's own spelling ranks as without bridges
    assert idx.search("language", 10) == _employees(bridges=False).search("language", 10)


@pytest.mark.parametrize(
    ("part", "word", "weight"),
    [
        ("stat", "states", 0.8),  # 4 of the 5 letters of "state"
        ("peop", "people", 4 / 6),
        ("info", "information", 4 / 11),
        ("room", "rooms", 0.0),  # the whole word, not a truncation of it
        ("car", "cargo", 0.0),  # too short to be read as a truncation
        ("stat", "estate", 0.0),  # not the word's start
    ],
)
def test_truncation_weight(part: str, word: str, weight: float) -> None:
    assert truncation_weight(part, word) == pytest.approx(weight)


def test_a_truncated_name_is_read_only_for_a_word_the_catalog_does_not_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    nodes = [
        CoverageNode("poker", "group", None, {"name": "poker"}),
        CoverageNode("poker.peop", "table", "poker", {"name": "peop"}),
        CoverageNode("poker.peop.ntnl", "leaf", "poker.peop", {"name": "ntnl"}),
        CoverageNode("cars", "group", None, {"name": "cars"}),
        CoverageNode("cars.make", "table", "cars", {"name": "make"}),
        CoverageNode("cars.make.maker", "leaf", "cars.make", {"name": "maker"}),
    ]
    idx = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)
    terms = {j: t for t, j in idx.vocab.items()}
    # peop (a word to the fallback dictionary: it has vowels) is the start of "people"
    (slot,) = idx.query_slots("people")
    assert [(terms[j], round(w, 3)) for j, w in slot] == [("peop", 0.667)]
    assert idx.search("how many people", 1)[0][0] == "poker.peop"
    # "makers" is a word of the catalog: make, a word of its own, does not read it
    (slot,) = idx.query_slots("makers")
    assert [terms[j] for j, _ in slot] == ["maker"]


# A WordNet database in its own format, three noun synsets: customer/client, and a head
# (person in charge) whose hypernym is leader.
_DATA = [
    ("00000100", "02", "customer 0 client 0", ["@ 00000300 n 0000"]),
    ("00000200", "01", "head 0", ["@ 00000300 n 0000"]),
    ("00000300", "01", "leader 0", ["~ 00000100 n 0000", "~ 00000200 n 0000"]),
]


def _wordnet(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    lines = ["  1 a licence header line"]
    for off, n, words, ptrs in _DATA:
        lines.append(f"{off} 18 n {n} {words} {len(ptrs):03d} {' '.join(ptrs)} | a gloss")
    (tmp_path / "data.noun").write_text("\n".join(lines) + "\n", encoding="latin-1")
    index = {
        "client": ["00000100"],
        "customer": ["00000100"],
        "head": ["00000200"],
        "leader": ["00000300"],
    }
    (tmp_path / "index.noun").write_text(
        "".join(f"{w} n {len(o)} 0 {len(o)} 0 {' '.join(o)}\n" for w, o in sorted(index.items())),
        encoding="latin-1",
    )
    (tmp_path / "noun.exc").write_text("clientele client\n", encoding="latin-1")
    return tmp_path


def _use_wordnet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The small WordNet above as the lexicon, cached under ``tmp_path``."""
    monkeypatch.setenv("LAYERSEARCH_WORDNET", str(_wordnet(tmp_path / "wn")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lexicon._load.cache_clear()


def test_wordnet_is_read_from_a_local_copy_and_bridges_synonyms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_wordnet(tmp_path, monkeypatch)
    wn = lexicon.wordnet()
    assert wn is not None
    assert wn.is_word("clients") and wn.is_word("clientele") and not wn.is_word("sngr")
    assert list((tmp_path / "cache" / "layersearch").glob("wordnet-*.pickle"))
    lexicon._load.cache_clear()
    assert lexicon.wordnet() == wn  # read back from the cache
    nodes = [
        CoverageNode("crm", "group", None, {"name": "crm"}),
        CoverageNode("crm.customer", "table", "crm", {"name": "customer"}),
        CoverageNode("crm.head", "table", "crm", {"name": "head"}),
        CoverageNode("crm.region", "table", "crm", {"name": "region"}),
    ]
    idx = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)
    assert [i for i, _ in idx.search("clients", 3)] == ["crm.customer"]
    assert [i for i, _ in idx.search("leaders", 3)] == ["crm.customer", "crm.head"]
    # a synonym (0.5) reads more of the question than a broader word (0.3)
    assert idx.query_reach("clients") == pytest.approx(0.5)
    assert idx.query_reach("leaders") == pytest.approx(0.3)
    lexicon._load.cache_clear()


def _reads_as_parsed(wn: lexicon.WordNet, plain: lexicon.Plain) -> None:
    """The compact lexicon holds what the plain parse holds, in its order."""
    assert list(wn.senses.items()) == list(plain.senses.items())
    assert list(wn.by_key.items()) == list(plain.by_key.items())
    assert list(wn.lemmas) == plain.lemmas and list(wn.related) == plain.related
    assert wn.lemmas[-1] == plain.lemmas[-1] and wn.related[:2] == plain.related[:2]
    with pytest.raises(IndexError):
        wn.related[len(plain.related)]
    assert wn.by_key.get("zzyzx", ()) == () and "zzyzx" not in wn.senses
    # numbers in 4-byte arrays; each lemma string once, shared by the tables
    for rows in (wn.related, wn.senses.rows, wn.by_key.rows):
        assert isinstance(rows.values, array) and rows.values.itemsize == 4
    lemma = {w: w for row in wn.lemmas for w in row}
    shared = [k for k in [*wn.senses, *wn.by_key] if k in lemma]
    assert shared and all(k is lemma[k] for k in shared)


def test_the_lexicon_is_stored_compactly_and_reads_as_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_wordnet(tmp_path, monkeypatch)
    plain = lexicon._read(tmp_path / "wn")
    assert plain is not None
    made: list[lexicon.WordNet] = []
    compact = lexicon._compact
    monkeypatch.setattr(lexicon, "_compact", lambda *a: made.append(compact(*a)) or made[-1])
    # parsed, the copy read back from the pickle is kept (its objects packed together)
    first = lexicon.wordnet()
    assert first is not None and first == made[0] and first is not made[0]
    _reads_as_parsed(first, plain)
    lexicon._load.cache_clear()
    again = lexicon.wordnet()  # from the cache
    assert again is not None and len(made) == 1
    _reads_as_parsed(again, plain)
    lexicon._load.cache_clear()


def _clients_and_customers() -> CoverageIndex:
    """``shop`` has a client table and a customer table, ``crm`` only customers."""
    nodes = _catalog({"shop": {"client": [], "customer": []}, "crm": {"customer": ["city"]}})
    return CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)


def test_a_word_one_database_uses_is_read_in_its_synonyms_in_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch.ranking.params import QuestionReading, SchemaSearch

    _use_wordnet(tmp_path, monkeypatch)
    idx = _clients_and_customers()
    tables = [i for i, _ in idx.search("clients", 10) if i.count(".") == 1]
    # shop says client and means it: its customer table is not read as clients
    assert tables == ["shop.client", "crm.customer"]
    hits = dict(idx.search("clients in each city", 10))
    assert hits["crm.customer.city"] > 0 and "shop.customer" not in hits
    assert idx.query_reach("clients") == 1.0  # the catalog uses the word
    here_only = SchemaSearch(reading=QuestionReading(elsewhere_synonyms=False))
    tables = [i for i, _ in idx.search_levels("clients", 10, params=here_only)[0]]
    assert tables == ["shop.client"]
    lexicon._load.cache_clear()


def test_no_wordnet_degrades_to_no_synonyms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "/nonexistent/wordnet")
    lexicon._load.cache_clear()
    assert lexicon.wordnet() is None
    nodes = [
        CoverageNode("crm", "group", None, {"name": "crm"}),
        CoverageNode("crm.customer", "table", "crm", {"name": "customer"}),
    ]
    assert (
        CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True).search("clients", 3) == []
    )
    lexicon._load.cache_clear()


def test_explain_states_the_evidence_of_the_schema_and_vector_channels(tmp_path: Path) -> None:
    from layersearch import Layersearch
    from layersearch.ranking.explain import explain_text

    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(Path(__file__).resolve().parents[1] / "fixtures" / "mini")
        ls.embed()
        resp = ls.search(question="tax charged on the order zzyzx", explain=True, max_results=20)
    entity_hits = [h for h in resp.results if h.kind != "memory"]
    parts = {c.channel: c for h in entity_hits for c in h.explanation or []}
    assert {"schema", "vector"} <= set(parts) and "table" not in parts
    for h in resp.results:
        for c in h.explanation or []:
            assert c.contribution == pytest.approx(c.weight / (60 + c.rank), abs=1e-6)
            if h.kind != "memory" and c.channel in ("schema", "vector"):
                # their evidence is stated (channel-evidence), not weighed
                assert c.weight == 1.0 and c.separation is not None and 0 <= c.reach <= 1
            else:
                assert c.weight == 1.0 and c.separation is None and c.reach is None
    # the question's made-up word is one the schema channel cannot read
    assert parts["schema"].reach is not None and parts["schema"].reach < 1.0
    assert parts["vector"].reach == 1.0
    # weight 1: no "x weight" in the text
    assert " x" not in explain_text([parts["schema"]])


def test_a_scoped_index_takes_its_bridges_from_the_wide_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_wordnet(tmp_path, monkeypatch)
    crm = [
        CoverageNode("crm", "group", None, {"name": "crm"}),
        CoverageNode("crm.customer", "table", "crm", {"name": "customer"}),
        CoverageNode("crm.cust_head", "table", "crm", {"name": "cust_head"}),
        CoverageNode("crm.cust_head.fclt", "leaf", "crm.cust_head", {"name": "fclt"}),
    ]
    ops = [
        CoverageNode("ops", "group", None, {"name": "ops"}),
        CoverageNode("ops.region", "table", "ops", {"name": "region"}),
    ]
    wide = CoverageIndex(crm + ops, DEFAULT_INDEX.field_weights(), bridges=True)
    own = CoverageIndex(crm, DEFAULT_INDEX.field_weights(), bridges=True)
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")  # no lexicon from here on
    lexicon._load.cache_clear()
    derived = CoverageIndex(crm, DEFAULT_INDEX.field_weights(), bridges=wide)
    assert (
        CoverageIndex(crm, DEFAULT_INDEX.field_weights(), bridges=True).search("clients", 5) == []
    )
    for question in ("clients", "leaders of a facility", "customer", "headquarters"):
        assert derived.search(question, 5) == own.search(question, 5), question
        assert derived.query_reach(question) == own.query_reach(question)
    assert derived.search("clients", 5)
    # head is a word to WordNet, read only as a truncation: the flag travels with it
    assert derived.search("headquarters", 1)[0][0] == "crm.cust_head"
    assert derived.abbr_word[derived.abbr_parts.index("head")]
    lexicon._load.cache_clear()


def _build_script() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "build_wordnet.py"
    spec = importlib.util.spec_from_file_location("build_wordnet", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_wordnet_is_the_default_and_bridges_other_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAYERSEARCH_WORDNET", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lexicon._load.cache_clear()
    assert lexicon.wordnet_dir() == lexicon.BUNDLED
    assert (lexicon.BUNDLED / "LICENSE").read_text().startswith("WordNet Release 3.0")
    wn = lexicon.wordnet()
    assert wn is not None and len(wn.lemmas) == 82115  # every WordNet 3.0 noun synset
    assert wn.is_word("nations") and wn.is_word("mice") and not wn.is_word("fclt")
    lexicon._load.cache_clear()
    assert lexicon.wordnet() == wn  # read back from the cache
    for read in (wn, lexicon.wordnet()):
        assert read is not None  # one int object per row number, shared by the two tables
        rows, key_rows = list(read.senses.row_of.values()), list(read.by_key.row_of.values())
        assert rows[5000] == 5000 and rows[5000] is key_rows[5000]
    nodes = [
        CoverageNode("geo", "group", None, {"name": "geo"}),
        CoverageNode("geo.country", "table", "geo", {"name": "country"}),
        CoverageNode("geo.river", "table", "geo", {"name": "river"}),
    ]
    idx = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)
    assert [i for i, _ in idx.search("which nations", 3)] == ["geo.country"]
    assert lexicon.identity().startswith("wordnet:") and "data.noun.gz=" in lexicon.identity()
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    assert lexicon.wordnet() is None and lexicon.identity() == "none"
    lexicon._load.cache_clear()


def test_the_build_script_prunes_to_what_is_read_and_is_deterministic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = _build_script()
    full = _wordnet(tmp_path / "full")
    (full / "LICENSE").write_text("WordNet Release 3.0\n")
    # a gloss, a pointer kept (@) and ones dropped (+ to a verb, ! antonym) in one line
    with (full / "data.noun").open("a", encoding="latin-1") as fh:
        fh.write(
            "00000400 18 n 01 boss 0 003 @ 00000300 n 0000 + 00000900 v 0101 ! 00000200 n 0101 | x\n"
        )
    with (full / "index.noun").open("a", encoding="latin-1") as fh:
        fh.write("boss n 1 3 @ + ! 1 0 00000400\n")
    for out in ("a", "b"):
        assert build.main([str(full), str(tmp_path / out)]) == 0
    for name in ("data.noun.gz", "index.noun.gz", "noun.exc.gz", "LICENSE"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    data = gzip.decompress((tmp_path / "a" / "data.noun.gz").read_bytes()).decode()
    assert "gloss" not in data and "licence header" not in data
    assert "00000400 18 n 01 boss 0 001 @ 00000300 n 0000\n" in data
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    parsed = {}
    for name in ("full", "a"):
        monkeypatch.setenv("LAYERSEARCH_WORDNET", str(tmp_path / name))
        lexicon._load.cache_clear()
        wn = lexicon.wordnet()
        assert wn is not None
        parsed[name] = (wn.senses, wn.lemmas, wn.related, wn.by_key)
    assert parsed["a"] == parsed["full"]
    plain = lexicon._read(tmp_path / "full")
    assert plain is not None and wn is not None
    _reads_as_parsed(wn, plain)
    assert parsed["a"][0]["boss"] == (3,) and parsed["a"][2][3] == (2,)  # boss → leader
    lexicon._load.cache_clear()


def test_a_store_built_with_another_lexicon_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    code = "from layersearch.corpora.snapshot.layout import code_fingerprint as f; print(f())"
    prints = {}
    for value in ("", str(_wordnet(tmp_path / "wn"))):
        src = str(Path(__file__).resolve().parents[1] / "src")
        env = {**os.environ, "LAYERSEARCH_WORDNET": value, "PYTHONPATH": src}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        prints[value] = out.stdout.strip()
    assert len(set(prints.values())) == 2 and all(prints.values())


def test_a_words_abbreviations_are_kept_beside_the_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from layersearch.ranking import coverage
    from layersearch.ranking.persist import load_object, save_object

    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    idx = _warehouse(bridges=True)
    fresh = list(idx._abbreviations_of("facility", -1))
    assert fresh  # fclt
    assert idx._abbreviating("facility") == fresh
    assert ("facility", -1) in coverage._WORDS[idx]
    # the kept answer is a copy: a caller changing its list changes nothing kept
    idx._abbreviating("facility").clear()
    assert idx._abbreviating("facility") == fresh
    # a full cache pushes out its oldest word instead of growing
    monkeypatch.setattr(coverage, "_WORDS_KEPT", 2)
    idx._abbreviating("capacity")
    idx._abbreviating("rooms")
    assert list(coverage._WORDS[idx]) == [("capacity", -1), ("rooms", -1)]
    # the index is saved without them, and the loaded one reads the same
    save_object(idx, tmp_path / "idx")
    loaded = load_object(tmp_path / "idx")
    assert loaded not in coverage._WORDS
    assert loaded._abbreviating("facility") == fresh
    assert loaded.search("capacity of each facility room", 5) == idx.search(
        "capacity of each facility room", 5
    )


def test_the_code_the_schema_index_is_built_with_stamps_the_snapshot() -> None:
    """A persisted schema index holds what the ranking modules it imports computed (its
    bridges, its BM25 statistics): a change to any of them must rebuild the snapshot."""
    import ast

    import layersearch
    from layersearch.corpora.snapshot import layout

    package = Path(layersearch.__file__).parent
    stamped = set(layout._CODE)
    for rel in ("ranking/coverage", "ranking/coverage_arrays", "ranking/coverage_terms"):
        tree = ast.parse((package / f"{rel}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "layersearch.ranking."
            ):
                imported = node.module.removeprefix("layersearch.").replace(".", "/")
                assert imported in stamped, f"{rel} imports {node.module}, not in the fingerprint"
    assert {"ranking/bridges", "ranking/bm25"} <= stamped


def test_a_catalog_word_reads_its_own_senses_not_those_of_its_stem_mates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the shipped WordNet: customer stems to custom, whose first senses are custom's
    # (usage, tradition, customs duty); customer's own sense (customer, client) is 5th
    from layersearch.ranking.bridges import _term_senses

    monkeypatch.delenv("LAYERSEARCH_WORDNET", raising=False)
    lexicon._load.cache_clear()
    try:
        wn = lexicon.wordnet()
        assert wn is not None
        (client,) = [s for s in wn.senses["customer"] if "client" in wn.lemmas[s]]
        assert client not in _term_senses(wn, "custom", ())
        assert client in _term_senses(wn, "custom", {"customer"})
        assert client in _term_senses(wn, "custom", {"customers"})  # a plural's singular
        nodes = [
            CoverageNode("shop", "group", None, {"name": "shop"}),
            CoverageNode("shop.customer", "table", "shop", {"name": "customer"}),
            CoverageNode("shop.customer.city", "leaf", "shop.customer", {"name": "city"}),
            CoverageNode("shop.store", "table", "shop", {"name": "store"}),
        ]
        idx = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)
        assert idx.search("How many clients?", 1)[0][0] == "shop.customer"
    finally:
        lexicon._load.cache_clear()


def _rooms_and_trips() -> CoverageIndex:
    """``dst`` and ``lst`` abbreviate *destination* and *list*, but their consonants are
    also those of "distinct" and "least"; ``most_used`` spells a function word."""
    return CoverageIndex(
        _catalog(
            {
                "ops": {"fclt_room": ["cpct", "most_used"]},
                "trv": {"trip": ["dst", "lst"]},
            }
        ),
        DEFAULT_INDEX.field_weights(),
        bridges=True,
    )


def test_function_words_are_read_as_written_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    idx = _rooms_and_trips()
    terms = {j: t for t, j in idx.vocab.items()}

    def slots(question: str) -> list[list[str]]:
        return [[terms[j] for j, _ in slot] for slot in idx.query_slots(question)]

    # "distinct" and "least" reach no look-alike; the content words keep their readings
    assert slots("distinct facility rooms") == [["room"], ["fclt"]]
    assert slots("least capacity") == [["cpct"]]
    # the same abbreviations still read the words they shorten
    assert slots("destination of each trip") == [["trip"], ["dst"]]
    # a function word the catalog spells is matched as written
    assert slots("the most used rooms") == [["most"], ["use"], ["room"]]
    # an unread function word counts against the share of the question read
    assert idx.query_reach("distinct facility rooms") == pytest.approx((1.0 + 0.8 + 0) / 3)
    hits = [i for i, _ in idx.search("distinct facility rooms", 10)]
    assert "trv.trip.dst" not in hits[:3]


def test_bridges_start_from_the_questions_content_words() -> None:
    assert [raw for raw, _ in read_words("Show the distinct names of the other clients")] == [
        "names",
        "clients",
    ]
    # light verbs say a relation, not a topic ("use" would read WordNet's role)
    assert [raw for raw, _ in read_words("documents that use templates made by staff")] == [
        "documents",
        "templates",
        "staff",
    ]
    assert set(FUNCTION_WORDS).isdisjoint(STOP_WORDS)


def test_a_light_verb_reads_no_noun_sense(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAYERSEARCH_WORDNET", raising=False)  # the shipped WordNet
    idx = CoverageIndex(
        _catalog({"docs": {"role": ["role_code"], "template": ["template_id"]}}),
        DEFAULT_INDEX.field_weights(),
        bridges=True,
    )
    terms = {j: t for t, j in idx.vocab.items()}

    def read(question: str) -> set[str]:
        return {terms[j] for slot in idx.query_slots(question) for j, _ in slot}

    # WordNet's noun "use" is a synonym of "role"; the verb of the question is not
    assert "role" in read("the purpose of each template")
    assert read("templates people use") == {"templat"}


def test_a_request_verb_reads_no_abbreviation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERSEARCH_WORDNET", "")
    idx = CoverageIndex(
        _catalog({"it": {"cmpt": ["cmpt_id", "rtrn"], "stdn": ["stdn_id", "name"]}}),
        DEFAULT_INDEX.field_weights(),
        bridges=True,
    )
    terms = {j: t for t, j in idx.vocab.items()}

    def read(question: str) -> set[str]:
        return {terms[j] for slot in idx.query_slots(question) for j, _ in slot}

    # "Compute the number of students": the request is not a computer
    assert read("Compute the names of the students") == {"name", "stdn"}
    # the same parts still read the words they shorten
    assert {"cmpt", "rtrn"} <= read("computer returns")
