"""Where a search's time goes, stage by stage.

    PYTHONPATH=src python benchmarks/stages.py [--corpus spider|synthetic:100000] \
        [--memories 10000] [--embedder none|local] [--questions 300] [--out FILE]

Builds (once, under ``--workdir``) the store ``ab.py`` builds for the same corpus, asks
``--questions`` questions after a warm-up, and times each stage of every search on the
calling thread by wrapping the functions that make it up: a stage's time is its own,
without the stages it calls (the wrapped functions nest). Work on other threads (full
text on its worker, the query embedding on the embedder's) shows as the wait for it in
the stage that joins it (``--clock cpu``: the calling thread's CPU time instead, which
leaves waits out and moves less with the host's other work). Each question is asked once (no cache holds its vector); the
wrappers cost about a microsecond a call, included. Prints a table (mean ms per search and share of the total) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ab import build_store  # noqa: E402


class StageTimer:
    """Own (exclusive) wall time per stage on one thread, by wrapping functions."""

    def __init__(self, thread: threading.Thread, clock: Callable[[], float]) -> None:
        self.thread = thread
        self.clock = clock
        self.own: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list[float]] = []  # per open stage: [start, time in children]
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
        func = original.__func__ if isinstance(original, staticmethod) else original

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not self.thread:
                return func(*args, **kwargs)
            frame = [self.clock(), 0.0]
            self._stack.append(frame)
            try:
                return func(*args, **kwargs)
            finally:
                spent = self.clock() - frame[0]
                self._stack.pop()
                if self._stack:
                    self._stack[-1][1] += spent
                self.own[label] = self.own.get(label, 0.0) + spent - frame[1]
                self.calls[label] = self.calls.get(label, 0) + 1

        setattr(owner, attr, staticmethod(timed) if isinstance(original, staticmethod) else timed)
        self._undo.append(lambda: setattr(owner, attr, original))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def _time_declared_stages(timer: StageTimer) -> None:
    """Each declared stage of the entity search (``stages.ENTITY_PIPELINE``) as a stage
    of its own: the search runs a copy whose stages call wrapped entry points."""
    import types

    import layersearch.corpora.entities.search as search_mod
    from layersearch.ranking.pipeline import Pipeline, Stage

    declared = search_mod.ENTITY_PIPELINE
    runs = types.SimpleNamespace(**{s.name: s.run for s in declared.stages})

    def call(name: str) -> Callable[[Any], None]:
        return lambda state: getattr(runs, name)(state)

    copy = Pipeline(
        declared.corpus,
        tuple(Stage(s.name, s.doc, call(s.name), s.switchable) for s in declared.stages),
    )
    search_mod.ENTITY_PIPELINE = copy
    timer._undo.append(lambda: setattr(search_mod, "ENTITY_PIPELINE", declared))
    for s in declared.stages:
        timer.wrap(runs, s.name, f"stage {s.name}")


def instrument(timer: StageTimer) -> None:
    import layersearch.corpora.entities.channels as channels_mod
    import layersearch.corpora.entities.stages as stages_mod
    from layersearch.corpora.dense import DenseCorpus
    from layersearch.corpora.entities.neighbours import QuestionWords
    from layersearch.corpora.entities.search import CorpusSearch
    from layersearch.corpora.entities.service import EntityService
    from layersearch.corpora.entities.vector import VectorSearch
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.fulltext import FullTextIndex
    from layersearch.ranking.static_words import StaticWords
    from layersearch.semantic.canonical import Resolver

    stages: list[tuple[Any, str, str]] = [
        (EntityService, "search", "request: checks, the snapshot's generation"),
        (EntityService, "corpus", "request: checks, the snapshot's generation"),
        (VectorSearch, "channel", "dense: start the query embedding"),
        (VectorSearch, "words", "dense: words reader"),
        (Resolver, "resolve", "resolve named entities"),
        (channels_mod, "_fulltext_searches", "full text: submit its searches"),
        (FullTextIndex, "search", "full text (on this thread below 250k documents)"),
        (QuestionWords, "_bridges", "word readings (embedder)"),
        (StaticWords, "bridges", "word readings (shipped vectors)"),
        (DenseCorpus, "document_vectors", "word readings: embed new words"),
        (CoverageIndex, "search_levels", "schema channel"),
        (Future, "result", "wait for another thread"),
        (DenseCorpus, "query_vector", "vector channel: the query's vector"),
        (stages_mod, "merge_kinds", "merge entities and memories"),
        (CorpusSearch, "_hits", "hits: render"),
        (CorpusSearch, "search", "other (question shares, response)"),
    ]
    for owner, attr, label in stages:
        if isinstance(owner, type) and attr not in owner.__dict__:
            continue
        timer.wrap(owner, attr, label)
    _time_declared_stages(timer)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="spider")
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/layersearch-ab"))
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: the calling thread's CPU time (waits and other threads' work left out).",
    )
    ap.add_argument(
        "--random-vectors",
        action="store_true",
        help="Random stored vectors (timing only: no hour of embedding at 100k).",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    store, questions = build_store(
        args.corpus, args.memories, args.embedder, args.workdir, random_vectors=args.random_vectors
    )
    from layersearch import Layersearch

    ls = Layersearch(store, embedder=args.embedder, create=False)
    ls.warm()
    for q in questions[: args.warmup]:
        ls.search(question=q)
    asked = questions[args.warmup : args.warmup + args.questions]
    timer = StageTimer(threading.current_thread(), clock)
    instrument(timer)
    timed: list[float] = []
    for q in asked:
        t0 = clock()
        ls.search(question=q)
        timed.append(clock() - t0)
    timer.restore()
    ls.close()
    n = len(asked)
    total = sum(timed)
    rows = sorted(timer.own.items(), key=lambda kv: -kv[1])
    out: dict[str, Any] = {
        "corpus": args.corpus,
        "memories": args.memories if args.corpus != "spider" else 0,
        "embedder": args.embedder,
        "clock": args.clock,
        "random_vectors": args.random_vectors,
        "questions": n,
        "search_p50_ms": statistics.median(timed) * 1000,
        "timed_mean_ms": total / n * 1000,
        "stages_ms": {label: own / n * 1000 for label, own in rows},
        "load_average_1m": os.getloadavg()[0],
    }
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(
        f"{args.corpus} ({out['memories']} memories), embedder {args.embedder}, "
        f"{args.clock} clock: search p50 {out['search_p50_ms']:.2f} ms, "
        f"mean {out['timed_mean_ms']:.2f} ms"
    )
    print(f"{'stage':<48} {'ms':>6} {'share':>6}")
    for label, own in rows:
        print(f"{label:<48} {own / n * 1000:>6.3f} {own / total:>6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
