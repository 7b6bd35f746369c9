"""Full text decodes only the hits that can make the cut, and remembers ids per searcher.

Neither may change a ranking: the top ``k`` are those of all matches sorted by
(score, id) whenever the ties at the cut fit the over-fetch, across segments
(several commits), and a write never leaves a stale id behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from layersearch.ranking.fulltext import FTDoc, FullTextIndex

BOOSTS = {"name": 3.0, "description": 1.0}


def _docs(start: int, n: int) -> list[FTDoc]:
    out = []
    for i in range(start, start + n):
        # three score levels: many documents share each one, so the cut falls inside a tie
        name = ("order amount", "order", "amount status")[i % 3]
        desc = "order" if i % 5 == 0 else "other words"
        out.append(
            FTDoc(
                id=f"d{(i * 7919) % 1000:03d}-{i}",
                kind="column",
                fields={"name": name, "description": desc},
            )
        )
    return out


def _everything(ft: FullTextIndex, text: str) -> list[tuple[str, float]]:
    return ft.search(text, 1000)


@pytest.mark.parametrize("k", [1, 5, 17, 40])
def test_cut_matches_full_sort(tmp_path: Path, k: int) -> None:
    ft = FullTextIndex.create(BOOSTS, tmp_path / "ft")
    for batch in range(4):  # several segments
        ft.write(add=_docs(batch * 60, 60), stamp=str(batch))
    for text in ("order", "order amount", "amount status", "status"):
        full = _everything(ft, text)
        assert full == sorted(full, key=lambda h: (-h[1], h[0]))
        got = ft.search(text, k)
        cut = full[k - 1][1]
        if sum(score >= cut for _, score in full) <= k + max(10, k // 2):
            assert got == full[:k], text
        else:  # more ties than the over-fetch: the right scores, ids from the tie
            assert [s for _, s in got] == [s for _, s in full[:k]], text
            assert set(got) <= set(full), text
            assert got == sorted(got, key=lambda h: (-h[1], h[0])), text


def test_ids_follow_writes(tmp_path: Path) -> None:
    ft = FullTextIndex.create(BOOSTS, tmp_path / "ft")
    ft.write(add=_docs(0, 30), stamp="1")
    before = ft.search("order", 10)
    gone = before[0][0]
    ft.write(
        delete=[gone], add=[FTDoc(id="new", kind="column", fields={"name": "order"})], stamp="2"
    )
    after = ft.search("order", 10)
    full = _everything(ft, "order")
    ids = {i for i, _ in full}
    assert gone not in ids and "new" in ids
    assert after == full[:10]
    assert before != after


def test_ids_read_by_hash_rank_like_stored_ids(tmp_path: Path) -> None:
    """A caller's table of ids by :func:`key_hash` stands in for the stored ids: the hits it
    knows come from it, the others (None) from the documents, and the ranking is the same."""
    from layersearch.ranking.fulltext import key_hash

    ft = FullTextIndex.create(BOOSTS, tmp_path / "ft")
    docs = _docs(0, 300)
    ft.write(add=docs[:150], stamp="a")
    ft.write(add=docs[150:], stamp="b")  # two segments
    table = {key_hash(d.id): d.id for d in docs[::2]}  # the caller knows half of them
    asked: list[int | None] = []

    def resolve(hashes: list[int | None]) -> list[str | None]:
        asked.extend(hashes)
        return [None if h is None else table.get(h) for h in hashes]

    for k in (1, 10, 60):
        for text in ("order", "amount status", "order other"):
            assert ft.search(text, k, resolve=resolve) == ft.search(text, k)
    assert asked and all(isinstance(h, int) and h >= 0 for h in asked)
    assert any(h in table for h in asked) and any(h not in table for h in asked)
    assert key_hash("shop.orders") == key_hash("shop.orders") != key_hash("shop.order")
