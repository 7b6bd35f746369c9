"""What a Spider or BIRD download keeps beside tables.json: BIRD's column
descriptions (database_description/<table>.csv) and the SQLite files values are
sampled from."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch import Layersearch
from layersearch.cli import main
from layersearch.errors import ModelLoadError
from layersearch.semantic.importers import load_catalog
from layersearch.semantic.importers.spider_files import database_dir
from layersearch.semantic.model import Catalog, Column

HEADER = "original_column_name,column_name,column_description,data_format,value_description\n"

TABLES = [
    {
        "db_id": "schools",
        "table_names_original": ["district", "Free Meals"],
        "table_names": ["district", "free meals"],
        "column_names_original": [
            [-1, "*"],
            [0, "id"],
            [0, "A11"],
            [0, "City"],
            [1, "id"],
            [1, "district_id"],
            [1, "Meal Count (K-12)"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "id"],
            [0, "a11"],
            [0, "city"],
            [1, "id"],
            [1, "district id"],
            [1, "meal count (k-12)"],
        ],
        "column_types": ["text", "number", "number", "text", "number", "number", "number"],
        "primary_keys": [1, 4],
        "foreign_keys": [[5, 1]],
    }
]


def write_catalog(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "dev_tables.json"
    path.write_text(json.dumps(TABLES), encoding="utf-8")
    return path


def write_sqlite(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(
        'CREATE TABLE district (id INTEGER PRIMARY KEY, A11 INTEGER, "City" TEXT);'
        'CREATE TABLE "Free Meals" (id INTEGER PRIMARY KEY, district_id INTEGER,'
        ' "Meal Count (K-12)" REAL);'
        "INSERT INTO district VALUES (1, 3000, 'Oakland'), (2, 4000, 'Fresno'),"
        " (3, 5000, 'Oakland'), (4, 1000, NULL);"
    )
    con.commit()
    con.close()


def write_descriptions(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    # BIRD's files come with a byte-order mark, stray spaces in names, and in Windows-1252
    (folder / "district.csv").write_bytes(
        (
            "\ufeff" + HEADER + "id,,district id,integer,\n"
            "A11,average salary,average salary in district,integer,USD/year\n"
            " City ,,city of the district office,text,\n"
            "ghost,,a column the table does not have,text,\n"
        ).encode("utf-8")
    )
    (folder / "Free Meals.csv").write_bytes(
        (
            HEADER + 'Meal Count (K-12),,"free meals served\nto K-12 pupils",real,caf\xe9 meals\n'
        ).encode("cp1252")
    )
    (folder / "budget.csv").write_text(HEADER + "x,,y,text,\n", encoding="utf-8")


def columns(cat: Catalog) -> dict[str, Column]:
    return {f"{m.name}.{c.name}": c for m in cat.models for c in m.columns}


@pytest.fixture
def bird(tmp_path: Path) -> Path:
    """BIRD's layout: dev_tables.json beside dev_databases/<db_id>/."""
    path = write_catalog(tmp_path / "dev")
    write_descriptions(tmp_path / "dev" / "dev_databases" / "schools" / "database_description")
    write_sqlite(tmp_path / "dev" / "dev_databases" / "schools" / "schools.sqlite")
    return path


def test_bird_descriptions_describe_and_label_the_columns(bird: Path) -> None:
    cat = load_catalog(bird)
    cols = columns(cat)
    a11 = cols["district.A11"]
    assert a11.description == "average salary in district. Values: USD/year"
    # the spelled-out name replaces a label that only repeats the name
    assert a11.label == "average salary"
    assert cols["district.City"].description == "city of the district office."
    assert cols["district.City"].label == "city"
    meals = cols["Free_Meals.Meal_Count_(K-12)"]
    assert meals.description == "free meals served to K-12 pupils. Values: café meals"
    assert meals.label == "meal count (k-12)"
    assert all(c.values == [] for c in cols.values()), "values only when asked for"
    notes = "\n".join(cat.skipped)
    assert "district.csv: 1 row(s) name no column of table 'district': ghost" in notes
    assert "budget.csv: names no table of its database; not read" in notes


def test_values_come_from_the_sqlite_file_beside(bird: Path) -> None:
    cols = columns(load_catalog(bird, sample_values=5))
    assert cols["district.City"].values == ["Fresno", "Oakland"]
    # numbers are not sampled, as the database importer samples text columns only
    assert cols["district.A11"].values == []


def test_spider_layout_and_the_notes_when_there_is_nothing_to_sample(tmp_path: Path) -> None:
    path = write_catalog(tmp_path)
    assert database_dir(path, "schools") is None
    plain = load_catalog(path)
    assert plain.skipped == []
    assert all(c.description is None for c in columns(plain).values())
    no_folder = load_catalog(path, sample_values=3)
    assert any("no database folder beside it" in s for s in no_folder.skipped)

    folder = tmp_path / "database" / "schools"
    folder.mkdir(parents=True)
    assert database_dir(path, "schools") == folder
    no_file = load_catalog(path, sample_values=3)
    assert any("schools.sqlite: no such SQLite file" in s for s in no_file.skipped)

    write_sqlite(folder / "schools.sqlite")
    cols = columns(load_catalog(path, sample_values=1))
    assert cols["district.City"].values == ["Fresno"]


def test_a_description_file_of_another_shape_is_noted(tmp_path: Path) -> None:
    path = write_catalog(tmp_path)
    folder = tmp_path / "schools" / "database_description"
    folder.mkdir(parents=True)
    (folder / "DISTRICT.CSV").write_text("name,description\nA11,salary\n", encoding="utf-8")
    (folder / "Free Meals.csv").write_bytes(b"original_column_name\x00,x\n")
    cat = load_catalog(path)
    assert all(c.description is None for c in columns(cat).values())
    notes = "\n".join(cat.skipped)
    assert "DISTRICT.CSV: no original_column_name column; not read" in notes
    assert "Free Meals.csv: no original_column_name column; not read" in notes


def test_a_damaged_database_file_is_noted_and_the_load_goes_on(tmp_path: Path) -> None:
    path = write_catalog(tmp_path)
    (tmp_path / "schools").mkdir()
    (tmp_path / "schools" / "schools.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x01" * 200)
    cat = load_catalog(path, sample_values=3)
    assert [m.name for m in cat.models] == ["district", "Free_Meals"]
    assert any("values not sampled" in s for s in cat.skipped)


def test_a_description_word_finds_its_column(bird: Path, tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(bird)
        hits = ls.search(question="average salary of each district", max_results=3).results
    assert hits[0].id == "schools.district.A11"


def test_loading_the_folder_names_the_catalog_file_to_pass(bird: Path) -> None:
    with pytest.raises(
        ModelLoadError, match=r"for a Spider or BIRD catalog, pass the file: .*dev_tables\.json"
    ):
        load_catalog(bird.parent)


def test_cli_load_samples_and_reports_the_notes(bird: Path, tmp_path: Path) -> None:
    store = tmp_path / "cli.duckdb"
    out = CliRunner().invoke(
        main,
        ["--store", str(store), "--embedder", "none", "load", str(bird), "--sample-values", "2"]
        + ["--json"],
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["datasources"] == ["schools"]
    assert any("budget.csv" in s for s in report["skipped"])
    with Layersearch(store) as ls:
        city = ls.inspect(["schools.district.City"]).entities[0]
    assert city.values == ["Fresno", "Oakland"]


def test_eval_schema_linking_samples_values_and_names_the_channel_that_ran(
    bird: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "q.jsonl"
    row = {
        "question": "How many districts are in Fresno?",
        "db_id": "schools",
        "gold_tables": ["schools.district"],
        "gold_columns": ["schools.district.City"],
    }
    questions.write_text(json.dumps(row) + "\n")
    args = ["--embedder", "none", "eval", "schema-linking", "--catalog", str(bird)]
    args += ["--questions", str(questions), "--limit", "1", "--json"]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 0, plain.output
    # the schema channel alone answered: the set that ran is named by what asks for it
    assert json.loads(plain.stdout)["channels"] == "fulltext"
    assert "skipped:" not in plain.stderr
    sampled = CliRunner().invoke(main, [*args, "--sample-values", "5"])
    assert sampled.exit_code == 0, sampled.output
    assert json.loads(sampled.stdout)["questions"] == 1
    # what could not be read beside the catalog is said on stderr, as load says it
    assert "skipped: " in sampled.stderr and "budget.csv" in sampled.stderr


def test_one_bound_on_sampled_values_for_every_path(bird: Path) -> None:
    from layersearch.cli.options import MOST_SAMPLE_VALUES
    from layersearch.errors import ConfigError
    from layersearch.semantic.importers.database import MAX_SAMPLE_VALUES
    from layersearch.semantic.importers.spider import load_spider

    assert MOST_SAMPLE_VALUES == MAX_SAMPLE_VALUES
    for n in (-1, MAX_SAMPLE_VALUES + 1):
        with pytest.raises(ConfigError, match="sample_values must be between 0 and 1000"):
            load_catalog(bird, sample_values=n)
        with pytest.raises(ConfigError, match="sample_values must be between 0 and 1000"):
            load_spider(bird, sample_values=n)
    for command in (["load", str(bird)], ["eval", "schema-linking", "--catalog", str(bird)]):
        out = CliRunner().invoke(main, [*command, "--sample-values", "1001"])
        assert out.exit_code == 2 and "0<=x<=1000" in out.output
