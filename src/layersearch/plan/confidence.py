"""A response-level warning when nothing matches the question well, from a learned model.

The signals are read off the channel explanations of the first :data:`TOP` entity
hits, which the search computes anyway (no extra search):

- ``coverage``: the share of the question's plain words that the hits' own names,
  labels and descriptions hold exactly (the schema channel's ``matched`` words);
- ``single``: the largest share of them one hit holds;
- ``bridged``: the share held only through a related word, weighted by the bridge's
  strength (``revenue→amount 0.30``);
- the schema channel's reach (the share of the question's words the layer uses or
  bridges to) and separation (how far its best tables stand out), as the search
  weighs it;
- the schema channel's best rank and score among the hits, how many channels rank the
  first hit first, how far the fused scores fall over the hits, the question's length;
- with the dense channel: the best, mean and spread of the hits' vector scores and
  the dense channel's separation.

A model over them (``weak_match.json`` beside this module, written by
``scripts/train_weak_match.py`` from Spider-Syn train questions asked of a catalog
that holds their database and of one that does not; docs/agent.md) gives the
probability that the layer does not hold the answer; the question is flagged at the
threshold chosen on validation databases for at most 5% of answerable questions
flagged. Two models ship: one with the dense features and a lexical one for searches
without a model. Each is a logistic regression (evaluated in plain Python) or boosted
trees (``ranking.trees.Forest``), whichever cross-validated better in training.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersearch.ranking.analyzer import query_words
from layersearch.ranking.diskcache import read_once
from layersearch.types import Hit

if TYPE_CHECKING:
    from layersearch.ranking.trees import Forest

TOP = 5
#: how deep the checked list is, whatever the request's ``max_results``: the check
#: reads the same first hits for every ``max_results``. (The model was trained on lists
#: 30 deep; their first TOP entity hits are these whenever 10 results hold TOP entity
#: hits, as they do unless memories take more than half of the first results.)
DEPTH = 2 * TOP
MODEL_FILE = Path(__file__).with_name("weak_match.json")
_ENTITY_KINDS = ("model", "column", "measure", "aggregation")
#: how each feature reads in a warning
LABELS = {
    "coverage": "question words the first hits hold",
    "bridged": "words held only through a related word",
    "single": "question words one hit holds",
    "words": "question length",
    "schema_rank": "best name-match rank",
    "schema_score": "best name-match score",
    "agree": "channels ranking the first hit first",
    "reach": "question words the layer uses or bridges to",
    "separation": "how far the name-match tables stand out",
    "fused_drop": "fused-score drop over the first hits",
    "dense_best": "best dense score",
    "dense_mean": "mean dense score",
    "dense_spread": "dense score spread",
    "dense_separation": "how far the dense tables stand out",
}


def first_hits(hits: Sequence[Hit], top: int = TOP) -> list[Hit]:
    """The first ``top`` entity hits, which the signals read."""
    return [h for h in hits if h.kind in _ENTITY_KINDS][:top]


def has_dense(hits: Sequence[Hit]) -> bool:
    """Whether the dense channel ranked any hit of an answer."""
    return any(c.channel == "vector" for h in hits for c in h.explanation or [])


def features(
    question: str, hits: Sequence[Hit], top: int = TOP, dense: bool | None = None
) -> dict[str, float] | None:
    """The signals of an answer whose hits carry their explanations, over its first
    ``top`` entity hits; the dense ones when the dense channel ran (``dense``, by
    default: when a hit of the answer has a vector score). None when the question has
    no plain word to match (only ids, numbers or stop words)."""
    words = {w for w, _ in query_words(question)}
    if not words:
        return None
    dense = has_dense(hits) if dense is None else dense
    first = first_hits(hits, top)
    exact: set[str] = set()
    single = 0
    bridged: dict[str, float] = {}
    schema_rank: int | None = None
    schema_score = 0.0
    spread: dict[str, float] = {}  # a channel's reach and separation, when weighed
    vector: list[float] = []
    for h in first:
        for c in h.explanation or []:
            for key, v in ((f"{c.channel}_reach", c.reach), (f"{c.channel}_sep", c.separation)):
                if v is not None:
                    spread.setdefault(key, v)
            if c.channel == "schema":
                schema_rank = c.rank if schema_rank is None else min(schema_rank, c.rank)
                schema_score = max(schema_score, c.score)
                own = {m.lower() for m in c.matched or [] if "→" not in m}
                single = max(single, len(own & words))
                for m in c.matched or []:
                    word, arrow, rest = m.partition("→")
                    if not arrow:
                        exact.add(word.lower())
                        continue
                    try:
                        strength = float(rest.rsplit(" ", 1)[-1])
                    except ValueError:
                        strength = 0.0
                    bridged[word.lower()] = max(bridged.get(word.lower(), 0.0), strength)
            elif c.channel == "vector":
                vector.append(c.score)
    n = len(words)
    held = words & exact
    out = {
        "coverage": len(held) / n,
        "single": single / n,
        "bridged": sum(s for w, s in bridged.items() if w in words and w not in held) / n,
        "words": math.log1p(n),
        "schema_rank": 1.0 / schema_rank if schema_rank else 0.0,
        "schema_score": schema_score / n,
        "agree": float(_agree(first[0])) if first else 0.0,
        "reach": spread.get("schema_reach", 0.0),
        "separation": spread.get("schema_sep", 0.0),
        "fused_drop": (first[0].score - first[-1].score) / first[0].score
        if first and first[0].score > 0
        else 0.0,
    }
    if dense:
        out["dense_best"] = max(vector, default=0.0)
        out["dense_mean"] = sum(vector) / len(vector) if vector else 0.0
        out["dense_spread"] = max(vector) - min(vector) if vector else 0.0
        out["dense_separation"] = spread.get("vector_sep", 0.0)
    return out


def _agree(hit: Hit) -> int:
    return sum(1 for c in hit.explanation or [] if c.rank == 1)


@dataclass(frozen=True)
class Model:
    """A logistic regression over standardised features, and its flag threshold."""

    name: str
    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float

    @classmethod
    def from_dict(cls, name: str, d: dict[str, Any]) -> Model:
        names = tuple(d["features"])
        mean, scale, coef = (tuple(float(x) for x in d[k]) for k in ("mean", "scale", "coef"))
        if any(len(c) != len(names) for c in (mean, scale, coef)) or any(s <= 0 for s in scale):
            raise ValueError(f"weak-match model {name!r}: malformed coefficients")
        return cls(
            name,
            names,
            mean,
            scale,
            coef,
            intercept=float(d["intercept"]),
            threshold=float(d["threshold"]),
        )

    def contributions(self, x: dict[str, float]) -> dict[str, float]:
        """Each feature's term of the log-odds (its distance from the training mean)."""
        return {
            f: c * (x[f] - m) / s
            for f, m, s, c in zip(self.names, self.mean, self.scale, self.coef, strict=True)
        }

    def probability(self, x: dict[str, float]) -> float:
        return _sigmoid(self.intercept + sum(self.contributions(x).values()))


@dataclass(frozen=True)
class TreesModel:
    """Boosted trees over the raw features (``ranking.trees.Forest``, whose sum is the
    log-odds), and the flag threshold."""

    name: str
    forest: Forest
    threshold: float

    @property
    def names(self) -> tuple[str, ...]:
        return self.forest.features

    @classmethod
    def from_dict(cls, name: str, d: dict[str, Any]) -> TreesModel:
        from layersearch.ranking.trees import Forest

        forest = Forest.from_dict(d["forest"], f"weak-match model {name!r}")
        return cls(name, forest, float(d["threshold"]))

    def contributions(self, x: dict[str, float]) -> dict[str, float]:
        """Each feature's term of the log-odds: the changes of the trees' values along
        the row's paths that its splits made (the rest is the trees' bias)."""
        return self.forest.contributions([x[f] for f in self.names])

    def probability(self, x: dict[str, float]) -> float:
        import numpy as np

        row = np.array([[x[f] for f in self.names]], dtype=np.float64)
        return _sigmoid(float(self.forest.predict(row)[0]))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


#: a weak-match model: :class:`Model` or :class:`TreesModel`
AnyModel = Model | TreesModel


def model_from_dict(name: str, d: dict[str, Any]) -> AnyModel:
    """The model of one entry of the coefficient file: boosted trees when its ``kind``
    says ``trees``, else a logistic regression."""
    return TreesModel.from_dict(name, d) if d.get("kind") == "trees" else Model.from_dict(name, d)


def read_models(path: str | Path = MODEL_FILE) -> dict[str, AnyModel]:
    """The models of a coefficient file, by name (``dense``, ``lexical``)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: model_from_dict(name, d) for name, d in doc["models"].items()}


#: Bump when what the models keep changes: cached copies of older ones are ignored.
_CACHE_VERSION = 1


@cache
def _shipped() -> dict[str, AnyModel]:
    """The shipped models, read once per process, from a cached copy when one matches
    the file (:mod:`layersearch.ranking.diskcache`: parsing the trees takes ~8 ms)."""
    return read_once("weak-match", _CACHE_VERSION, MODEL_FILE, dict, read_models)


@dataclass(frozen=True)
class Match:
    features: dict[str, float]
    model: AnyModel

    @property
    def coverage(self) -> float:
        return self.features["coverage"]

    @property
    def similarity(self) -> float | None:
        return self.features.get("dense_best")

    @property
    def probability(self) -> float:
        return self.model.probability(self.features)

    @property
    def weak(self) -> bool:
        return self.probability >= self.model.threshold

    def reasons(self, n: int = 3) -> list[tuple[str, float]]:
        """The ``n`` features pushing hardest towards a flag, with their log-odds terms."""
        terms = sorted(self.model.contributions(self.features).items(), key=lambda t: -t[1])
        return [t for t in terms[:n] if t[1] > 0]


def measure(
    question: str,
    hits: Sequence[Hit],
    top: int = TOP,
    models: dict[str, AnyModel] | None = None,
) -> Match | None:
    """The signals of an answer and the model that reads them (dense when a vector
    score is there, else lexical); None when the question has no plain word, or no
    entity hit carries an explanation (none found, or the full-text channel off)."""
    if not any(h.explanation for h in first_hits(hits, top)):
        return None  # no entity hit ("no results" says so), or the full text did not run
    x = features(question, hits, top)
    if x is None:
        return None
    models = models if models is not None else _shipped()
    return Match(x, models["dense" if "dense_best" in x else "lexical"])


def _shown(name: str, value: float) -> str:
    if name in ("coverage", "bridged", "single", "reach"):
        return f"{value:.0%}"
    if name == "words":
        return str(round(math.expm1(value)))
    if name == "schema_rank":
        return str(round(1 / value)) if value else "none"
    if name == "agree":
        return str(round(value))
    return f"{value:.2f}"


def warning(m: Match) -> str:
    why = "; ".join(
        f"{LABELS.get(f, f)} {_shown(f, m.features[f])} ({t:+.1f})" for f, t in m.reasons()
    )
    return (
        f"weak match: probability {m.probability:.2f} that the layer does not hold the answer "
        f"(flagged from {m.model.threshold:.2f}, {m.model.name} model)"
        + (f"; log-odds terms: {why}" if why else "")
    )
