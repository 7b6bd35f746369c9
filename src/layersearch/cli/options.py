"""Options more than one command takes, and the parsing of option values."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from layersearch.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
again_option = click.option(
    "--all",
    "again",
    is_flag=True,
    help="Embed every text again, not only new or changed ones (after an upgrade that "
    "moved the model's arithmetic: another ONNX Runtime, another kind of CPU).",
)

no_embed_option = click.option(
    "--no-embed", is_flag=True, help="Do not compute vectors even with an embedder."
)

catalog_option = click.option(
    "--catalog", "catalog_path", required=True, help="Catalog in any format `load` reads."
)

#: The most values sampled per column: ``importers.database.MAX_SAMPLE_VALUES`` (not
#: imported, so that starting the CLI does not load the importers; a test keeps the two
#: equal).
MOST_SAMPLE_VALUES = 1000

#: ``--sample-values N``: ``load`` and ``eval schema-linking`` read catalogs alike.
sample_values_option = click.option(
    "--sample-values",
    default=0,
    show_default=True,
    type=click.IntRange(0, MOST_SAMPLE_VALUES),
    help="Sample up to N distinct values per text column: from a database, or from the "
    "SQLite files beside a Spider/BIRD catalog.",
)

#: One channel set for an evaluation (``eval examples``, ``eval layers``).
channels_option = click.option(
    "--channels", default=None, help="Comma list of bm25,fulltext,vector (default: all that run)."
)

#: ``--baseline`` choices: ``layersearch.eval.baseline.BASELINES``, named here so that
#: --help does not import tantivy
BASELINE_NAMES = ("tantivy", "tantivy-names", "tantivy-max", "tantivy-stem")
baseline_option = click.option(
    "--baseline",
    "baselines",
    multiple=True,
    type=click.Choice(BASELINE_NAMES),
    metavar="NAME",
    help=f"Also rank with a plain tantivy index, as its own row: {', '.join(BASELINE_NAMES)} "
    "(repeatable; docs/quality.md).",
)


def format_option(help: str, choice: click.ParamType | None = None) -> Callable[[F], F]:
    """``--format``: how to read the input, ``auto`` (detected) by default."""
    return click.option(
        "--format", "fmt", default="auto", show_default=True, type=choice, help=help
    )


def limit_option(default: int) -> Callable[[F], F]:
    return click.option(
        "--limit", "-n", default=default, show_default=True, type=int, help="How many results."
    )


class LazyChoice(click.Choice[str]):
    """A ``click.Choice`` whose choices are read the first time they are needed (``--help``,
    parsing the value), so the module that lists them is imported only by the command
    that takes the option, not by every start of the CLI."""

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load
        self._choices: tuple[str, ...] | None = None
        self.case_sensitive = True

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        if self._choices is None:
            self._choices = tuple(self._load())
        return self._choices

    @choices.setter
    def choices(self, value: Iterable[str]) -> None:
        self._choices = tuple(value)


def _layer_formats() -> list[str]:
    from layersearch.semantic.importers import FORMATS

    return ["auto", *FORMATS]


#: ``load --format``: the importers' formats, and auto-detection.
layer_format_choice = LazyChoice(_layer_formats)


def parse_json_arg(text: str | None, what: str) -> Any:
    if text is None:
        return None
    from layersearch.jsonlimits import load_json

    try:
        return load_json(text, what)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{what} is not valid JSON: {exc.msg} at column {exc.colno}") from exc


def parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``k=v`` pairs; v is JSON when it parses (numbers, lists, true), else a string."""
    from layersearch.jsonlimits import load_json

    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--param '{pair}' must look like name=value")
        k, v = pair.split("=", 1)
        try:
            out[k.strip()] = load_json(v, f"--param {k.strip()}")
        except json.JSONDecodeError:
            out[k.strip()] = v
    return out
