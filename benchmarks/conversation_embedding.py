"""What message search's second vector per turn (``turn_vector``) costs at embed time.

    PYTHONPATH=src python benchmarks/conversation_embedding.py [--locomo DIR] [--embedder local]
        [--out FILE]

Imports the LoCoMo conversations of ``--locomo`` (default /work/shared/data/locomo) into
a fresh store, then times ``conversations embed`` with ``turn_vector`` off (the turns
with context: the ``messages`` corpus) and again with it on, which embeds only the
``message-turns`` corpus (the first is unchanged); prints both with their ratio. The
model is loaded (one text embedded) before either is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from layersearch.corpora.conversations.locomo import import_locomo
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed import make_embedder
from layersearch.store.duckdb import DuckDBStore


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", default="/work/shared/data/locomo")
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    embedder = make_embedder(args.embedder)
    embedder.embed_documents(["load the model before the clock starts"])
    imported = import_locomo(args.locomo)
    with tempfile.TemporaryDirectory() as tmp:
        store = DuckDBStore(Path(tmp) / "locomo.duckdb")
        dense: dict[str, DenseCorpus] = {}

        def getter(corpus: str) -> DenseCorpus:
            return dense.setdefault(corpus, DenseCorpus(store, corpus, embedder))

        off = MessageSearchConfig(turn_vector=False)
        svc = ConversationService(store, getter, config=off)
        svc.import_conversations(imported.conversations)
        svc.snapshot()
        result: dict[str, object] = {"embedder": embedder.fingerprint.describe()}
        for name, config in (("off", off), ("on", replace(off, turn_vector=True))):
            svc.config = config
            t = time.perf_counter()
            reports = svc.embed()
            result[f"embed_s turn_vector={name}"] = round(time.perf_counter() - t, 2)
            result[f"embedded turn_vector={name}"] = {r.corpus: r.embedded for r in reports}
        first, second = result["embed_s turn_vector=off"], result["embed_s turn_vector=on"]
        assert isinstance(first, float) and isinstance(second, float)
        result["total with turn vectors / without"] = round((first + second) / first, 2)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
