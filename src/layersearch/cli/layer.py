"""The store and the semantic layer in it: ``init``, ``load``, ``embed``."""

from __future__ import annotations

import click

from layersearch.cli.context import Ctx, with_embedder
from layersearch.cli.errors import handle_errors
from layersearch.cli.options import (
    again_option,
    format_option,
    json_option,
    layer_format_choice,
    no_embed_option,
    sample_values_option,
)
from layersearch.cli.output import emit_json, print_skipped, print_vectors
from layersearch.cli.progress import Progress, status


@click.command()
@json_option
@click.pass_obj
@handle_errors
def init(obj: Ctx, as_json: bool) -> None:
    """Create an empty store (nothing happens if it exists)."""
    ls = obj.api(create=True, keep_empty=True)
    gen = ls.store.generation()
    info = {"store": ls.store.location, "generation": gen}
    if as_json:
        emit_json(info)
    else:
        click.echo(f"store ready at {ls.store.location}")


@click.command()
@click.argument("path")
@format_option("Input format.", layer_format_choice)
@click.option(
    "--datasource", default=None, help="Datasource name for formats that do not carry one."
)
@sample_values_option
@no_embed_option
@json_option
@click.pass_obj
@handle_errors
def load(
    obj: Ctx,
    path: str,
    fmt: str,
    datasource: str | None,
    sample_values: int,
    no_embed: bool,
    as_json: bool,
) -> None:
    """Load or re-load a semantic layer; memories are kept.

    With an embedder configured, the vectors of what changed are computed then (as
    `layersearch embed` does)."""
    from layersearch.api import Layersearch

    with status(f"loading {path}", as_json):
        # read before the store is opened: a path that does not load creates no store
        catalog = Layersearch.read_catalog(
            path, fmt, datasource=datasource, sample_values=sample_values
        )
        ls = obj.api(create=True)
        report = ls.load_catalog(catalog)
    embedded = None
    if ls.embedder is not None and not no_embed:
        with Progress("embedding", as_json) as progress:
            embedded = ls.embed(progress=progress)
    if as_json:
        # Without vectors computed, the report alone, as before.
        emit_json(report if embedded is None else {**report.model_dump(), "embedded": embedded})
        return
    click.echo(
        f"loaded {_datasources(report.datasources)}: {report.entities} entities in "
        f"{report.models} models; {report.memories_added} memories added"
    )
    for r in embedded or []:
        print_vectors(r, r.corpus)
    print_skipped(report.skipped)
    for t in report.unresolved_tags:
        click.echo(f"tag no longer resolves: {t}", err=True)


def _datasources(names: list[str]) -> str:
    """``finance, marketing, shop``; a long list as ``166 datasources (academic, …)``."""
    if len(names) <= 4:
        return ", ".join(names) or "no datasource"
    return f"{len(names)} datasources ({', '.join(names[:2])}, …)"


@click.command()
@again_option
@json_option
@click.pass_obj
@handle_errors
def embed(obj: Ctx, again: bool, as_json: bool) -> None:
    """Compute the stored vectors for the dense channel.

    Uses the configured embedder (--embedder); incremental and resumable (--all
    embeds every text again). With the [ann] extra, a layer of 200,000 vectors or
    more also gets its search graph, kept beside the store."""
    ls = with_embedder(obj)
    with Progress("embedding", as_json) as progress:
        reports = ls.embed(progress=progress, again=again)
    if as_json:
        emit_json(reports)
        return
    for r in reports:
        print_vectors(r, r.corpus, unchanged="unchanged (skipped)")
