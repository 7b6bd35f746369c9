"""A vault of markdown notes: ``vault index | search | get``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import handle_errors
from layersearch.cli.options import json_option, no_embed_option
from layersearch.cli.output import (
    console,
    cut,
    detail,
    emit_json,
    escape,
    pad,
    print_vectors,
    why,
    wrap,
)
from layersearch.cli.progress import Progress


@click.group()
def vault() -> None:
    """Index, search and read a vault of markdown notes.

    An Obsidian-style folder of notes with YAML frontmatter (docs/vault.md)."""


@vault.command("index")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@no_embed_option
@json_option
@click.pass_obj
@handle_errors
def vault_index(obj: Ctx, path: Path, no_embed: bool, as_json: bool) -> None:
    """Index or re-index the vault at PATH.

    Only added and changed notes are processed; deleted ones are removed."""
    ls = obj.api(create=True)
    with Progress("reading notes", as_json) as bar:
        report = ls.vault.index(
            path, progress=bar.stages("reading", "{stage} chunks"), embed=not no_embed
        )
    if as_json:
        emit_json(report)
        return
    click.echo(
        f"{report.notes} notes in {report.root}: {report.added} added, {report.changed} changed, "
        f"{report.unchanged} unchanged, {report.deleted} deleted ({report.seconds:.2f}s)"
    )
    v = report.vectors
    if v is not None:
        print_vectors(v, "vectors")
    for p in report.problems:
        click.echo(f"problem: {p}", err=True)
    for w in report.warnings:
        click.echo(f"warning: {w}", err=True)


@vault.command("search")
@click.argument("query")
@click.option("--tag", "tags", multiple=True, help="Notes carrying any of these tags (repeatable).")
@click.option("--domain", default=None, help="Only notes of this domain.")
@click.option("--status", "statuses", multiple=True, help="Any of these statuses (repeatable).")
@click.option("--type", "note_type", default=None, help="Only notes of this type.")
@click.option("--from", "date_from", default=None, help="Updated on or after YYYY-MM-DD.")
@click.option("--to", "date_to", default=None, help="Updated on or before YYYY-MM-DD.")
@click.option("--limit", "-n", default=10, show_default=True, type=int, help="How many notes.")
@click.option(
    "--mode",
    default="vector",
    show_default=True,
    type=click.Choice(["vector", "hybrid"]),
    help="vector similarity, or fused with full text (score is then the RRF score). "
    "Without an embedder either ranks by full text alone, with a warning.",
)
@click.option("--min-score", default=None, type=float, help="Drop notes whose cosine is below it.")
@click.option("--explain", is_flag=True, help="Add which channels ranked each note.")
@json_option
@click.pass_obj
@handle_errors
def vault_search(
    obj: Ctx,
    query: str,
    tags: tuple[str, ...],
    domain: str | None,
    statuses: tuple[str, ...],
    note_type: str | None,
    date_from: str | None,
    date_to: str | None,
    limit: int,
    mode: str,
    min_score: float | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Notes most similar to QUERY, best first.

    A table of rank, score and slug (read a note with `vault get SLUG`); --json prints
    the list of {slug, title, path, score} that the MCP tool returns. Without an
    embedder the notes are ranked by full text, and a warning on stderr says so."""
    date_range = None
    if date_from is not None or date_to is not None:
        date_range = {"start": date_from, "end": date_to}
    warnings: list[str] = []
    hits = obj.api(embeds_query=True).vault.search(
        query,
        tags=list(tags) or None,
        domain=domain,
        status=list(statuses) or None,
        note_type=note_type,
        date_range=date_range,
        limit=limit,
        mode=mode,
        min_score=min_score,
        explain=explain,
        warnings=warnings,
    )
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        emit_json(hits)
        return
    _print_notes(hits, explain=explain)


def _print_notes(hits: list[Any], *, explain: bool) -> None:
    """Vault hits for people: rank, score, slug (``vault get`` reads it), one line each;
    with ``explain`` the channels that ranked a note beside it when they fit the line,
    else on the lines under it."""
    from rich.cells import cell_len
    from rich.text import Text

    con = console()
    if not hits:
        click.echo("no notes found", err=True)
        return
    w_num = len(str(len(hits)))
    w_score = 6
    w_slug = max(len("slug"), *(cell_len(h.slug) for h in hits))
    reasons = [why(h) if explain else "" for h in hits]
    left = w_num + 2 + w_score + 2 + w_slug + 2
    beside = all(left + cell_len(r) <= con.width for r in reasons)
    head = f"{'#':>{w_num}}  {'score':>{w_score}}  {pad('slug', w_slug)}" + (
        "  why" if explain and beside else ""
    )
    con.print(Text(head.rstrip(), style="bold"), soft_wrap=True)
    indent = w_num + 2
    for i, (h, reason) in enumerate(zip(hits, reasons, strict=True), 1):
        line = f"{i:>{w_num}}  {h.score:>{w_score}.4f}  {pad(h.slug, w_slug)}"
        if reason and beside:
            line += f"  {reason}"
        con.print(cut(line.rstrip(), con.width), markup=False, soft_wrap=True)
        if reason and not beside:
            for part in wrap(con, f"why: {reason}", max(con.width - indent, 20)):
                con.print(" " * indent + part, markup=False, soft_wrap=True)


@vault.command("get")
@click.argument("slug")
@json_option
@click.pass_obj
@handle_errors
def vault_get(obj: Ctx, slug: str, as_json: bool) -> None:
    """Print the note SLUG and its metadata.

    SLUG is the note's path in the vault without .md, as `vault search` prints it,
    for example "Metrics/Net revenue"."""
    note = obj.api().vault.get_note(slug)
    if as_json:
        emit_json(note)
        return
    con = console()
    con.print(f"[bold]{escape(note.title)}[/]  ({escape(note.path)})", markup=True, highlight=False)
    for key in ("domain", "note_type", "status", "created", "updated"):
        value = getattr(note, key)
        if value is not None:
            detail(con, f"  {key}: {value}")
    if note.tags:
        detail(con, "  tags: " + ", ".join(note.tags))
    for p in note.problems:
        click.echo(f"problem: {p}", err=True)
    con.print()
    con.print(note.body, markup=False, highlight=False)
