"""The WordNet lexicon's memory and load time, and the Spider catalog's bridges, for two
source trees (before and after a change), each measurement in a fresh process:

    python benchmarks/lexicon.py compare OLD/src src [WORKDIR]   (OLD: a checkout of the code to compare with)

- load: ``wordnet()`` with the cache cold (parsed from the files, then pickled) and
  warm (the pickle), its wall time and RSS delta; then the same under tracemalloc
  (memory held after the load and the peak during it, MiB);
- bridges: ``synonym_bridges`` over the Spider catalog's terms (as the schema index
  builds them; best of 3) and the index build; its output, ``is_word`` on every catalog
  term and identifier part, and the index's bridge arrays are written to JSON, and
  ``bridges_identical`` says whether the two trees wrote the same bytes;
- plain-vs-compact (the second tree): ``synonym_bridges`` in one process, alternating
  the plain parse and the compact lexicon, 15 rounds (timings across processes are
  noisy on a shared host).
"""

import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path


def rss() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load(mode: str, cache: str) -> None:
    os.environ["XDG_CACHE_HOME"] = cache
    from layersearch.ranking import analyzer, lexicon  # noqa: F401  (imports not counted)

    analyzer.stem("warm")
    if mode == "cold":
        import shutil

        shutil.rmtree(cache, ignore_errors=True)
    gc.collect()
    r0 = rss()
    trace = os.environ.get("TRACE") == "1"
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    wn = lexicon.wordnet()
    dt = time.perf_counter() - t0
    gc.collect()
    out = {"mode": mode, "load_s": round(dt, 3), "rss_delta_mib": round(rss() - r0, 1)}
    if trace:
        cur, peak = tracemalloc.get_traced_memory()
        out.update(traced_now_mib=round(cur / 2**20, 1), traced_peak_mib=round(peak / 2**20, 1))
        out.pop("load_s")  # tracing slows the load
    assert wn is not None
    print(json.dumps(out))


def bridges(path: str) -> None:
    from layersearch.corpora.entities.coverage import coverage_of
    from layersearch.ranking import bridges as br
    from layersearch.ranking.analyzer import split_identifier
    from layersearch.ranking.lexicon import wordnet
    from layersearch.semantic.importers.spider import load_spider

    cat = load_spider("/work/shared/data/spider/tables.json")
    ents = {e.id: e for e in cat.entities()}
    wn = wordnet()
    t0 = time.perf_counter()
    idx = coverage_of(ents, [])
    t_index = time.perf_counter() - t0
    terms = {t: j for t, j in idx.vocab.items() if t.replace("_", "").isalpha()}
    best = []
    for _ in range(3):
        t0 = time.perf_counter()
        syn = br.synonym_bridges(terms)
        best.append(time.perf_counter() - t0)
    words = sorted(
        set(idx.vocab)
        | set(idx.abbr_parts)
        | {
            p
            for e in ents.values()
            for w in e.id.replace(".", " ").split()
            for p in split_identifier(w)
        }
    )
    doc = {
        "synonym_bridges": syn,
        "is_word": {w: wn.is_word(w) for w in words},
        "index": {
            "abbr_parts": idx.abbr_parts,
            "abbr_term": idx.abbr_term.tolist(),
            "abbr_word": idx.abbr_word.tolist(),
            "bridge_row": idx.bridge_row,
            "bridge_ptr": idx.bridge_ptr.tolist(),
            "bridge_term": idx.bridge_term.tolist(),
            "bridge_w": idx.bridge_w.tolist(),
        },
    }
    Path(path).write_text(json.dumps(doc, sort_keys=True))
    print(
        json.dumps(
            {
                "terms": len(terms),
                "words": len(words),
                "keys": len(syn),
                "synonym_bridges_s_best_of_3": round(min(best), 3),
                "coverage_index_build_s": round(t_index, 3),
            }
        )
    )


def plain_vs_compact(rounds: int = 15) -> None:
    """``synonym_bridges`` on the Spider catalog in one process, alternating the plain
    parse (dicts, lists of tuples) and the compact lexicon: best and median seconds."""
    import statistics
    import types

    from layersearch.corpora.entities.coverage import coverage_of
    from layersearch.ranking import bridges as br
    from layersearch.ranking import lexicon
    from layersearch.semantic.importers.spider import load_spider

    cat = load_spider("/work/shared/data/spider/tables.json")
    idx = coverage_of({e.id: e for e in cat.entities()}, [])
    terms = {t: j for t, j in idx.vocab.items() if t.replace("_", "").isalpha()}
    base = lexicon.wordnet_dir()
    assert base is not None
    p = lexicon._read(base)
    assert p is not None
    kinds = {
        "plain": types.SimpleNamespace(
            senses=p.senses, lemmas=p.lemmas, related=p.related, by_key=p.by_key
        ),
        "compact": lexicon.wordnet(),
    }
    times: dict[str, list[float]] = {k: [] for k in kinds}
    out = {}
    for _ in range(rounds):
        for name, wn in kinds.items():
            lexicon.wordnet = lambda wn=wn: wn  # what synonym_bridges reads
            t0 = time.perf_counter()
            out[name] = br.synonym_bridges(terms)
            times[name].append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "rounds": rounds,
                "best_s": {k: round(min(v), 3) for k, v in times.items()},
                "median_s": {k: round(statistics.median(v), 3) for k, v in times.items()},
                "same_bridges": out["plain"] == out["compact"],
            }
        )
    )


def compare(trees: list[str], work: Path) -> None:
    """Each measurement in a fresh process per source tree; the bridges compared."""
    here = str(Path(__file__).resolve())
    summary: dict = {}
    for name, tree in zip(
        ("before", "after"), [str(Path(t).resolve()) for t in trees], strict=True
    ):
        env = {**os.environ, "PYTHONPATH": tree}
        cache = str(work / f"cache-{name}")
        rows = []
        for mode, trace in (("cold", "0"), ("warm", "0"), ("cold", "1"), ("warm", "1")):
            run = [sys.executable, here, "load", mode, cache]
            out = subprocess.run(
                run, env={**env, "TRACE": trace}, capture_output=True, text=True, check=True
            )
            rows.append(json.loads(out.stdout))
        run = [sys.executable, here, "bridges", str(work / f"bridges-{name}.json")]
        out = subprocess.run(
            run, env={**env, "XDG_CACHE_HOME": cache}, capture_output=True, text=True, check=True
        )
        summary[name] = {"tree": tree, "load": rows, "bridges": json.loads(out.stdout)}
    same = (work / "bridges-before.json").read_bytes() == (work / "bridges-after.json").read_bytes()
    summary["bridges_identical"] = same
    run = [sys.executable, here, "plain-vs-compact"]
    env = {**os.environ, "PYTHONPATH": str(Path(trees[1]).resolve())}
    env["XDG_CACHE_HOME"] = str(work / "cache-after")
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    summary["after_plain_vs_compact"] = json.loads(out.stdout)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    if sys.argv[1] == "load":
        load(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "bridges":
        bridges(sys.argv[2])
    elif sys.argv[1] == "plain-vs-compact":
        plain_vs_compact()
    else:
        work = Path(sys.argv[4] if len(sys.argv) > 4 else "/tmp/lexicon-bench")
        work.mkdir(parents=True, exist_ok=True)
        compare([sys.argv[2], sys.argv[3]], work)
