"""A worker that writes to a store until it is killed, reporting each write once it returned.

Each operation in ``OPERATIONS`` does one write through the public API and returns a
label; the worker reports ``committed <operation> <label>`` only after the call
returned. The crash test SIGKILLs it at random moments and then checks the store
against what was reported. A new kind of write joins by adding an operation here and
a check in ``test_crash.py``.

Run by hand: ``PYTHONPATH=src python tests/reliability/crash_worker.py STORE SEED``
(prints the report lines on stdout).
"""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layersearch import Layersearch

MINI = Path(__file__).resolve().parents[2] / "fixtures" / "mini"


def token(seed: int, n: int) -> str:
    """A word that no other write uses and the analyzer keeps whole (letters only)."""
    letters = string.ascii_lowercase
    out = ""
    for value in (seed, n):
        while True:
            out += letters[value % 26]
            value //= 26
            if not value:
                break
        out += "q"
    return "zx" + out


def save_memory(ls: Layersearch, rnd: random.Random, seed: int, n: int) -> str:
    word = token(seed, n)
    m = ls.save_memory(f"crash note {word}", entities=["shop.orders"])
    return f"{m.id} {word}"


def load_models(ls: Layersearch, rnd: random.Random, seed: int, n: int) -> str:
    report = ls.load(MINI)
    return f"{report.entities}"


def import_conversation(ls: Layersearch, rnd: random.Random, seed: int, n: int) -> str:
    """A generic-JSONL export of one new conversation with 1–6 messages, each saying how
    many the conversation has, so a half-imported one shows."""
    word = token(seed, n)
    count = rnd.randint(1, 6)
    native = f"crash-{seed}-{n}"
    path = Path(ls.store.location).parent / f"{native}.jsonl"
    lines = [
        {"conversation_id": native, "role": "user", "content": f"crash msg {word} {i} of {count}"}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ls.conversations.import_path(path, "generic")
    return f"generic:{native} {count} {word}"


def vault_dir(store: str) -> Path:
    return Path(store).parent / "vault"


def index_vault(ls: Layersearch, rnd: random.Random, seed: int, n: int) -> str:
    """Add a note to the vault folder and index it (no embedder: the check adds vectors)."""
    word = token(seed, n)
    slug = f"crash-{seed}-{n}"
    root = vault_dir(ls.store.location)
    root.mkdir(exist_ok=True)
    sections = "".join(f"\n## Part {i}\n\nsection {i} of {word}\n" for i in range(3))
    (root / f"{slug}.md").write_text(f"---\ntitle: {word}\n---\n# {word}\n{sections}")
    ls.vault.index(root)
    return f"{slug} {word}"


#: operation name → (weight, function); the weights favour cheap operations so that
#: kills land in every phase of each.
OPERATIONS: dict[str, tuple[int, Callable[[Layersearch, random.Random, int, int], str]]] = {
    "memory": (6, save_memory),
    "load": (1, load_models),
    "conversation": (2, import_conversation),
    "vault": (1, index_vault),
}


def work(store: str, seed: int, report: Callable[[str], Any]) -> None:
    rnd = random.Random(seed)
    names = list(OPERATIONS)
    weights = [OPERATIONS[n][0] for n in names]
    ls = Layersearch(store)
    ls.corpus()  # opening may rebuild the full-text index after an earlier kill
    report("ready")
    n = 0
    while True:
        # The first write cycles through the operations by seed: kills come early, and the
        # rarer operations would otherwise seldom be the one a kill interrupts.
        name = names[seed % len(names)] if n == 0 else rnd.choices(names, weights)[0]
        label = OPERATIONS[name][1](ls, rnd, seed, n)
        report(f"committed {name} {label}")
        n += 1


def work_to_pipe(store: str, seed: int, conn: Any) -> None:
    work(store, seed, lambda line: conn.send_bytes(line.encode()))


if __name__ == "__main__":
    work(sys.argv[1], int(sys.argv[2]), lambda line: print(line, flush=True))
