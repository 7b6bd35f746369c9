"""Writers of every kind beside searching threads on one ``Layersearch``: the workload of
the concurrency tests (``test_concurrent_writes.py``), and the checks that every write
that returned is in the store when it is opened again.

Each writer is one function ``(ls, ledger, n)`` doing one write through the public API
and recording it in the :class:`Ledger` only after the call returned. A write that
raises is a failure: none is allowed, whatever the searches do meanwhile.

Run by hand: ``PYTHONPATH=src:. python tests/reliability/mixed_writes.py STORE SECONDS``
(prints the ledger's counts as JSON).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch import Layersearch

MINI = Path(__file__).resolve().parents[2] / "fixtures" / "mini"
VAULT = Path(__file__).resolve().parents[2] / "fixtures" / "vault"
SEARCHERS = 3
#: seconds each writer rests between two writes. Every write of another corpus (or a
#: load) makes the entity search take its snapshot again (seconds on a busy machine, and
#: searches and memory writes wait for it): those writers rest longer, or the threads
#: that search and save memories would do little else than wait for reloads.
PAUSE = {"save_memory": 0.05, "forget": 0.05}
OTHER_PAUSE = 0.5


def word(kind: str, n: int) -> str:
    """A word no other write uses and the analyzer keeps whole (letters only)."""
    letters = ""
    while True:
        letters += "abcdefghijklmnopqrstuvwxyz"[n % 26]
        n //= 26
        if not n:
            break
    return f"zq{kind}{letters}"


@dataclass
class Ledger:
    """What the writers confirmed, and what failed. ``files``: where writers put the
    files they import (chat exports, vault notes)."""

    files: Path = Path(".")
    memories: dict[str, str] = field(default_factory=dict)  # id → its word
    forgotten: set[str] = field(default_factory=set)
    conversations: dict[str, int] = field(default_factory=dict)  # id → messages
    notes: dict[str, str] = field(default_factory=dict)  # vault slug → its word
    writes: Counter[str] = field(default_factory=Counter)
    searches: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self) -> dict[str, Any]:
        return {
            "writes": dict(self.writes),
            "searches": dict(self.searches),
            "failures": len(self.failures),
            "first_failures": self.failures[:5],
        }


def save(ls: Layersearch, ledger: Ledger, n: int) -> None:
    w = word("save", n)
    m = ls.save_memory(f"mixed note {w}", entities=["shop.orders"])
    with ledger.lock:
        ledger.memories[m.id] = w


def forget(ls: Layersearch, ledger: Ledger, n: int) -> None:
    m = ls.save_memory(f"mixed gone {word('gone', n)}", entities=["shop.customers"])
    ls.forget_memory(m.id)
    with ledger.lock:
        ledger.forgotten.add(m.id)


def load(ls: Layersearch, ledger: Ledger, n: int) -> None:
    ls.load(MINI)


def conversation(ls: Layersearch, ledger: Ledger, n: int) -> None:
    native = f"mixed-{n}"
    count = 1 + n % 4
    path = ledger.files / "chats" / f"{native}.jsonl"
    path.parent.mkdir(exist_ok=True)
    lines = [
        {"conversation_id": native, "role": "user", "content": f"mixed msg {word('conv', n)} {i}"}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ls.conversations.import_path(path, "generic")
    with ledger.lock:
        ledger.conversations[f"generic:{native}"] = count


def vault(ls: Layersearch, ledger: Ledger, n: int) -> None:
    w = word("note", n)
    root = ledger.files / "vault"
    root.mkdir(exist_ok=True)
    (root / f"mixed-{n}.md").write_text(f"---\ntitle: {w}\n---\n# {w}\n\nabout {w} revenue\n")
    ls.vault.index(root)
    with ledger.lock:
        ledger.notes[f"mixed-{n}"] = w


def embed(ls: Layersearch, ledger: Ledger, n: int) -> None:
    ls.embed()


#: every kind of write, each run by a thread of its own
WRITERS: dict[str, Callable[[Layersearch, Ledger, int], None]] = {
    "save_memory": save,
    "forget": forget,
    "load": load,
    "conversation_import": conversation,
    "vault_index": vault,
    "embed": embed,
}

#: what the searching threads call in turn
SEARCHES: list[tuple[str, Callable[[Layersearch], Any]]] = [
    ("search", lambda ls: ls.search(question="mixed note revenue by customer")),
    ("scope_all", lambda ls: ls.search(question="revenue note", scope="all")),
    ("list_memories", lambda ls: ls.list_memories(limit=5)),
]


def run(
    ls: Layersearch, seconds: float, files: Path, searchers: int = SEARCHERS, least: int = 0
) -> Ledger:
    """``searchers`` threads searching and one thread per kind of write, for ``seconds``;
    the files the writers import are written under ``files``. ``least``: a writer goes
    on past ``seconds`` until it has made that many writes (a slow host still gives
    the count), for at most four times ``seconds`` (a starved writer shows then)."""
    ledger = Ledger(files=files)
    start = time.monotonic()
    until, cap = start + seconds, start + 4 * seconds
    writing_left = [len(WRITERS)]

    def searching(k: int) -> None:
        i = k
        while time.monotonic() < until or (writing_left[0] and time.monotonic() < cap):
            name, call = SEARCHES[i % len(SEARCHES)]
            try:
                call(ls)
                with ledger.lock:
                    ledger.searches[name] += 1
            except Exception as exc:  # noqa: BLE001 - counted; a search may not fail either
                with ledger.lock:
                    ledger.failures.append(
                        f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"[:3000]
                    )
            i += 1

    def writing(kind: str) -> None:
        n = 0
        while time.monotonic() < until or (ledger.writes[kind] < least and time.monotonic() < cap):
            try:
                WRITERS[kind](ls, ledger, n)
                with ledger.lock:
                    ledger.writes[kind] += 1
            except Exception as exc:  # noqa: BLE001 - counted, and the test fails on it
                with ledger.lock:
                    ledger.failures.append(
                        f"{kind}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"[:1500]
                    )
            n += 1
            time.sleep(PAUSE.get(kind, OTHER_PAUSE))
        with ledger.lock:
            writing_left[0] -= 1

    threads = [threading.Thread(target=searching, args=(k,)) for k in range(searchers)]
    threads += [threading.Thread(target=writing, args=(kind,)) for kind in WRITERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ledger


def check(store: str | Path, ledger: Ledger) -> None:
    """Every confirmed write is in the store opened anew; every forgotten memory is gone."""
    with Layersearch(store) as ls:
        memories = ls.corpus().memories
        for mid, w in ledger.memories.items():
            assert mid in memories, f"confirmed memory {mid} ({w}) is missing"
            assert memories[mid].learning == f"mixed note {w}"
        back = ledger.forgotten & set(memories)
        assert not back, f"forgotten memories are back: {sorted(back)[:5]}"
        turns = ls.conversations.snapshot().turns
        for cid, count in ledger.conversations.items():
            assert len(turns.get(cid, [])) == count, f"confirmed conversation {cid} is partial"
        for slug, w in ledger.notes.items():
            assert w in ls.vault.get_note(slug).body, f"confirmed note {slug} is missing"
        if ledger.memories:
            last = max(ledger.memories, key=lambda m: int(m.split(":")[1]))
            hits = ls.search(question=ledger.memories[last], channels=["fulltext"]).results
            assert hits and hits[0].id == last, f"{last} is not found by its word"


RACER = """
import sys, time
from layersearch import Layersearch
from layersearch.errors import LayersearchError
location, what, start, mini, vault = sys.argv[1:6]
ls = Layersearch(location, embedder="fake")
while time.time() < float(start):
    time.sleep(0.001)
try:
    if what == "load":
        ls.load(mini)
    elif what == "embed":
        ls.embed()
    else:
        ls.vault.index(vault)
    print("ok")
except LayersearchError as exc:
    print(f"failed: {type(exc).__name__}: {exc}")
"""


def race(location: str, env: dict[str, str], racers: int = 3) -> list[str]:
    """``load``, then ``embed``, then ``vault index``, each started at the same moment in
    ``racers`` processes on one store; the outcome line of each ("load: ok", …)."""
    with Layersearch(location) as ls:
        ls.load(MINI)
    outcomes = []
    for what in ("load", "embed", "vault"):
        start = str(time.time() + 3.0)  # every racer has opened the store by then
        args = [location, what, start, str(MINI), str(VAULT)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, *args], env=env, stdout=subprocess.PIPE, text=True
            )
            for _ in range(racers)
        ]
        outcomes += [f"{what}: {p.communicate(timeout=300)[0].strip()}" for p in procs]
    return outcomes


def main(store: str, seconds: float) -> None:
    with Layersearch(store, embedder="fake") as ls:
        ls.load(MINI)
        ledger = run(ls, seconds, Path(store).parent)
    check(store, ledger)
    print(json.dumps(ledger.summary(), indent=2))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
