"""A forest of regression trees (a learned ranking model) evaluated with numpy.

A ranking model trained elsewhere (LightGBM LambdaRank: ``scripts/learned_fusion.py
--export``) is shipped as a small JSON file of its trees; this module reads it and
scores rows of features with no learning library. The file::

    {"format": "layersearch-forest/1",
     "features": [name, ...],
     "trees": [{"feature": [...], "threshold": [...], "left": [...], "right": [...],
                "value": [...]}, ...],
     "meta": {...}}

Per tree, node 0 is the root; an inner node has ``feature`` ≥ 0 (an index into
``features``) and sends a row left when its value is ``<= threshold``; a leaf has
``feature`` −1 and ``left``/``right`` −1. ``value`` is a leaf's output and an inner
node's expected output (for the contributions). A row's score is the sum of its leaves'
values over the trees (LightGBM's raw score).

:meth:`Forest.contributions` gives each feature's part of one row's score (Saabas
path contributions: on the way from the root to the leaf, each split adds
value(child) − value(node) to its feature), so the score is :attr:`Forest.bias` plus
the contributions' sum.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.errors import ConfigError
from layersearch.ranking.diskcache import read_once

__all__ = ["FORMAT", "LEARNED", "Forest", "from_lightgbm", "shipped"]

FORMAT = "layersearch-forest/1"
#: the models shipped in the package (each with its model card, README.md)
LEARNED = Path(__file__).resolve().parent / "learned"


@dataclass(frozen=True, slots=True, eq=False)
class Forest:
    """The trees of one model, every node in one set of arrays (global node numbers)."""

    features: tuple[str, ...]
    #: per node: the feature it splits on, −1 for a leaf
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    #: the root node of each tree
    roots: np.ndarray
    #: the longest root-to-leaf path (splits)
    depth: int
    meta: Mapping[str, Any]
    #: the walk's arrays: each node's feature and threshold, and its children as
    #: ``2 * node`` (left) and ``2 * node + 1`` (right); a leaf reads feature 0 against
    #: +inf and is its own child
    _walk: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0), np.zeros(0))

    def __post_init__(self) -> None:
        leaf = self.feature < 0
        here = np.arange(len(self.feature), dtype=np.int64)
        children = np.empty(2 * len(self.feature), dtype=np.int64)
        children[0::2] = np.where(leaf, here, self.left)
        children[1::2] = np.where(leaf, here, self.right)
        walk = (
            np.where(leaf, 0, self.feature).astype(np.intp),
            np.where(leaf, np.inf, self.threshold),
            children,
        )
        object.__setattr__(self, "_walk", walk)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "forest") -> Forest:
        """A forest from its JSON form (module docstring); a malformed one is a
        :class:`ConfigError` naming ``where``."""
        if data.get("format") != FORMAT:
            raise ConfigError(f"{where}: not a {FORMAT} file (format {data.get('format')!r})")
        features = tuple(str(f) for f in data.get("features") or ())
        trees = data.get("trees") or []
        if not features or not trees:
            raise ConfigError(f"{where}: no features or no trees")
        cols: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right")}
        values: list[float] = []
        roots: list[int] = []
        depth = 0
        for t, tree in enumerate(trees):
            n = len(tree["value"])
            if n == 0 or any(len(tree[k]) != n for k in cols):
                raise ConfigError(f"{where}: tree {t} has arrays of different lengths")
            base = len(values)
            roots.append(base)
            for k, at in (("left", tree["left"]), ("right", tree["right"])):
                cols[k].extend(base + int(c) if int(c) >= 0 else -1 for c in at)
            for i, f in enumerate(tree["feature"]):
                f = int(f)
                inner = f >= 0
                if f >= len(features) or inner != (int(tree["left"][i]) >= 0):
                    raise ConfigError(f"{where}: tree {t} node {i} is malformed")
                if inner and not (0 < int(tree["left"][i]) < n and 0 < int(tree["right"][i]) < n):
                    raise ConfigError(f"{where}: tree {t} node {i} points outside the tree")
                cols["feature"].append(f)
            cols["threshold"].extend(float(x) for x in tree["threshold"])
            values.extend(float(v) for v in tree["value"])
            depth = max(depth, _depth(tree["left"], tree["right"]))
        return cls(
            features=features,
            feature=np.asarray(cols["feature"], dtype=np.int64),
            threshold=np.asarray(cols["threshold"], dtype=np.float64),
            left=np.asarray(cols["left"], dtype=np.int64),
            right=np.asarray(cols["right"], dtype=np.int64),
            value=np.asarray(values, dtype=np.float64),
            roots=np.asarray(roots, dtype=np.int64),
            depth=depth,
            meta=dict(data.get("meta") or {}),
        )

    @classmethod
    def load(cls, path: Path) -> Forest:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: cannot read the model: {e}") from e
        return cls.from_dict(data, str(path))

    @property
    def bias(self) -> float:
        """The score of a row before any split: the sum of the roots' values."""
        return float(self.value[self.roots].sum())

    def leaves(self, rows: np.ndarray) -> np.ndarray:
        """The leaf each row reaches in each tree: (rows, trees) node numbers."""
        x = self._rows(rows)
        n, width = x.shape
        feature, threshold, children = self._walk
        flat = x.ravel()  # (one row after the other: row r's feature f is r * width + f)
        node = np.tile(self.roots, n)
        at = np.repeat(np.arange(n, dtype=np.intp) * width, len(self.roots))
        for _ in range(self.depth):
            right = np.take(flat, at + np.take(feature, node)) > np.take(threshold, node)
            node = np.take(children, 2 * node + right)
        return node.reshape(n, len(self.roots))

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """Each row's score (rows: (n, features), finite)."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float64)
        return self.value[self.leaves(rows)].sum(axis=1)

    def contributions(self, row: Sequence[float] | np.ndarray) -> dict[str, float]:
        """Each feature's part of one row's score (Saabas; features no split read are
        left out): :attr:`bias` plus their sum is :meth:`predict`'s score."""
        x = self._rows(np.asarray(row, dtype=np.float64).reshape(1, -1))[0]
        out = np.zeros(len(self.features), dtype=np.float64)
        for node in self.roots.tolist():
            while (f := int(self.feature[node])) >= 0:
                child = int(self.left[node] if x[f] <= self.threshold[node] else self.right[node])
                out[f] += self.value[child] - self.value[node]
                node = child
        return {self.features[i]: float(out[i]) for i in np.flatnonzero(out)}

    def _rows(self, rows: np.ndarray) -> np.ndarray:
        x = np.asarray(rows, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"rows of {len(self.features)} features expected, got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError("features must be finite")
        return x


#: Bump when what :class:`Forest` keeps changes: cached copies of older ones are ignored.
_CACHE_VERSION = 1


@lru_cache(maxsize=8)
def shipped(name: str) -> Forest:
    """The shipped model ``name`` (``ranking/learned/<name>.json``), read once per process,
    from a cached copy when one matches the file (:mod:`layersearch.ranking.diskcache`:
    parsing and checking a model's JSON takes ~8 ms, a new process's lexical search reads
    two or three, the copy 0.1 ms)."""
    path = LEARNED / f"{name}.json"
    return read_once(f"forest-{name}", _CACHE_VERSION, path, Forest, lambda: Forest.load(path))


def _depth(left: Sequence[int], right: Sequence[int]) -> int:
    deepest = 0
    stack = [(0, 0)]
    while stack:
        node, d = stack.pop()
        if int(left[node]) < 0:
            deepest = max(deepest, d)
            continue
        stack += [(int(left[node]), d + 1), (int(right[node]), d + 1)]
    return deepest


def from_lightgbm(dump: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A LightGBM model's ``dump_model()`` in this module's JSON form (numerical
    ``<=`` splits only: a categorical split, or one that sends missing values its own
    way on a value a finite row can hold, is an error)."""
    features = list(dump["feature_names"])
    trees = []
    for info in dump["tree_info"]:
        tree: dict[str, list[Any]] = {
            k: [] for k in ("feature", "threshold", "left", "right", "value")
        }

        def add(node: Mapping[str, Any], tree: dict[str, list[Any]] = tree) -> int:
            i = len(tree["value"])
            for k in tree:
                tree[k].append(-1 if k in ("feature", "left", "right") else 0.0)
            if "leaf_value" in node:
                tree["value"][i] = float(node["leaf_value"])
                return i
            if node.get("decision_type") != "<=" or node.get("missing_type") == "Zero":
                raise ValueError(f"unsupported split: {node.get('decision_type')!r}")
            tree["feature"][i] = int(node["split_feature"])
            tree["threshold"][i] = float(node["threshold"])
            tree["value"][i] = float(node["internal_value"])
            tree["left"][i] = add(node["left_child"])
            tree["right"][i] = add(node["right_child"])
            return i

        add(info["tree_structure"])
        trees.append(tree)
    return {"format": FORMAT, "features": features, "trees": trees, "meta": dict(meta or {})}
