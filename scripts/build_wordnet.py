"""Write the WordNet noun files layersearch ships, from a WordNet 3.0 ``dict`` directory.

    python scripts/build_wordnet.py /path/to/wordnet-3.0 src/layersearch/ranking/wordnet

The output is WordNet's own database format, pruned to what
:mod:`layersearch.ranking.lexicon` reads, and gzip-compressed (deterministically: no
timestamp or name in the gzip header):

- ``data.noun.gz``: each synset's offset, lexicographer file, type and lemmas, and only
  its hypernym / hyponym pointers (``@ @i ~ ~i``); glosses and other pointers dropped;
- ``index.noun.gz``: each lemma's synsets in sense order (pointer symbols dropped);
- ``noun.exc.gz``: irregular plurals, as they are;
- ``LICENSE``: the WordNet 3.0 licence, which asks that it appear on all copies.

Offsets stay the original ones, so a synset keeps its WordNet 3.0 identity.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

RELATED = frozenset({"@", "@i", "~", "~i"})


def _gz(path: Path, lines: list[str]) -> None:
    data = "".join(lines).encode("latin-1")
    with (
        path.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh,
    ):
        fh.write(data)


def prune_data(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.startswith(" "):
            continue  # the licence header: the licence is shipped as LICENSE
        head = line.split(" | ", 1)[0].split()
        n_words = int(head[3], 16)
        at = 4 + 2 * n_words
        n_ptr = int(head[at])
        kept = []
        for k in range(n_ptr):
            ptr = head[at + 1 + 4 * k : at + 5 + 4 * k]
            if ptr[0] in RELATED and ptr[2] == "n":
                kept.append(" ".join(ptr))
        out.append(" ".join([*head[:at], f"{len(kept):03d}", *kept]) + "\n")
    return out


def prune_index(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.startswith(" "):
            continue
        parts = line.split()
        lemma, pos, n_syn, n_ptr = parts[0], parts[1], int(parts[2]), int(parts[3])
        rest = parts[4 + n_ptr :]  # sense_cnt tagsense_cnt offsets...
        out.append(" ".join([lemma, pos, str(n_syn), "0", *rest]) + "\n")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = Path(argv[0]), Path(argv[1])
    dst.mkdir(parents=True, exist_ok=True)
    read = lambda name: (src / name).read_text(encoding="latin-1").splitlines(True)  # noqa: E731
    _gz(dst / "data.noun.gz", prune_data(read("data.noun")))
    _gz(dst / "index.noun.gz", prune_index(read("index.noun")))
    _gz(dst / "noun.exc.gz", read("noun.exc"))
    shutil.copyfile(src / "LICENSE", dst / "LICENSE")
    for f in sorted(dst.iterdir()):
        print(f"{f.name:16} {f.stat().st_size:>10,} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
