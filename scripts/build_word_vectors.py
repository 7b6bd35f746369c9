"""Write the word vectors layersearch ships for lexical search's word readings.

    python scripts/build_word_vectors.py src/layersearch/ranking/wordvec [--dims 96]

Needs the ``[local]`` extra (the bundled all-MiniLM-L6-v2 on ONNX Runtime). The
vocabulary is every lower-case alphabetic whole word of 3 letters or more in
MiniLM's own tokenizer vocabulary (the words it knows as one piece, inflected forms
included) and every single-word noun lemma of the WordNet files the package ships
(``ranking/wordnet``: the rarer words MiniLM splits, such as *forename* or
*habitation*), sorted. Each word is embedded alone, as the vector channel embeds a
stored word (``embed_documents``); the unit vectors are centred and projected on
their first ``--dims`` principal components (numpy's SVD of the centred matrix, the
sign of each component fixed so that its largest loading is positive), each row is
scaled to the int8 range by its largest absolute value and rounded. Cosines between
the reduced rows stand in for the model's (the readings only rank a word's nearest
catalog words).

Output (deterministic for the same model and inputs):

- ``words.txt.gz``: the words, one a line, each with its analysed term (the
  analyzer's stem, which lexical search looks a word up by) when it has one (gzip
  with no name or timestamp); rerun the script when the analyzer changes (a test
  checks the terms);
- ``vectors.npy``: the int8 rows, ``dims`` values each, in the words' order.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1] / "src" / "layersearch"


def vocabulary() -> list[str]:
    """MiniLM's whole words and WordNet's single-word nouns (see the module doc)."""
    tok = json.loads((ROOT / "embed" / "minilm" / "tokenizer.json").read_text("utf-8"))
    words = {
        w
        for w in tok["model"]["vocab"]
        if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3
    }
    with gzip.open(ROOT / "ranking" / "wordnet" / "index.noun.gz", "rt", encoding="latin-1") as f:
        for line in f:
            if line.startswith(" "):
                continue
            lemma = line.split(" ", 1)[0]
            if lemma.isascii() and lemma.isalpha() and len(lemma) >= 3:
                words.add(lemma.lower())
    return sorted(words)


def reduce(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The rows projected on their first ``dims`` principal components, signs fixed."""
    centred = vectors - vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:dims]
    flip = np.sign(comps[np.arange(len(comps)), np.abs(comps).argmax(axis=1)])
    return centred @ (comps * flip[:, None]).T


def quantise(rows: np.ndarray) -> np.ndarray:
    """Each row scaled to [-127, 127] by its largest absolute value, rounded."""
    peak = np.abs(rows).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.rint(rows / peak * 127).astype(np.int8)


def _line(word: str) -> str:
    """A word and its analysed term (the key it is looked up by), or the word alone."""
    from layersearch.ranking.neighbours import word_key

    key = word_key(word)
    return f"{word} {key}\n" if key is not None else f"{word}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the directory to write")
    parser.add_argument("--dims", type=int, default=96, help="principal components kept")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT.parent))
    from layersearch.embed import make_embedder

    words = vocabulary()
    embedder = make_embedder("local")
    batches = []
    for start in range(0, len(words), 1024):
        batches.append(np.asarray(embedder.embed_documents(words[start : start + 1024])))
        print(f"embedded {start + len(batches[-1])} / {len(words)}", file=sys.stderr)
    vectors = np.vstack(batches).astype(np.float64)
    rows = (
        quantise(reduce(vectors, args.dims)) if args.dims < vectors.shape[1] else quantise(vectors)
    )
    args.out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write("".join(_line(w) for w in words).encode("utf-8"))
    (args.out / "words.txt.gz").write_bytes(buf.getvalue())
    np.save(args.out / "vectors.npy", rows, allow_pickle=False)
    print(f"{len(words)} words, {rows.shape[1]} dims -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
