"""Question words read as their nearest catalog words without an embedder at run time.

:mod:`layersearch.ranking.neighbours` reads each question word as the catalog words
nearest it by the embedder's cosine of the single words; that needs the model at
query time, so lexical search (no embedder, or ``--channels fulltext``) had only
WordNet's bridges. The package ships the same model's vectors of single English
words (``wordvec/``: all-MiniLM-L6-v2's embedding of each word alone, reduced by
PCA and stored as int8; ``scripts/build_word_vectors.py`` makes them), so a
lexical search reads its question's words the same way: each of
:data:`neighbours.NEIGHBOURS` nearest catalog words at ``SYNONYM_WEIGHT`` ×
cosine, merged with WordNet's bridges. A word, of the question or of the catalog's
entity names, is looked up as written (lower case), else by its analysed term;
words outside the shipped vocabulary (codes, abbreviations, misspellings) get no
reading, and a neighbour no closer than two random words of the vocabulary usually
are (:func:`chance_cosine`) is not read.

``$LAYERSEARCH_WORD_VECTORS`` names another directory holding ``words.txt.gz``
and ``vectors.npy``; set to the empty string it turns the readings off.
"""

from __future__ import annotations

import gzip
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from layersearch.ranking.analyzer import read_words
from layersearch.ranking.diskcache import cached
from layersearch.ranking.neighbours import WordSpace, catalog_words, word_key
from layersearch.ranking.params import WORD_NEIGHBOURS, WordNeighbours

if TYPE_CHECKING:
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges

__all__ = ["BUNDLED", "StaticWords", "static_bridges", "static_words"]

log = logging.getLogger(__name__)

#: the word vectors shipped in the package
BUNDLED = Path(__file__).parent / "wordvec"
#: A neighbour is read only when closer than this share of random word pairs are.
CHANCE_QUANTILE = 0.99
#: Random pairs drawn to find that cosine.
CHANCE_PAIRS = 20_000


class StaticWords:
    """A fixed vocabulary of words with unit vectors, and per schema index the
    :class:`WordSpace` of the catalog terms it holds a word for."""

    def __init__(
        self, words: list[str], matrix: np.ndarray, keys: list[str | None] | None = None
    ) -> None:
        """``keys``: each word's analysed term (``neighbours.word_key``), computed here
        when not given (the shipped file stores them: stemming 65,741 words takes a
        second)."""
        if len(words) != len(matrix):
            raise ValueError(f"{len(words)} words for {len(matrix)} vectors")
        # kept as given (int8 from the shipped file: 8 MB, not 34 as float32), each row
        # scaled to unit length when read (:meth:`unit`)
        self._raw = matrix
        norms = np.linalg.norm(matrix.astype(np.float32), axis=1)
        norms[norms == 0] = 1.0
        self._scale = (1.0 / norms).astype(np.float32)
        self.rows = {w: i for i, w in enumerate(words)}
        if keys is None:
            keys = [word_key(w) for w in words]
        # an analysed term's word: the shortest word of the vocabulary with that term
        # (``division`` for ``divis``), ties by spelling
        by_key: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key is not None:
                j = by_key.get(key)
                if j is None or (len(words[i]), words[i]) < (len(words[j]), words[j]):
                    by_key[key] = i
        self.by_key = by_key
        self.words = words
        self.floor = chance_cosine(self.unit, len(words))
        self._fresh()

    def _fresh(self) -> None:
        self._lock = threading.Lock()
        self._spaces: weakref.WeakKeyDictionary[CoverageIndex, WordSpace] = (
            weakref.WeakKeyDictionary()
        )
        # per catalog (the object ``names`` reads, by identity: a mapping is not
        # hashable): its words this vocabulary has, with their unit vectors, which every
        # index of that catalog takes its words from; dropped with the catalog
        self._catalogs: dict[int, tuple[weakref.ref[object], list[str], np.ndarray]] = {}

    def __getstate__(self) -> dict[str, object]:
        # (pickled by :func:`_load`'s cache: the words, rows and floor, no catalog's space)
        return {
            k: v for k, v in self.__dict__.items() if k not in ("_lock", "_spaces", "_catalogs")
        }

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._fresh()

    def __len__(self) -> int:
        return len(self.words)

    def unit(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The unit vectors of ``rows`` (float32, a row each)."""
        at = np.asarray(rows, dtype=np.int64)
        return self._raw[at].astype(np.float32) * self._scale[at, None]

    def row(self, raw: str, key: str | None = None) -> int | None:
        """The vector row of a word: as written, else by its analysed term (``key``,
        analysed here when not given and needed)."""
        i = self.rows.get(raw.lower())
        if i is not None:
            return i
        key = word_key(raw) if key is None else key
        return self.by_key.get(key) if key is not None else None

    def space(
        self,
        index: CoverageIndex,
        names: Callable[[], Iterable[str]],
        catalog: object | None = None,
    ) -> WordSpace:
        """The catalog words of ``names`` (``neighbours.catalog_words``) that this
        vocabulary has and ``index`` holds, each by its own vector (as written, else its
        term's); built once per index. ``catalog``: the object ``names`` reads (a
        snapshot's entities), whose words are then read once for all its indexes (a
        datasource's index among them), else ``names`` is read for each index."""
        with self._lock:
            found = self._spaces.get(index)
        if found is not None:
            return found
        words, unit = self._catalog_words(names, catalog)
        space = WordSpace(words, unit, index.vocab)
        with self._lock:
            self._spaces[index] = space
        return space

    def _catalog_words(
        self, names: Callable[[], Iterable[str]], catalog: object | None
    ) -> tuple[list[str], np.ndarray]:
        """The words of ``names`` this vocabulary has, and their unit vectors (kept per
        ``catalog`` when one is given and can be weakly referenced)."""
        if catalog is not None:
            with self._lock:
                kept = self._catalogs.get(id(catalog))
            if kept is not None and kept[0]() is catalog:
                return kept[1], kept[2]
        words, rows = [], []
        # (names repeat: ``id``, ``name``, ``created_at`` in every table)
        for word in catalog_words(set(names())):
            i = self.row(word)
            if i is not None:
                words.append(word)
                rows.append(i)
        unit = self.unit(rows)
        if catalog is not None:
            try:
                ref = weakref.ref(catalog)
            except TypeError:  # (not weakly referenced: not kept)
                return words, unit
            with self._lock:
                self._catalogs[id(catalog)] = (ref, words, unit)
            weakref.finalize(catalog, self._catalogs.pop, id(catalog), None)
        return words, unit

    def bridges(
        self,
        index: CoverageIndex,
        question: str,
        names: Callable[[], Iterable[str]],
        reading: WordNeighbours = WORD_NEIGHBOURS,
        catalog: object | None = None,
    ) -> Bridges:
        """The question's words read as their nearest catalog words of ``index``, the
        words of ``names`` (the catalog's entity names; ``catalog``: what it reads, as
        :meth:`space` takes it) it holds."""
        found = [
            (key, i)
            for raw, key in read_words(question)[: reading.question_words]
            if (i := self.row(raw, key)) is not None
        ]
        if not found:
            return ()
        space = self.space(index, names, catalog)
        vectors = self.unit([i for _, i in found])
        keys = [k for k, _ in found]
        return space.bridges(keys, vectors, k=reading.neighbours, floor=self.floor)


def chance_cosine(
    unit: Callable[[np.ndarray], np.ndarray], n: int, pairs: int = CHANCE_PAIRS
) -> float:
    """The cosine that :data:`CHANCE_QUANTILE` of random pairs of ``n`` words stay below
    (pairs drawn with a fixed seed; ``unit`` gives the unit vectors of some rows): a
    neighbour no closer than this is as close as two words chosen at random, and is
    not read."""
    if n < 2:
        return 0.0
    rng = np.random.default_rng(0)
    a = rng.integers(0, n, pairs)
    b = rng.integers(0, n, pairs)
    keep = a != b
    cos = np.einsum("ij,ij->i", unit(a[keep]), unit(b[keep]))
    return float(np.quantile(cos, CHANCE_QUANTILE))


def vectors_dir() -> Path | None:
    """Where the word vectors are (see the module doc), or None when turned off."""
    env = os.environ.get("LAYERSEARCH_WORD_VECTORS")
    if env is not None:
        return Path(env) if env.strip() else None
    return BUNDLED


def read_vectors(base: Path) -> StaticWords:
    """The words of ``base`` (``words.txt.gz``: a line a word, then its analysed term
    when it has one) and their int8 vectors (``vectors.npy``, a row a word, in the
    words' order)."""
    words: list[str] = []
    keys: list[str | None] = []
    with gzip.open(base / "words.txt.gz", "rt", encoding="utf-8") as f:
        for line in f:
            word, _, key = line.strip().partition(" ")
            if word:
                words.append(word)
                keys.append(key or None)
    rows = np.load(base / "vectors.npy", allow_pickle=False)
    if rows.ndim != 2 or rows.dtype != np.int8 or len(rows) != len(words):
        raise ValueError(
            f"{base}: {rows.dtype} vectors of shape {rows.shape} for {len(words)} words"
        )
    return StaticWords(words, rows, keys)


#: Bump when what :class:`StaticWords` keeps changes: cached copies of older ones are ignored.
_CACHE_VERSION = 1


@lru_cache(maxsize=4)
def _load(base: Path | None) -> StaticWords | None:
    """The vectors of ``base`` from a cached copy when one matches its files, else read
    (and cached: :mod:`layersearch.ranking.diskcache`; reading takes 0.2 s, most of a
    new process's lexical search)."""
    if base is None:
        return None
    try:
        sources = [base / "words.txt.gz", base / "vectors.npy"]
        return cached("wordvec", _CACHE_VERSION, sources, StaticWords, lambda: read_vectors(base))
    except (OSError, ValueError) as exc:
        log.warning("word vectors not read (%s): lexical search reads no word neighbours", exc)
        return None


def static_words() -> StaticWords | None:
    """The configured word vectors, read once per process; None when turned off or
    unreadable (logged)."""
    return _load(vectors_dir())


def static_bridges(
    index: CoverageIndex, question: str, names: Callable[[], Iterable[str]]
) -> Bridges:
    """The question's words read through the shipped word vectors as their nearest words
    of ``names`` (the catalog's entity names) in ``index``; none without the vectors."""
    words = static_words()
    return words.bridges(index, question, names) if words is not None else ()
