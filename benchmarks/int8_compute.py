"""The local model with int8 arithmetic: how much faster, how far its vectors move.

    PYTHONPATH=src python benchmarks/int8_compute.py [--out-model DIR] [--questions 200]
        [--documents 2048] [--warehouse-scale 0.01] [--out FILE]

The bundled all-MiniLM-L6-v2 stores int8 weights that ONNX Runtime turns into float32
when it builds the session (``Cast`` and ``Mul`` folded into constants), so every
query and document runs float32 matrix products: one question costs about as much
CPU as reading all 42 MB of those weights (the model's fixed cost), and a batch of
documents runs at the float32 peak of a core. This script makes the same model with
int8 arithmetic (``onnxruntime.quantization.quantize_dynamic``, per-channel int8
weights, activations quantised per run: ``MatMulInteger``), writes it as a model
directory that ``--embedder local:DIR`` runs, and compares the two in one run:
query embedding CPU per Spider dev question (batch of one), document embedding CPU
per document (warehouse column texts, ``warehouse.py``, batches of 64 sorted by
length, as ``layersearch embed`` runs them) and the cosine between the two models'
vectors of the same texts. Needs ``onnx`` (the ``[train]`` extra) to write the model.
With ``--warehouse-scale S`` (0: skip) the warehouse catalog at that scale is loaded
and embedded by each model, and its questions (which have no gold answers) asked of
both: how many of the bundled model's first 10 results the int8 one also returns,
and how often their first result is the same.

Rank quality is measured by ``eval schema-linking`` with each model (see
docs/performance.md). Prints a table and writes JSON
(default ``benchmarks/results/int8_compute.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

RESULTS = HERE / "results" / "int8_compute.json"
SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))


def make_model(out: Path) -> Path:
    """``out`` as a ``local:`` model directory holding the int8-arithmetic model."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from layersearch.embed.local import _DEFAULT_MAX_TOKENS, _DEFAULT_TOKENIZER, default_model_path

    out.mkdir(parents=True, exist_ok=True)
    folded = out / "float32.onnx"
    # ONNX Runtime's basic graph rewrites fold the stored int8 weights into float32
    # constants: the model every session of the bundled one runs, written out.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(default_model_path()), options, providers=["CPUExecutionProvider"])
    quantize_dynamic(folded, out / "model.onnx", per_channel=True, weight_type=QuantType.QInt8)
    folded.unlink()
    shutil.copy(_DEFAULT_TOKENIZER, out / "tokenizer.json")
    (out / "1_Pooling").mkdir(exist_ok=True)
    (out / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False})
    )
    (out / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": _DEFAULT_MAX_TOKENS})
    )
    return out


def column_texts(n: int) -> list[str]:
    """``n`` column documents of the warehouse catalog, sorted by length."""
    from warehouse import generate_warehouse

    from layersearch.corpora.dense import entity_docs

    docs = entity_docs(generate_warehouse(scale=0.02).entities())
    picked = random.Random(0).sample([d.text for d in docs], min(n, len(docs)))
    return sorted(picked, key=len)


def warehouse_agreement(scale: float, model_dir: Path, questions: int) -> dict[str, Any]:
    """The warehouse at ``scale`` searched with each model: top-10 overlap, same first."""
    import tempfile

    from warehouse import generate_warehouse, warehouse_questions

    from layersearch import Layersearch

    catalog = generate_warehouse(scale=scale)
    asked = warehouse_questions(questions)
    ranked: dict[str, list[list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="ls-int8-") as tmp:
        for name, embedder in (("bundled", "local"), ("int8", f"local:{model_dir}")):
            with Layersearch(Path(tmp) / name / "store.duckdb", embedder=embedder) as ls:
                ls.load_catalog(catalog)
                ls.embed()
                ranked[name] = [[h.id for h in ls.search(question=q).results] for q in asked]
    overlap = [
        len(set(a) & set(b)) / max(1, len(a))
        for a, b in zip(ranked["bundled"], ranked["int8"], strict=True)
    ]
    same_first = [
        bool(a and b and a[0] == b[0])
        for a, b in zip(ranked["bundled"], ranked["int8"], strict=True)
    ]
    return {
        "scale": scale,
        "questions": len(asked),
        "top10_overlap_mean": statistics.mean(overlap),
        "same_first_share": sum(same_first) / len(same_first),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-model", type=Path, default=Path("/tmp/layersearch-int8"))
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--documents", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warehouse-scale", type=float, default=0.01)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    from layersearch.embed.local import LocalEmbedder

    model_dir = make_model(args.out_model)
    models = {"bundled": LocalEmbedder(), "int8": LocalEmbedder(str(model_dir))}
    for m in models.values():
        m.load()
    questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())]
    questions = questions[: args.questions]
    texts = column_texts(args.documents)
    query_ms: dict[str, list[float]] = {n: [] for n in models}
    doc_ms: dict[str, list[float]] = {n: [] for n in models}
    vectors: dict[str, list[np.ndarray]] = {n: [] for n in models}
    for r in range(args.rounds):
        names = list(models) if r % 2 == 0 else list(models)[::-1]
        for name in names:
            m = models[name]
            c0 = time.thread_time()
            got = [m.embed_query(q) for q in questions]
            query_ms[name].append((time.thread_time() - c0) / len(questions) * 1000)
            c0 = time.thread_time()
            docs = [m.embed_documents(texts[i : i + 64]) for i in range(0, len(texts), 64)]
            doc_ms[name].append((time.thread_time() - c0) / len(texts) * 1000)
            if r == 0:
                vectors[name] = [np.stack(got), np.vstack(docs)]
    cosines = [np.sum(vectors["bundled"][i] * vectors["int8"][i], axis=1) for i in range(2)]
    out: dict[str, Any] = {
        "model_dir": str(model_dir),
        "questions": len(questions),
        "documents": len(texts),
        "query_cpu_ms": {n: statistics.median(v) for n, v in query_ms.items()},
        "document_cpu_ms": {n: statistics.median(v) for n, v in doc_ms.items()},
        "cosine_to_bundled": {
            "queries_mean": float(cosines[0].mean()),
            "queries_min": float(cosines[0].min()),
            "documents_mean": float(cosines[1].mean()),
            "documents_min": float(cosines[1].min()),
        },
        "load_average_1m": os.getloadavg()[0],
    }
    if args.warehouse_scale > 0:
        out["warehouse"] = warehouse_agreement(args.warehouse_scale, model_dir, 100)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    q, d, c = out["query_cpu_ms"], out["document_cpu_ms"], out["cosine_to_bundled"]
    print(f"{'model':<8} {'query ms':>9} {'document ms':>12}  (CPU, median of {args.rounds})")
    for name in models:
        print(f"{name:<8} {q[name]:>9.2f} {d[name]:>12.3f}")
    print(
        f"int8 / bundled: query {q['int8'] / q['bundled']:.2f}, document "
        f"{d['int8'] / d['bundled']:.2f}; cosine to the bundled vectors: queries mean "
        f"{c['queries_mean']:.4f} (min {c['queries_min']:.4f}), documents mean "
        f"{c['documents_mean']:.4f} (min {c['documents_min']:.4f}); "
        f"load {out['load_average_1m']:.1f}; model in {model_dir}"
    )
    if w := out.get("warehouse"):
        print(
            f"warehouse at scale {w['scale']}, {w['questions']} questions: the int8 model "
            f"returns {w['top10_overlap_mean']:.1%} of the bundled model's first 10 results, "
            f"the same first result for {w['same_first_share']:.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
