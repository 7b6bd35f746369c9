"""The schema encoder's training data (scripts/train_schema_encoder.py), without torch:
the split is by database, every catalog variant keeps the gold ids, batches hold no
positive twice."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support import ROOT, script

SPIDER = ROOT / "examples" / "spider" / "tables.json"


def _script() -> ModuleType:
    return script("train_schema_encoder")


@pytest.fixture(scope="module")
def train() -> ModuleType:
    return _script()


@pytest.fixture(scope="module")
def tables() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(SPIDER.read_text())
    return data


def _questions(tables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for db in tables:
        t = db["table_names_original"][0]
        col = next(c for ti, c in db["column_names_original"] if ti == 0)
        ds = db["db_id"]
        out.append(
            {
                "db_id": ds,
                "question": f"how many {t}",
                "original_question": f"count {t}",
                "gold_tables": [f"{ds}.{t}"],
                "gold_columns": [f"{ds}.{t}.{col}"],
            }
        )
    return out


def test_the_split_is_by_database_seeded_and_stacked() -> None:
    from layersearch.eval.splits import split_databases, stacked_split

    dbs = [f"db{i}" for i in range(40)] * 3
    tr, val = split_databases(dbs, 0, 0.2)
    assert len(val) == 8 and len(tr) == 32 and not set(tr) & set(val)
    assert (tr, val) == split_databases(list(reversed(dbs)), 0, 0.2)
    assert val != split_databases(dbs, 1, 0.2)[1]
    encoder, stack, validation = stacked_split(dbs, 0, 0.2, 0.25)
    assert validation == val and sorted(encoder + stack) == tr
    assert len(stack) == 8 and not set(encoder) & set(stack)


@pytest.mark.parametrize("variant", ["plain", "mixed", "warehouse"])
def test_every_variant_keeps_the_gold_ids(
    train: ModuleType, tables: list[dict[str, Any]], variant: str
) -> None:
    v = train.build_variant(variant, tables, _questions(tables))
    for q in v.questions:
        assert q["gold_tables"] and all(g in v.texts for g in q["gold_tables"])
        assert all(g in v.texts for g in q["gold_columns"])
        assert q["gold_tables"][0] in v.tables_of[q["db_id"]]


def test_triplets_pair_gold_texts_with_other_items_of_the_database(
    train: ModuleType, tables: list[dict[str, Any]]
) -> None:
    questions = _questions(tables)
    variants = {n: train.build_variant(n, tables, questions) for n in ("plain", "short")}
    triplets = train.training_triplets(variants, range(len(questions)), 0, 2)
    # two wordings a question, one table and one column each
    assert len(triplets) == 4 * len(questions)
    for query, pos, neg, pos_id in triplets:
        assert pos != neg and query
        assert pos == variants[pos_id.split(":")[0]].texts[pos_id.split(":", 1)[1]]
    assert triplets == train.training_triplets(variants, range(len(questions)), 0, 2)


def test_mining_keeps_the_top_non_gold_items_best_first(train: ModuleType) -> None:
    import numpy as np

    query = np.array([1.0, 0.0], dtype=np.float32)
    items = np.array([[0.2, 1.0], [0.9, 0.1], [1.0, 0.0], [0.5, 0.5], [0.9, 0.1]])
    ids = ["a", "b", "gold", "d", "e"]
    assert train.mine_hard_negatives(query, items, ids, {"gold"}, 2) == ["b", "e"]
    assert train.mine_hard_negatives(query, items, ids, {"gold"}, 9) == ["b", "e", "d", "a"]
    assert train.mine_hard_negatives(query, items, ids, set(ids), 3) == []


class _CountingEncoder:
    """Vectors from a fixed table; counts how many texts it was asked to embed."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table, self.calls = table, 0

    def __call__(self, texts: list[str]) -> Any:
        import numpy as np

        self.calls += len(texts)
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_the_miner_ranks_the_pool_and_embeds_each_text_once(train: ModuleType) -> None:
    texts = {"t.x": "x", "t.y": "y", "t.z": "z"}
    encode = _CountingEncoder({"q": [1, 0], "x": [0, 1], "y": [1, 0], "z": [0.7, 0.7]})
    miner = train.HardNegativeMiner(encode, 2)
    miner.prepare(["q", "x", "y", "z", "q"])
    assert encode.calls == 4
    assert miner("q", ["t.x", "t.y", "t.z"], texts, set()) == ["t.y", "t.z"]
    assert miner("q", ["t.x", "t.y", "t.z"], texts, {"t.y"}) == ["t.z", "t.x"]
    assert encode.calls == 4


def _train_val(tables: list[dict[str, Any]]) -> tuple[list[int], set[str]]:
    dbs = [db["db_id"] for db in tables]
    return list(range(len(dbs) - 1)), {dbs[-1]}


def test_mining_reads_training_databases_only(
    train: ModuleType, tables: list[dict[str, Any]]
) -> None:
    questions = _questions(tables)
    train_index, val_dbs = _train_val(tables)
    variants = {n: train.build_variant(n, tables, questions) for n in ("plain", "warehouse")}
    texts = set(train.mining_texts(variants, train_index))
    for v in variants.values():
        for ds in val_dbs:  # entity texts name their database, so none is shared
            assert not texts & {v.texts[x] for x in v.tables_of[ds] + v.columns_of[ds]}
        first = questions[0]["db_id"]
        assert {v.texts[x] for x in v.tables_of[first] + v.columns_of[first]} <= texts
    assert questions[0]["original_question"] in texts


def test_triplets_take_their_negative_from_the_miners_top(
    train: ModuleType, tables: list[dict[str, Any]]
) -> None:
    questions = _questions(tables)
    variants = {"plain": train.build_variant("plain", tables, questions)}
    v = variants["plain"]
    asked: list[tuple[str, list[str]]] = []

    def miner(query: str, pool: Any, texts: Any, exclude: Any) -> list[str]:
        asked.append((query, list(pool)))
        return sorted(pool)[:1]  # a stand-in ranking: the first id by name

    triplets = train.training_triplets(variants, range(len(questions)), 0, 2, miner)
    by_text = {text: x for x, text in v.texts.items()}
    for query, pos, neg, _pos_id in triplets:
        pos_x, neg_x = by_text[pos], by_text[neg]
        ds = pos_x.split(".")[0]
        pool = v.tables_of[ds] if pos_x in v.tables_of[ds] else v.columns_of[ds]
        q = next(q for q in v.questions if query in (q["question"], q["original_question"]))
        gold = set(q["gold_tables"]) | set(q["gold_columns"])
        others = [x for x in pool if x not in gold]
        if others:
            assert neg_x == sorted(others)[0]
    for _query, pool in asked:
        assert len({p.split(".")[0] for p in pool}) == 1  # its own database only


def test_no_batch_holds_a_positive_or_query_twice(train: ModuleType) -> None:
    triplets = [(f"q{i % 5}", f"p{i % 7}", "n", f"id{i % 7}") for i in range(70)]
    out = train.batches(triplets, 4)
    assert sorted(t for b in out for t in b) == sorted(triplets)
    for b in out:
        assert len({t[3] for t in b}) == len(b) and len({t[0] for t in b}) == len(b)


def test_recall_counts_gold_in_the_top_k(train: ModuleType, tables: list[dict[str, Any]]) -> None:
    import numpy as np

    v = train.build_variant("plain", tables, _questions(tables))
    gold = {q["gold_tables"][0] for q in v.questions}

    def encode(texts: list[str]) -> Any:
        # a perfect encoder for this toy set: a text's vector is its gold table's slot
        order = sorted(gold)
        out = np.zeros((len(texts), len(order) + 1), dtype=np.float32)
        for i, text in enumerate(texts):
            hit = [k for k, g in enumerate(order) if v.texts[g] == text]
            hit += [k for k, g in enumerate(order) if text == f"how many {g.split('.')[1]}"]
            out[i, hit[0] if hit else len(order)] = 1.0
        return out

    result = train.recall_at(encode, v, range(len(v.questions)), "question", {})
    assert result["table_recall@5"] == 1.0 and result["questions"] == len(v.questions)


def test_the_script_names_its_data_and_output(train: ModuleType) -> None:
    args = train.parse_args(["--out", "x", "--seed", "3"])
    assert args.out == Path("x") and args.seed == 3 and args.val_fraction == 0.2
    assert args.hard_negatives == 0 and args.init is None


def test_the_model_card_names_base_data_command_and_numbers(train) -> None:
    row = {"table_recall@5": 0.8, "column_recall@10": 0.7, "questions": 1222}
    metrics = {
        "args": {"seed": "0", "hard_negatives": "3", "val_fraction": "0.2"},
        "steps": 700,
        "base_int8_onnx": {"val/plain/question": {**row, "table_recall@5": 0.6346}},
        "trained_int8_onnx": {"val/plain/question": row, "spider_dev_check": row},
    }
    card = train.model_card(metrics, "python scripts/train_schema_encoder.py --seed 0")
    assert "all-MiniLM-L6-v2, Apache-2.0" in card and "CC BY-SA 4.0" in card
    assert "`python scripts/train_schema_encoder.py --seed 0`" in card
    assert (
        "| validation databases, Spider-Syn wording | 1222 | 0.635 / 0.700 | **0.800 / 0.700** |"
        in card
    )
    assert "| Spider dev (a check, never chosen on) | 1222 | — | **0.800 / 0.700** |" in card
    assert "700\n  steps" in card or "700 steps" in card.replace("\n  ", " ")
