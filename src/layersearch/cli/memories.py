"""Memories saved against the semantic layer: ``memory add | list | show | forget``."""

from __future__ import annotations

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import handle_errors
from layersearch.cli.options import json_option, parse_json_arg
from layersearch.cli.output import console, cut, emit_json, print_memory
from layersearch.errors import ConfigError


@click.group()
def memory() -> None:
    """Save, list, show and forget memories.

    A memory is a note or an example query saved against semantic-layer entities."""


@memory.command("add")
@click.argument("learning")
@click.option("--entity", "-e", "entities", multiple=True, help="Entity it is about (repeatable).")
@click.option("--description", default=None, help="Short description (≤ 500 characters).")
@click.option(
    "--query",
    "query_json",
    default=None,
    metavar="SQL|JSON",
    help='The example query: plain SQL (kept as {"sql": …}), or a JSON object whose '
    'entities tag the memory, e.g. \'{"measures": ["shop.orders.net_revenue_total"]}\' '
    "(keys: measures, dimensions, time_dimensions, filters, order, limit, sql).",
)
@json_option
@click.pass_obj
@handle_errors
def memory_add(
    obj: Ctx,
    learning: str,
    entities: tuple[str, ...],
    description: str | None,
    query_json: str | None,
    as_json: bool,
) -> None:
    """Save a memory against entities."""
    query = _example_query(query_json)
    m = obj.api(create=True).save_memory(
        learning, description=description, entities=list(entities), query=query
    )
    if as_json:
        emit_json(m)
    else:
        click.echo(f"saved {m.id}" + (f" on {', '.join(m.entities)}" if m.entities else ""))


def _example_query(text: str | None) -> dict[str, object] | None:
    """``--query``: a JSON object when the text starts like one (``{``, or ``[`` for the
    error), else plain SQL, kept as ``{"sql": text}``."""
    if text is None:
        return None
    if not text.lstrip().startswith(("{", "[")):
        if not text.strip():
            raise ConfigError("--query is empty: give SQL or a JSON object")
        return {"sql": text.strip()}
    query = parse_json_arg(text, "--query")
    if not isinstance(query, dict):
        raise ConfigError("--query must be SQL or a JSON object, not a JSON list")
    return query


@memory.command("list")
@click.option("--limit", default=50, show_default=True, type=int)
@click.option("--offset", default=0, show_default=True, type=int)
@json_option
@click.pass_obj
@handle_errors
def memory_list(obj: Ctx, limit: int, offset: int, as_json: bool) -> None:
    """Memories, newest first."""
    items = obj.read_api().list_memories(limit=limit, offset=offset)
    if as_json:
        emit_json(items)
        return
    if not items:
        click.echo("no memories", err=True)
    width = console().width
    for m in items:
        ents = f"  [{', '.join(m.entities)}]" if m.entities else ""
        click.echo(cut(f"{m.id:<12} {' '.join(m.learning.split())[:100]}{ents}", width))


@memory.command("show")
@click.argument("memory_id")
@json_option
@click.pass_obj
@handle_errors
def memory_show(obj: Ctx, memory_id: str, as_json: bool) -> None:
    """One memory in full."""
    m = obj.read_api().get_memory(memory_id)
    if as_json:
        emit_json(m)
    else:
        print_memory(m)


@memory.command("forget")
@click.argument("memory_id")
@json_option
@click.pass_obj
@handle_errors
def memory_forget(obj: Ctx, memory_id: str, as_json: bool) -> None:
    """Delete a memory."""
    obj.read_api().forget_memory(memory_id)
    if as_json:
        emit_json({"forgotten": memory_id})
    else:
        click.echo(f"forgot {memory_id}")
