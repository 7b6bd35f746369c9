"""A corpus's ranking as one declared pipeline of named stages.

A corpus declares its ranking as an ordered tuple of :class:`Stage`: a name (kebab
case, the name ``--without`` and the config's ``without`` take), a one-line doc, and
one entry point that reads and updates the corpus's own search state. Every tuned
number and switch of the corpus lives in one frozen dataclass derived from
:class:`RankingConfig` (defaults in one place, read from a project config with
:meth:`RankingConfig.from_mapping`); its ``without`` names the stages switched off.
:meth:`Pipeline.run` runs the stages in order, skipping those ``without`` names;
:meth:`Pipeline.check` rejects an unknown stage name with an error that lists the
known stages and the closest one.

What a stage did is kept per hit in a :class:`Trace`: a stage that reorders a list
records the order before and after it (:meth:`Trace.reorder`, read lazily: only an
explanation asks which hits moved and from where), and a stage may note a hit
directly (:meth:`Trace.note`). :meth:`Trace.moves` gives a hit's :class:`Move` list
(stage, position before and after, what the stage did, the score it added).

**The score rule.** A shown list's scores never increase down the list, and no hit
takes the score of another position. A hit's shown score is its *own* score (what
fusion gave it) plus the *adjustments* recorded for it, each by the stage that moved
it. :func:`settle` is the last step of a list that is known whole: walking up from
the last hit, a hit whose own score is above the (shown) score of the hit below it
keeps it; otherwise it is lifted to the midpoint between the hit below and the
nearest higher own score above it (:func:`between`), and the lift is its adjustment,
recorded for the stage that last moved it up. A list built a prefix at a time (a
merge of two settled lists whose results for n must be a prefix of those for n+k)
places each hit with :func:`between` at once, from the score shown above it and the
score of the hit known to come next. Scores are therefore an account of the order,
not a copy of it: every adjustment is a hit's own and is shown with the stage that
made it.
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from layersearch.errors import ConfigError

__all__ = [
    "typed_config",
    "Move",
    "Pipeline",
    "RankingConfig",
    "Stage",
    "Trace",
    "between",
    "settle",
]

S = TypeVar("S")
C = TypeVar("C", bound="RankingConfig")
T = TypeVar("T")

_STAGE_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class Stage(Generic[S]):
    """One named step of a corpus's ranking: ``run(state)`` reads and updates the
    corpus's search state. ``switchable``: whether ``without`` may name it (reading the
    question and fusing the channels are the ranking itself, not a rule on top)."""

    name: str
    doc: str
    run: Callable[[S], None]
    switchable: bool = True

    def __post_init__(self) -> None:
        if not _STAGE_NAME.match(self.name):
            raise ValueError(f"stage name '{self.name}' is not kebab case (e.g. 'join-keys')")
        if not self.doc or "\n" in self.doc:
            raise ValueError(f"stage '{self.name}': its doc is one line")


@dataclass(frozen=True, slots=True)
class Pipeline(Generic[S]):
    """A corpus's stages in the order they run."""

    corpus: str
    stages: tuple[Stage[S], ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for s in self.stages:
            if s.name in seen:
                raise ValueError(f"pipeline '{self.corpus}': stage '{s.name}' declared twice")
            seen.add(s.name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    @property
    def switchable(self) -> tuple[str, ...]:
        """The stages ``without`` may name, in pipeline order."""
        return tuple(s.name for s in self.stages if s.switchable)

    def check(self, without: Iterable[str]) -> frozenset[str]:
        """``without`` as a set, every name a switchable stage of this pipeline; else a
        :class:`ConfigError` naming the known stages (and the closest to a typo)."""
        names = frozenset(without)
        known = self.switchable
        for name in sorted(names):
            if name in known:
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            fixed = " (it cannot be switched off)" if name in self.names else ""
            raise ConfigError(
                f"unknown {self.corpus} ranking stage '{name}'{fixed}{hint}; "
                f"stages that can be switched off: {', '.join(known)}"
            )
        return names

    def active(self, without: Collection[str] = frozenset()) -> tuple[Stage[S], ...]:
        """The stages that run, in order: all but those ``without`` names (checked: an
        unknown name is an error, never silently ignored)."""
        if not without:
            return self.stages
        off = self.check(without)
        return tuple(s for s in self.stages if s.name not in off)

    def run(self, state: S, without: Collection[str] = frozenset()) -> S:
        """Runs every :meth:`active` stage in order on ``state``."""
        for stage in self.active(without):
            stage.run(state)
        return state

    def describe(self) -> list[tuple[str, str, bool]]:
        """(name, doc, switchable) per stage, in order: for docs and ``--help``."""
        return [(s.name, s.doc, s.switchable) for s in self.stages]


@dataclass(frozen=True, slots=True)
class RankingConfig:
    """The base of a corpus's ranking settings: derive a frozen dataclass whose fields
    are every tuned number and switch of the corpus, with their defaults.

    ``without``: the stages switched off. A project config gives the same fields as a
    table (:meth:`from_mapping`); an evaluation adds stages with :meth:`without_stages`.
    ``PIPELINE_STAGES`` (a class attribute) lists the corpus's switchable stages, so
    that a config naming another is rejected when it is read."""

    PIPELINE_STAGES: ClassVar[tuple[str, ...]] = ()

    without: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.PIPELINE_STAGES:
            Pipeline(self.corpus_name(), tuple(_named(n) for n in self.PIPELINE_STAGES)).check(
                self.without
            )

    @classmethod
    def corpus_name(cls) -> str:
        name = cls.__name__.removesuffix("RankingConfig")
        return name.lower() or "corpus"

    @classmethod
    def from_mapping(cls: type[C], values: Mapping[str, Any], where: str = "ranking") -> C:
        """The settings from a config table (``where`` names it in errors): every key a
        field, each value of the field's type (an int is taken for a float, a list of
        stage names for ``without``); missing keys keep their defaults."""
        return typed_config(cls, values, where)

    def without_stages(self: C, names: Iterable[str]) -> C:
        """These settings with ``names`` switched off as well."""
        return dataclasses.replace(self, without=self.without | frozenset(names))

    def settings(self) -> dict[str, Any]:
        """Every field and its value (``without`` as a sorted list), for docs and logs."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["without"] = sorted(self.without)
        return out

    def on(self, stage: str) -> bool:
        """Whether ``stage`` runs."""
        return stage not in self.without


def _named(name: str) -> Stage[Any]:
    return Stage(name, name, lambda _state: None)


def typed_config(cls: type[T], values: Mapping[str, Any], where: str) -> T:
    """A frozen settings dataclass ``cls`` from a config table (``where`` names it in
    errors): every key a field (an unknown one is refused with the closest name), each
    value of the type of the field's default (a table for a nested settings class);
    missing keys keep their defaults."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    defaults = cls()
    for key, value in values.items():
        f = fields.get(key)
        if f is None:
            close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.5)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(
                f"{where}: unknown key '{key}'{hint}; known: {', '.join(sorted(fields))}"
            )
        kwargs[key] = _typed(where, key, value, getattr(defaults, key))
    return cls(**kwargs)


def _typed(where: str, key: str, value: Any, default: Any) -> Any:
    """``value`` checked against the type of the field's default."""
    if dataclasses.is_dataclass(default) and not isinstance(default, type):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}.{key}: a table of settings, not {value!r}")
        return typed_config(type(default), value, f"{where}.{key}")
    if isinstance(default, frozenset):
        if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
            raise ConfigError(f"{where}.{key}: a list of stage names, not {value!r}")
        if not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}.{key}: a list of stage names, not {value!r}")
        return frozenset(value)
    if isinstance(default, tuple):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}.{key}: a list, not {value!r}")
        return tuple(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}.{key}: true or false, not {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}.{key}: a whole number, not {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}.{key}: a number, not {value!r}")
        return float(value)
    if not isinstance(value, type(default)):
        raise ConfigError(f"{where}.{key}: expected {type(default).__name__}, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Move:
    """What one stage did to one hit: its 1-based position before (0: it was not in
    the list) and after, what the stage did, and the score it added to the hit's own."""

    stage: str
    before: int
    after: int
    note: str
    adjustment: float = 0.0


@dataclass(slots=True)
class _Reorder:
    stage: str
    before: Sequence[str]
    after: Sequence[str]
    note: str | Callable[[str], str]
    up_only: bool
    adjust: Callable[[str], float] | None = None


@dataclass(slots=True)
class Trace:
    """What the stages of one search did, per hit; positions are read only when asked
    (a search that explains nothing pays for a few list references)."""

    _reorders: list[_Reorder] = field(default_factory=list)
    _notes: dict[str, list[Move]] = field(default_factory=dict)
    _positions: dict[int, tuple[dict[str, int], dict[str, int]]] = field(default_factory=dict)

    def reorder(
        self,
        stage: str,
        before: Sequence[str],
        after: Sequence[str],
        note: str | Callable[[str], str],
        *,
        up_only: bool = False,
        adjust: Callable[[str], float] | None = None,
    ) -> None:
        """``stage`` turned the list ``before`` into ``after`` (ids, best first; neither
        is changed afterwards); ``note``: what it did (or id → what it did to that hit).
        ``up_only``: only the hits it moved up (or added) count as moved, not those
        that step down to make room (a stage that lifts a few hits). ``adjust``: id →
        the score the stage added to that hit (a stage that moves hits by their scores),
        shown with its move."""
        if before is not after:
            self._reorders.append(_Reorder(stage, before, after, note, up_only, adjust))

    def note(
        self, stage: str, doc_id: str, before: int, after: int, note: str, adjustment: float = 0.0
    ) -> None:
        """A move the stage records itself (e.g. a score adjustment)."""
        self._notes.setdefault(doc_id, []).append(Move(stage, before, after, note, adjustment))

    def moves(self, doc_id: str) -> list[Move]:
        """Every stage that moved ``doc_id`` (its position changed, or it noted it), in
        the order the stages ran; a stage's score adjustments are summed into its move."""
        out: list[Move] = []
        for k, r in enumerate(self._reorders):
            before, after = self._maps(k, r)
            a = after.get(doc_id, 0)
            b = before.get(doc_id, 0)
            if a and a != b and (b == 0 or a < b or not r.up_only):
                note = r.note(doc_id) if callable(r.note) else r.note
                out.append(Move(r.stage, b, a, note, r.adjust(doc_id) if r.adjust else 0.0))
        for m in self._notes.get(doc_id, ()):
            for i, o in enumerate(out):
                if o.stage == m.stage and not o.adjustment:
                    note = o.note if m.note in o.note else f"{o.note}; {m.note}"
                    out[i] = Move(o.stage, o.before, o.after, note, m.adjustment)
                    break
            else:
                out.append(m)
        return out

    def adjustment(self, doc_id: str) -> float:
        """The sum of the score adjustments noted for ``doc_id`` (:meth:`note`, as
        :func:`settle` does; not those a reorder's ``adjust`` reports)."""
        return sum(m.adjustment for m in self._notes.get(doc_id, ()))

    def last_stage(self) -> str | None:
        """The last stage that reordered the list, if any."""
        return self._reorders[-1].stage if self._reorders else None

    def last_lift(self, doc_id: str) -> str | None:
        """The last stage that moved ``doc_id`` up (or into the list), if any."""
        found = None
        for k, r in enumerate(self._reorders):
            before, after = self._maps(k, r)
            a = after.get(doc_id, 0)
            if a and (before.get(doc_id, 0) == 0 or a < before[doc_id]):
                found = r.stage
        return found

    def _maps(self, k: int, r: _Reorder) -> tuple[dict[str, int], dict[str, int]]:
        got = self._positions.get(k)
        if got is None:
            got = self._positions[k] = (_positions(r.before), _positions(r.after))
        return got


def _positions(ids: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, doc_id in enumerate(ids, 1):
        out.setdefault(doc_id, i)
    return out


def between(upper: float | None, lower: float | None, own: float) -> float:
    """The score of a hit placed below a hit shown at ``upper`` and above one shown at
    ``lower`` (None: no such hit): its ``own`` score when that lies strictly between,
    else the midpoint of the two bounds. Without an upper bound the midpoint is taken
    up to ``lower`` + max(|lower|, 1e-6); without a lower one, down to ``upper`` −
    max(|upper|, 1e-6)."""
    if (upper is None or own < upper) and (lower is None or own > lower):
        return own
    if upper is None and lower is None:
        return own
    if upper is None:
        assert lower is not None
        upper = lower + max(abs(lower), 1e-6)
    if lower is None:
        lower = upper - max(abs(upper), 1e-6)
    return (upper + lower) / 2


def settle(
    ids: Sequence[str],
    scores: Sequence[float],
    trace: Trace | None = None,
    stage: str = "settle",
) -> list[float]:
    """The shown scores of a whole list in its final order (``scores``: the hits' own
    scores): non-increasing, each hit's own score or lifted (module docstring). Each
    lift is noted in ``trace`` as an adjustment of the stage that last moved the hit
    up (``stage`` when none did)."""
    n = len(scores)
    out = [float(s) for s in scores]
    if all(out[i] >= out[i + 1] for i in range(n - 1)):
        return out
    own = list(out)
    # own scores of the hits above the one being settled, sorted (for the nearest above)
    above = sorted(own[:-1]) if n > 1 else []
    for i in range(n - 2, -1, -1):
        # (above holds own[:i + 1]; take own[i] out)
        del above[bisect.bisect_left(above, own[i])]
        low = out[i + 1]
        if own[i] > low:
            continue
        j = bisect.bisect_right(above, low)
        upper = above[j] if j < len(above) else None
        out[i] = between(upper, low, own[i])
        if out[i] <= low:  # (equal floats: a bound with no room between)
            out[i] = low + max(abs(low), 1e-6) * 1e-9
        if trace is not None:
            by = trace.last_lift(ids[i]) or stage
            trace.note(
                by,
                ids[i],
                i + 1,
                i + 1,
                f"score lifted by {out[i] - own[i]:+.6f} to stay above the hit below",
                out[i] - own[i],
            )
    return out
