"""A deterministic abbreviated copy of a Spider catalog and its questions.

Enterprise warehouses name things ``FCLT_ROOM_NO`` and ``CUST_ACCT_BAL``; Spider
names them ``facility_room_number``. This module rewrites a Spider
``tables.json`` the way such a warehouse would have been named, so that the
same questions measure how retrieval holds up against abbreviated names.

The rule (:func:`abbreviate_word`), applied to every alphabetic word of every
identifier (split at ``_``, ``.``, ``-``, spaces, digits and camelCase humps)
and of every natural-language name, database names included:

1. a word of 4 letters or fewer is kept as it is (``name``, ``id``, ``year``);
2. otherwise its first letter is kept and the vowels (``aeiou``) after it are
   dropped; runs of one repeated letter become one (``quantity`` → ``qnty``,
   ``facility`` → ``fclty``);
3. the result is cut to 4 letters (``fclty`` → ``fclt``, ``department`` →
   ``dprt``);
4. if fewer than 3 letters are left (``state`` → ``st``, ``queue`` → ``q``),
   the word's first 4 letters are used instead (``stat``, ``queu``).

Warehouses follow other conventions too, and a copy made by the rule the
retrieval's own abbreviation reading was built around would flatter it; the other
styles (``style``, :data:`STYLES`) shorten a word over 4 letters differently:

- ``truncate``: its first 4 letters (``location`` → ``loca``, ``customer`` →
  ``cust``);
- ``short``: the skeleton of rule 2 cut to 3 letters (``concert`` → ``cnc``,
  ``stadium`` → ``std``; fewer than 3, the first 3 letters);
- ``mixed``: each distinct word (compared without case) in one of ``skeleton``,
  ``truncate`` and ``short``, chosen by its CRC-32 (the same on every run and
  machine), as a warehouse named by several teams would be.

Case is kept letter by letter (``FirstName`` → ``FrstName``). The natural-
language names (Spider's labels) are rewritten by the same rule, so the copy
has no unabbreviated words left. Ids can collide after abbreviation; they are
then made unique the way the importer does (``_2``). Gold ids are mapped by
position (table index, column index), never by string, so every question's
gold tables and columns are exactly the abbreviated ids of the originals.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.semantic.importers.spider import read_spider_tables, spider_ids

__all__ = [
    "STYLES",
    "abbreviate_spider",
    "abbreviate_text",
    "abbreviate_word",
    "rename_spider",
    "warehouse_db",
    "write_abbreviated",
]

#: Words longer than this are abbreviated.
KEEP_UP_TO = 4
#: The length an abbreviation is cut to.
CUT_TO = 4
#: Shorter skeletons fall back to the word's first CUT_TO letters.
MIN_SKELETON = 3
_VOWELS = frozenset("aeiouAEIOU")
# alphabetic words inside an identifier: camelCase humps, ALLCAPS runs, lower runs
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


#: The abbreviation conventions (see the module doc); ``skeleton`` is the default.
STYLES = ("skeleton", "truncate", "short", "mixed")
#: ``short`` cuts the skeleton to this many letters.
SHORT_CUT = 3
#: the styles ``mixed`` chooses among, by a word's CRC-32
_MIXED = STYLES[:3]


def abbreviate_word(word: str, style: str = "skeleton") -> str:
    """The rule above for one alphabetic word (anything else is returned unchanged)."""
    if style not in STYLES:
        raise ConfigError(f"unknown abbreviation style '{style}': use {', '.join(STYLES)}")
    if len(word) <= KEEP_UP_TO or not word.isalpha() or not word.isascii():
        return word
    if style == "mixed":
        style = _MIXED[zlib.crc32(word.lower().encode()) % len(_MIXED)]
    if style == "truncate":
        return word[:CUT_TO]
    cut = SHORT_CUT if style == "short" else CUT_TO
    kept = [word[0]]
    for ch in word[1:]:
        if ch in _VOWELS:
            continue
        if ch.lower() == kept[-1].lower():
            continue
        kept.append(ch)
    if len(kept) < MIN_SKELETON:
        return word[:cut]
    return "".join(kept[:cut])


def abbreviate_text(text: str, style: str = "skeleton") -> str:
    """Every alphabetic word of an identifier or a phrase abbreviated, the rest kept."""
    return _WORD.sub(lambda m: abbreviate_word(m.group(0), style), text)


def _abbreviate_db(db: dict[str, Any], style: str) -> dict[str, Any]:
    def short(text: str) -> str:
        return abbreviate_text(text, style)

    out = dict(db)
    out["db_id"] = short(db["db_id"])
    out["table_names"] = [short(t) for t in db["table_names"]]
    out["table_names_original"] = [short(t) for t in db["table_names_original"]]
    out["column_names"] = [[t, short(c)] for t, c in db["column_names"]]
    out["column_names_original"] = [[t, short(c)] for t, c in db["column_names_original"]]
    return out


def abbreviate_spider(
    tables: Sequence[dict[str, Any]],
    questions: Sequence[dict[str, Any]] = (),
    style: str = "skeleton",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The abbreviated databases, and the questions with ``db_id`` and gold ids mapped.

    Questions are records with ``question``, ``db_id``, ``gold_tables`` and
    ``gold_columns`` in the importer's ids of ``tables`` (compared without
    case); other fields are kept. A gold id the catalog does not have is an
    error naming the question.
    """
    if style not in STYLES:
        raise ConfigError(f"unknown abbreviation style '{style}': use {', '.join(STYLES)}")
    return rename_spider(tables, questions, lambda db: _abbreviate_db(db, style))


#: The prefixes :func:`warehouse_db` puts on tables ("" : none).
WAREHOUSE_PREFIXES = ("dim_", "fct_", "stg_", "")


def _camel(name: str) -> str:
    parts = [p for p in name.replace(" ", "_").split("_") if p]
    return (
        parts[0].lower() + "".join(p[:1].upper() + p[1:].lower() for p in parts[1:])
        if parts
        else name
    )


def warehouse_db(db: dict[str, Any]) -> dict[str, Any]:
    """A database named as a warehouse would be: a prefix on each table, columns in
    camelCase or UPPER_SNAKE, labels gone (warehouses rarely describe); chosen by CRC-32
    of the name, so the same on every run. A ``rename`` for :func:`rename_spider`."""
    out = dict(db)

    def table(t: str) -> str:
        prefixes = WAREHOUSE_PREFIXES
        return prefixes[zlib.crc32(t.encode()) % len(prefixes)] + t.lower()

    upper = zlib.crc32(db["db_id"].encode()) % 2 == 0

    def column(c: str) -> str:
        return c.upper() if upper else _camel(c)

    out["table_names_original"] = [table(t) for t in db["table_names_original"]]
    out["table_names"] = list(out["table_names_original"])
    out["column_names_original"] = [
        [t, column(c) if t >= 0 else c] for t, c in db["column_names_original"]
    ]
    out["column_names"] = [list(pair) for pair in out["column_names_original"]]
    return out


def rename_spider(
    tables: Sequence[dict[str, Any]],
    questions: Sequence[dict[str, Any]],
    rename: Callable[[dict[str, Any]], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The databases as ``rename`` rewrites each (names only: the tables and columns
    stay in place), and the questions with ``db_id`` and gold ids mapped by position."""
    new_dbs: list[dict[str, Any]] = []
    id_map: dict[str, str] = {}
    db_map: dict[str, str] = {}
    taken_db: set[str] = set()
    for db in tables:
        short = rename(db)
        # two databases whose names abbreviate alike stay apart
        base, n = short["db_id"], 2
        while short["db_id"].lower() in taken_db:
            short["db_id"] = f"{base}_{n}"
            n += 1
        taken_db.add(short["db_id"].lower())
        new_dbs.append(short)
        old, new = spider_ids(db), spider_ids(short)
        db_map[old.datasource.lower()] = new.datasource
        for i in range(len(old.tables)):
            id_map[old.table_id(i).lower()] = new.table_id(i)
        for k in range(len(old.columns)):
            old_c, new_c = old.column_id(k), new.column_id(k)
            if old_c is not None and new_c is not None:
                id_map[old_c.lower()] = new_c
    new_questions = []
    for i, q in enumerate(questions):
        where = f"question {i} ('{str(q.get('question', ''))[:60]}')"
        db_id = db_map.get(str(q.get("db_id", "")).lower())
        if db_id is None:
            raise ConfigError(f"{where}: db_id '{q.get('db_id')}' is not in the catalog")
        mapped = dict(q)
        mapped["db_id"] = db_id
        for key in ("gold_tables", "gold_columns"):
            ids = []
            for gold in q.get(key) or []:
                new_id = id_map.get(gold.lower())
                if new_id is None:
                    raise ConfigError(f"{where}: {key} id '{gold}' is not in the catalog")
                ids.append(new_id)
            mapped[key] = ids
        new_questions.append(mapped)
    return new_dbs, new_questions


def write_abbreviated(
    catalog: str | Path,
    questions: str | Path | None,
    out_catalog: str | Path,
    out_questions: str | Path | None,
    style: str = "skeleton",
) -> tuple[int, int]:
    """Read a Spider ``tables.json`` (and questions: a Spider ``dev.json`` or JSONL),
    write their abbreviated copies; returns (databases, questions) written."""
    from layersearch.eval.schema_linking import read_questions

    tables = read_spider_tables(catalog)
    records = read_questions(questions, catalog) if questions is not None else []
    if records and out_questions is None:
        raise ConfigError("--questions given without --out-questions")
    dbs, mapped = abbreviate_spider(tables, records, style)
    try:
        Path(out_catalog).write_text(json.dumps(dbs, ensure_ascii=False), encoding="utf-8")
        if out_questions is not None and questions is not None:
            with Path(out_questions).open("w", encoding="utf-8") as fh:
                for r in mapped:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write the abbreviated copy: {exc}") from exc
    return len(dbs), len(mapped)
