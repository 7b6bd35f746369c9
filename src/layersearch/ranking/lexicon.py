"""An English lexicon for vocabulary bridges: WordNet, read from a local copy.

Nothing is downloaded. The data is Princeton WordNet 3.0 in its own database
format (``index.noun``, ``data.noun``, ``noun.exc``, each plain or gzipped), read
from, in order:

1. the directory named by ``$LAYERSEARCH_WORDNET`` (any WordNet 3.x ``dict``
   directory; an empty value turns the lexicon off);
2. the copy shipped in this package (``ranking/wordnet``: the noun files pruned to
   what is read here, 3 MB, written by ``scripts/build_wordnet.py``; WordNet's
   licence is beside them).

Without a lexicon (an empty ``$LAYERSEARCH_WORDNET``, or files that cannot be read),
:func:`wordnet` is None and every caller degrades: no synonym bridges, and the
abbreviation matcher decides what is a word by its own rule.

Only what retrieval needs is kept: each lemma's synsets in WordNet's sense order
(most frequent first), each synset's lemmas, and its hypernyms and hyponyms
(the broader and narrower words: ``leader`` is broader than ``head``). A process keeps
it for later builds, so it is stored compactly (:class:`Rows`, :class:`Senses`): synset
numbers in 4-byte arrays with row offsets, each distinct string once, and a word's row
in a dict; a lookup returns a new small tuple. About 24 MiB instead of the 64 MiB of
plain dicts and tuples (``benchmarks/lexicon.py``).
"""

from __future__ import annotations

import gzip
import logging
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar, overload

from layersearch.ranking.diskcache import cached

__all__ = ["Rows", "Senses", "WordNet", "identity", "wordnet", "wordnet_dir"]

log = logging.getLogger("layersearch.lexicon")
T = TypeVar("T")

_POS_FILES = ("noun",)
#: Pointer symbols read as "broader" or "narrower" (instances included).
_RELATED = frozenset({"@", "@i", "~", "~i"})


class Rows(Sequence[tuple[T, ...]]):
    """A list of tuples stored flat (compressed sparse rows): row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``, a new small tuple on each access. Numbers are
    an ``array('i')`` (4 bytes each, no Python int per number), words a tuple of shared
    strings."""

    __slots__ = ("offsets", "values")

    def __init__(self, offsets: array[int], values: Sequence[T]) -> None:
        self.offsets = offsets
        self.values = values

    @classmethod
    def of(cls, rows: Iterable[Iterable[T]], values: MutableSequence[T]) -> Rows[T]:
        """``rows`` flattened into ``values`` (an empty list or ``array('i')``)."""
        offsets = array("i", [0])
        for row in rows:
            values.extend(row)
            offsets.append(len(values))
        return cls(offsets, tuple(values) if isinstance(values, list) else values)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, i: int) -> tuple[T, ...]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[T, ...]]: ...
    def __getitem__(self, i: int | slice) -> tuple[T, ...] | Sequence[tuple[T, ...]]:
        off = self.offsets
        if type(i) is int and 0 <= i < len(off) - 1:  # the readers' case, kept short
            return tuple(self.values[off[i] : off[i + 1]])
        if isinstance(i, slice):
            return [self[k] for k in range(len(self))[i]]
        if isinstance(i, int) and -len(self) <= i < 0:
            return self[i + len(self)]
        raise IndexError(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            return self.offsets == other.offsets and self.values == other.values
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class Senses(Mapping[str, tuple[int, ...]]):
    """A word → synset numbers table: each word's row in a dict (the row numbers are
    one set of int objects for both tables of a lexicon), the numbers as :class:`Rows`."""

    __slots__ = ("row_of", "rows")

    def __init__(self, words: Iterable[str], rows: Rows[int], numbers: Iterable[int]) -> None:
        self.row_of = dict(zip(words, numbers, strict=False))  # numbers may run on
        self.rows = rows

    @classmethod
    def of(
        cls, table: Mapping[str, Sequence[int]], pool: dict[str, str], numbers: Iterable[int]
    ) -> Senses:
        """``table`` with its words taken from (or added to) ``pool``."""
        words = [pool.setdefault(k, k) for k in table]
        return cls(words, Rows.of(table.values(), array("i")), numbers)

    def get(self, key: str, default: Any = None) -> Any:
        i = self.row_of.get(key)
        if i is None:
            return default
        off = self.rows.offsets
        return tuple(self.rows.values[off[i] : off[i + 1]])

    def __getitem__(self, key: str) -> tuple[int, ...]:
        return self.rows[self.row_of[key]]

    def __contains__(self, key: object) -> bool:
        return key in self.row_of

    def __iter__(self) -> Iterator[str]:
        return iter(self.row_of)

    def __len__(self) -> int:
        return len(self.row_of)


@dataclass(frozen=True, slots=True)
class WordNet:
    """The lexicon, stored compactly (:class:`Senses`, :class:`Rows`); it reads like the
    plain dicts and lists of tuples :func:`_read` parses."""

    #: lemma (lowercase, ``_`` between words) → synset numbers, most frequent sense first
    senses: Senses
    #: synset number → its lemmas
    lemmas: Rows[str]
    #: synset number → its hypernyms and hyponyms
    related: Rows[int]
    #: the senses by analyzer token (:func:`lemma_key`): lemmas that stem alike merged
    by_key: Senses
    source: str

    def is_word(self, word: str) -> bool:
        """A lemma or an inflected form of one (regular plurals by the analyzer's stem:
        ``adults``; irregular ones by WordNet's lists: ``mice``)."""
        w = word.lower()
        return w in self.senses or lemma_key(w) in self.by_key

    def __reduce__(self) -> tuple[Any, ...]:
        # the words as lists (their strings shared with the lemmas' by pickle's memo),
        # the row dicts rebuilt on loading
        s, k = self.senses, self.by_key
        return (
            _unpickle,
            (list(s), s.rows, self.lemmas, self.related, list(k), k.rows, self.source),
        )


def _unpickle(
    words: list[str],
    rows: Rows[int],
    lemmas: Rows[str],
    related: Rows[int],
    keys: list[str],
    key_rows: Rows[int],
    source: str,
) -> WordNet:
    shared = list(range(max(len(words), len(keys))))
    return WordNet(
        Senses(words, rows, shared), lemmas, related, Senses(keys, key_rows, shared), source
    )


class Plain(NamedTuple):
    """The lexicon as parsed, before :func:`_compact` (the fields of :class:`WordNet`)."""

    senses: dict[str, tuple[int, ...]]
    lemmas: list[tuple[str, ...]]
    related: list[tuple[int, ...]]
    by_key: dict[str, tuple[int, ...]]


def _compact(plain: Plain, source: str) -> WordNet:
    """``plain`` as a :class:`WordNet`: each distinct string once, numbers in arrays."""
    pool: dict[str, str] = {}
    words: list[str] = []
    lemmas = Rows.of(((pool.setdefault(w, w) for w in row) for row in plain.lemmas), words)
    shared = list(range(max(len(plain.senses), len(plain.by_key))))
    return WordNet(
        Senses.of(plain.senses, pool, shared),
        lemmas,
        Rows.of(plain.related, array("i")),
        Senses.of(plain.by_key, pool, shared),
        source,
    )


def lemma_key(lemma: str) -> str:
    """The analyzer's token for a WordNet lemma: the stem of one word, the lowercased
    identifier of several (``last_name``)."""
    from layersearch.ranking.analyzer import stem

    return stem(lemma) if lemma.isalpha() else lemma.lower()


def wordnet_dir() -> Path | None:
    """Where the WordNet files are (see the module doc), or None."""
    env = os.environ.get("LAYERSEARCH_WORDNET")
    if env is not None:
        return Path(env) if env.strip() else None
    return BUNDLED


#: the pruned WordNet 3.0 noun files shipped in the package
BUNDLED = Path(__file__).parent / "wordnet"


def _file(base: Path, name: str) -> Path:
    """``base/name``, or its gzipped copy ``name.gz`` when only that exists."""
    plain = base / name
    packed = base / f"{name}.gz"
    return packed if not plain.exists() and packed.exists() else plain


def identity() -> str:
    """What names the lexicon in the snapshot's code fingerprint, without reading it: the
    sizes of its three files (``none`` without one), so that a store built with another
    lexicon, or none, rebuilds its bridges."""
    base = wordnet_dir()
    if base is None:
        return "none"
    sizes = []
    for name in ("data.noun", "index.noun", "noun.exc"):
        path = _file(base, name)
        try:
            sizes.append(f"{path.name}={path.stat().st_size}")
        except OSError:
            sizes.append(f"{name}=missing")
    return f"wordnet:{_CACHE_VERSION}:" + ",".join(sizes)


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="latin-1")
    return path.open(encoding="latin-1")


#: Bump when what :func:`_parse` keeps changes: cached copies of older versions are ignored.
_CACHE_VERSION = 3


@lru_cache(maxsize=4)
def _load(directory: str) -> WordNet | None:
    """The lexicon from a cached copy when one matches the files, else parsed (and
    cached: :mod:`layersearch.ranking.diskcache`)."""
    base = Path(directory)
    try:
        return cached(
            "wordnet", _CACHE_VERSION, [_file(base, "data.noun")], WordNet, lambda: _parse(base)
        )
    except OSError as exc:
        log.warning("WordNet at %s could not be read (%s): no synonym bridges", base, exc)
        return None


def _parse(base: Path) -> WordNet | None:
    plain = _read(base)
    return None if plain is None else _compact(plain, str(base))


def _read(base: Path) -> Plain | None:
    """The WordNet files at ``base`` as plain dicts and lists (None when unreadable)."""
    number: dict[tuple[str, int], int] = {}
    lemmas: list[tuple[str, ...]] = []
    pointers: list[list[tuple[str, int]]] = []
    try:
        for pos in _POS_FILES:
            with _open(_file(base, f"data.{pos}")) as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue  # the licence header
                    head = line.split(" | ", 1)[0].split()
                    n_words = int(head[3], 16)
                    words = tuple(_lemma(head[4 + 2 * i]) for i in range(n_words))
                    at = 4 + 2 * n_words
                    n_ptr = int(head[at])
                    ptrs = []
                    for k in range(n_ptr):
                        sym, off, ppos = head[at + 1 + 4 * k : at + 4 + 4 * k]
                        if sym in _RELATED:
                            ptrs.append((_pos_file(ppos), int(off)))
                    number[(pos, int(head[0]))] = len(lemmas)
                    lemmas.append(words)
                    pointers.append(ptrs)
        senses: dict[str, list[int]] = {}
        for pos in _POS_FILES:
            with _open(_file(base, f"index.{pos}")) as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue
                    parts = line.split()
                    n_syn = int(parts[2])
                    for off in parts[len(parts) - n_syn :]:
                        j = number.get((pos, int(off)))
                        if j is not None:
                            senses.setdefault(parts[0].lower(), []).append(j)
        # inflected forms (mice, became, better) share their base form's senses
        for pos in _POS_FILES:
            with _open(_file(base, f"{pos}.exc")) as fh:
                for line in fh:
                    form, *bases = line.split()
                    for b in bases:
                        for j in senses.get(b, ()):
                            bucket = senses.setdefault(form, [])
                            if j not in bucket:
                                bucket.append(j)
    except (OSError, EOFError, ValueError, IndexError) as exc:
        log.warning("WordNet at %s could not be read (%s): no synonym bridges", base, exc)
        return None
    related = [tuple(number[p] for p in ptrs if p in number) for ptrs in pointers]
    merged: dict[str, list[int]] = {}
    for lemma, found in senses.items():
        bucket = merged.setdefault(lemma_key(lemma), [])
        bucket.extend(j for j in found if j not in bucket)
    return Plain(
        {w: tuple(s) for w, s in senses.items()},
        lemmas,
        related,
        {k: tuple(v) for k, v in merged.items()},
    )


def _lemma(word: str) -> str:
    # adjectives carry a marker: "big(a)"
    cut = word.find("(")
    return (word if cut < 0 else word[:cut]).lower()


def _pos_file(pos: str) -> str:
    return {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}.get(pos, pos)


def wordnet() -> WordNet | None:
    """The lexicon, read once per process (about a second), or None when absent."""
    directory = wordnet_dir()
    if directory is None:
        return None
    return _load(str(directory))
