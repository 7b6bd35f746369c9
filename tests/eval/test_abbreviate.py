"""The abbreviated Spider copy (a dev proxy for warehouses with abbreviated names) and
the --half selection of the schema-linking evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.errors import ConfigError
from layersearch.eval.abbreviate import (
    STYLES,
    abbreviate_spider,
    abbreviate_text,
    abbreviate_word,
    warehouse_db,
)
from layersearch.eval.schema_linking import read_questions, run_schema_linking, select_half

TABLES = [
    {
        "db_id": "music",
        "table_names": ["singer", "concert", "singer in concert"],
        "table_names_original": ["singer", "concert", "singer_in_concert"],
        "column_names": [[-1, "*"], [0, "singer id"], [0, "country"], [1, "concert id"]]
        + [[2, "concert id"], [2, "singer id"]],
        "column_names_original": [[-1, "*"], [0, "Singer_ID"], [0, "Country"], [1, "concert_ID"]]
        + [[2, "concert_ID"], [2, "Singer_ID"]],
        "column_types": ["text", "number", "text", "number", "number", "number"],
        "primary_keys": [1, 3],
        "foreign_keys": [[4, 3], [5, 1]],
    },
    {
        "db_id": "pets",
        "table_names": ["pet", "owner"],
        "table_names_original": ["Pet", "Owner"],
        "column_names": [[-1, "*"], [0, "pet id"], [0, "pet type"], [1, "owner id"]],
        "column_names_original": [[-1, "*"], [0, "PetID"], [0, "PetType"], [1, "OwnerID"]],
        "column_types": ["text", "number", "text", "number"],
        "primary_keys": [1, 3],
        "foreign_keys": [],
    },
]
QUESTIONS = [
    {
        "question": "What is the country of each singer?",
        "db_id": "music",
        "gold_tables": ["music.singer"],
        "gold_columns": ["music.singer.Country"],
    },
    {
        "question": "Which pet types are there?",
        "db_id": "pets",
        "gold_tables": ["pets.Pet"],
        "gold_columns": ["pets.Pet.PetType"],
    },
]


@pytest.mark.parametrize(
    ("word", "short"),
    [
        ("facility", "fclt"),
        ("quantity", "qnty"),
        ("department", "dprt"),
        ("number", "nmbr"),
        ("amount", "amnt"),
        ("name", "name"),  # 4 letters or fewer: kept
        ("ID", "ID"),
        ("state", "stat"),  # skeleton "st" is too short: the first 4 letters
        ("Singer", "Sngr"),  # case kept letter by letter
        ("people", "peop"),  # "ppl" collapses to "pl"
    ],
)
def test_the_rule_word_by_word(word: str, short: str) -> None:
    assert abbreviate_word(word) == short


def test_identifiers_and_phrases_are_abbreviated_part_by_part() -> None:
    assert abbreviate_text("FirstName") == "FrstName"
    assert abbreviate_text("facility_room_number") == "fclt_room_nmbr"
    assert abbreviate_text("singer in concert") == "sngr in cncr"
    assert abbreviate_text("Room2Capacity") == "Room2Cpct"


@pytest.mark.parametrize(
    ("word", "style", "short"),
    [
        ("location", "truncate", "loca"),
        ("Customer", "truncate", "Cust"),  # case kept
        ("name", "truncate", "name"),  # 4 letters or fewer: kept in every style
        ("concert", "short", "cnc"),
        ("stadium", "short", "std"),
        ("state", "short", "sta"),  # skeleton "st" is too short: the first 3 letters
        ("people", "short", "peo"),
    ],
)
def test_other_conventions_word_by_word(word: str, style: str, short: str) -> None:
    assert abbreviate_word(word, style) == short


def test_mixed_picks_one_convention_per_word_the_same_every_time() -> None:
    import zlib

    words = ["facility", "location", "concert", "stadium", "customer", "department"]
    mixed = [abbreviate_word(w, "mixed") for w in words]
    # each word in the style its CRC-32 names, whatever its case
    for w, got in zip(words, mixed, strict=True):
        style = STYLES[zlib.crc32(w.encode()) % 3]
        assert got == abbreviate_word(w, style)
        assert abbreviate_word(w.upper(), "mixed") == abbreviate_word(w.upper(), style)
    assert len({STYLES[zlib.crc32(w.encode()) % 3] for w in words}) == 3  # all three used
    assert abbreviate_text("facility_location", "mixed") == "_".join(mixed[:2])
    with pytest.raises(ConfigError, match="unknown abbreviation style 'vowelless'"):
        abbreviate_word("facility", "vowelless")


def test_a_style_applies_to_every_name_and_keeps_the_gold_ids() -> None:
    dbs, qs = abbreviate_spider(TABLES, QUESTIONS, style="truncate")
    assert [d["db_id"] for d in dbs] == ["musi", "pets"]
    assert dbs[0]["table_names_original"] == ["sing", "conc", "sing_in_conc"]
    assert qs[0]["gold_tables"] == ["musi.sing"] and qs[0]["gold_columns"] == ["musi.sing.Coun"]


def test_gold_ids_are_mapped_by_position() -> None:
    dbs, qs = abbreviate_spider(TABLES, QUESTIONS)
    assert [d["db_id"] for d in dbs] == ["msc", "pets"]
    assert dbs[0]["table_names_original"] == ["sngr", "cncr", "sngr_in_cncr"]
    assert dbs[0]["table_names"] == ["sngr", "cncr", "sngr in cncr"]
    assert qs[0]["gold_tables"] == ["msc.sngr"]
    assert qs[0]["gold_columns"] == ["msc.sngr.Cntr"]
    assert qs[0]["question"] == QUESTIONS[0]["question"]
    # the originals are untouched
    assert TABLES[0]["table_names_original"][0] == "singer"


def test_colliding_names_stay_apart() -> None:
    from layersearch.semantic.importers.spider import spider_ids

    db = {**TABLES[1], "db_id": "d", "table_names_original": ["status", "states"]}
    q = {"question": "q", "db_id": "d", "gold_tables": ["d.states"], "gold_columns": []}
    (short,), (mapped,) = abbreviate_spider([db], [q])
    assert short["table_names_original"] == ["sts", "sts"]
    assert spider_ids(short).tables == ["sts", "sts_2"]  # as the importer names them
    assert mapped["gold_tables"] == ["d.sts_2"]
    twins = [dict(TABLES[1], db_id="status"), dict(TABLES[1], db_id="states")]
    q = {"question": "q", "db_id": "states", "gold_tables": ["states.Pet"], "gold_columns": []}
    dbs, (mapped,) = abbreviate_spider(twins, [q])
    assert [d["db_id"] for d in dbs] == ["sts", "sts_2"]
    assert mapped["gold_tables"] == ["sts_2.Pet"] and mapped["db_id"] == "sts_2"


def test_unknown_gold_ids_are_errors() -> None:
    bad = [{"question": "q", "db_id": "music", "gold_tables": ["music.nope"], "gold_columns": []}]
    with pytest.raises(ConfigError, match="music.nope"):
        abbreviate_spider(TABLES, bad)
    with pytest.raises(ConfigError, match="db_id 'x'"):
        abbreviate_spider(TABLES, [{"question": "q", "db_id": "x", "gold_tables": []}])


def test_the_copy_loads_and_evaluates(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from layersearch.cli import main

    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps(TABLES))
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    out_t, out_q = tmp_path / "abbr.json", tmp_path / "abbr.jsonl"
    res = CliRunner().invoke(
        main,
        ["eval", "abbreviate-catalog", "--catalog", str(tables), "--questions", str(qfile)]
        + ["--out-catalog", str(out_t), "--out-questions", str(out_q)],
    )
    assert res.exit_code == 0, res.output
    questions = read_questions(out_q)
    with Layersearch(":memory:") as ls:
        ls.load(out_t)
        (r,) = run_schema_linking(ls, questions, channel_sets=[["fulltext"]])
    assert r.metrics["questions"] == 2
    assert "msc.sngr" in ls_ids(out_t)
    res = CliRunner().invoke(
        main,
        ["eval", "abbreviate-catalog", "--catalog", str(tables), "--style", "short"]
        + ["--out-catalog", str(out_t), "--json"],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["style"] == "short"
    assert "msc.sng" in ls_ids(out_t)


def ls_ids(path: Path) -> set[str]:
    with Layersearch(":memory:") as ls:
        ls.load(path)
        return set(ls.corpus().entities)


def test_halves() -> None:
    qs = [{"n": i} for i in range(5)]
    assert select_half(qs, "A") == qs[:3]
    assert select_half(qs, "b") == qs[3:]
    assert select_half(qs, None) == qs
    with pytest.raises(ConfigError, match="half 'C'"):
        select_half(qs, "C")


def test_the_command_offers_every_style() -> None:
    # the CLI spells the styles out (importing the module at start-up costs the CLI);
    # they must stay the module's
    from layersearch.cli.evals import eval_abbreviate_catalog

    (option,) = [p for p in eval_abbreviate_catalog.params if p.name == "style"]
    assert tuple(option.type.choices) == STYLES  # type: ignore[attr-defined]


def test_warehouse_names_are_prefixed_and_recased() -> None:
    db = {
        "db_id": "shop",
        "table_names_original": ["Orders"],
        "table_names": ["orders"],
        "column_names_original": [[-1, "*"], [0, "order_total"]],
        "column_names": [[-1, "*"], [0, "order total"]],
    }
    out = warehouse_db(db)
    assert out["table_names_original"][0].endswith("orders")
    assert out["table_names_original"][0][:4] in {"dim_", "fct_", "stg_", "orde"}
    assert out["column_names_original"][1][1] in {"ORDER_TOTAL", "orderTotal"}
    assert out["column_names_original"][0] == [-1, "*"]
