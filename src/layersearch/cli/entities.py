"""Searching the semantic layer and its memories: ``search``, ``inspect``, ``demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import handle_errors
from layersearch.cli.options import json_option, parse_json_arg, parse_params
from layersearch.cli.output import (
    console,
    detail,
    emit_json,
    escape,
    print_hits,
    print_memory,
    print_plan,
)
from layersearch.errors import ConfigError


@click.command()
@click.argument("question", required=False)
@click.option(
    "--question", "-q", "question_opt", default=None, help="The question (same as the argument)."
)
@click.option("--entity", "-e", "entities", multiple=True, help="Entity name or id (repeatable).")
@click.option(
    "--query", "query_json", default=None, help="Example-query JSON whose entities count."
)
@click.option("--datasource", "-d", default=None, help="Scope every channel to one datasource.")
@click.option(
    "--filter", "cypher", default=None, help="Read-only openCypher filter returning `id`."
)
@click.option("--param", "params", multiple=True, help="Filter parameter name=value (repeatable).")
@click.option("--max-results", "-n", default=10, show_default=True, type=int, help="How many hits.")
@click.option(
    "--max-entities", type=int, default=None, help="Also list this many entities, ranked alone."
)
@click.option(
    "--max-memories", type=int, default=None, help="Also list this many notes, ranked alone."
)
@click.option(
    "--max-example-queries",
    type=int,
    default=None,
    help="Also list this many example queries, ranked alone.",
)
@click.option("--channels", default=None, help="Comma-separated subset of bm25,fulltext,vector.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="Corpora to search: semantic (default), memory, conversations, vault, summaries, "
    "all (every one but summaries; repeatable or a comma list).",
)
@click.option(
    "--max-per-source", type=int, default=None, help="Scoped search: at most this many per source."
)
@click.option("--tag", "tags", multiple=True, help="Scoped search: vault notes with this tag.")
@click.option("--status", "statuses", multiple=True, help="Scoped search: vault notes' status.")
@click.option("--role", default=None, help="Scoped search: conversation messages of this role.")
@click.option("--full", is_flag=True, help="Show each hit's whole text.")
@click.option("--explain", is_flag=True, help="Show which channels ranked each hit.")
@json_option
@click.pass_obj
@handle_errors
def search(
    obj: Ctx,
    question: str | None,
    question_opt: str | None,
    entities: tuple[str, ...],
    query_json: str | None,
    datasource: str | None,
    cypher: str | None,
    params: tuple[str, ...],
    max_results: int,
    max_entities: int | None,
    max_memories: int | None,
    max_example_queries: int | None,
    channels: str | None,
    scopes: tuple[str, ...],
    max_per_source: int | None,
    tags: tuple[str, ...],
    statuses: tuple[str, ...],
    role: str | None,
    full: bool,
    explain: bool,
    as_json: bool,
) -> None:
    """Search entities and memories by question or entity names.

    Give a question, --entity names, or both."""
    from layersearch.types import SearchRequest

    if question is not None and question_opt is not None:
        raise ConfigError("give the question once: as the argument or with --question")
    question = question if question is not None else question_opt
    query = parse_json_arg(query_json, "--query")
    if query is not None and not isinstance(query, dict):
        raise ConfigError('--query must be a JSON object, e.g. \'{"measures": ["total_revenue"]}\'')
    req = SearchRequest(
        entities=list(entities) or None,
        query=query,
        question=question,
        datasource=datasource,
        max_results=max_results,
        compact=not full,
        cypher_filter=cypher,
        params=parse_params(params) or None,
        explain=explain,
        channels=[c.strip() for c in channels.split(",") if c.strip()] if channels else None,
        max_entities=max_entities,
        max_memories=max_memories,
        max_example_queries=max_example_queries,
        scope=list(scopes) or None,
        max_per_source=max_per_source,
        tags=list(tags) or None,
        status=list(statuses) or None,
        role=role,
    )
    # A scoped search reads the corpora it names, each saying when it is empty.
    dense = question is not None and (req.channels is None or "vector" in req.channels)
    # The command's one search reads the store several times (its opening's check, the
    # snapshot, vectors, the plan): one opened file serves them all. (Not in a server: its
    # overlapping searches would keep the file open and starve another process's writer.)
    opener = obj.read_api if req.scope is None else obj.api
    resp = opener(embeds_query=dense, pinned=True).search(req)
    if as_json:
        emit_json(resp)
        return
    print_hits(resp, full=full, explain=explain)
    if resp.plan is not None:
        print_plan(resp.plan, explain=explain)
    for title, bucket in (
        ("entities", resp.entities),
        ("memories", resp.memories),
        ("example queries", resp.example_queries),
    ):
        if bucket is not None:
            console().print(f"\n[bold]{title}[/]", markup=True)
            print_hits(
                type(resp)(results=bucket, warnings=[]), full=full, explain=explain, empty=title
            )


@click.command()
@click.argument("ids", nargs=-1, required=True)
@json_option
@click.pass_obj
@handle_errors
def inspect(obj: Ctx, ids: tuple[str, ...], as_json: bool) -> None:
    """Full detail for the ids of any hits.

    Entity ids, memory:<n>, conversation:<message> and vault:<slug>."""
    from layersearch.api import Layersearch

    scoped = Layersearch.scoped_ids(ids)
    resp = (obj.api() if scoped else obj.read_api()).inspect(list(ids))
    if as_json:
        emit_json(resp)
        return
    con = console()
    for w in resp.warnings:
        click.echo(f"warning: {w}", err=True)
    for e in resp.entities:
        con.print(
            f"[bold]{e.kind} {escape(e.id)}[/]" + ("  (hidden)" if e.hidden else ""), markup=True
        )
        for key in ("label", "data_type", "description", "formula", "physical"):
            value = getattr(e, key)
            if value:
                detail(con, f"  {key}: {value}")
        if e.primary_key:
            detail(con, "  primary key")
        if e.values:
            detail(con, "  values: " + ", ".join(e.values[:20]))
        for j in e.joins:
            detail(con, f"  joins {j['target']} ({j.get('cardinality') or 'unknown'})")
        if e.references:
            detail(con, "  references: " + ", ".join(e.references))
        if e.children:
            detail(con, f"  contains {len(e.children)}: " + ", ".join(e.children[:30]))
        if e.memories:
            detail(con, "  memories: " + ", ".join(e.memories))
    for m in resp.memories:
        print_memory(m)
    for c in resp.conversations or []:
        con.print(f"[bold]conversation {escape(c.id)}[/]", markup=True)
        detail(con, f"  {c.role}" + (f" ({c.speaker})" if c.speaker else ""))
        con.print(c.content, markup=False)
    for n in resp.notes or []:
        con.print(f"[bold]vault note {escape(n.slug)}[/]  {escape(n.title)}", markup=True)
        con.print(n.body, markup=False)
    for d in resp.documents or []:
        con.print(f"[bold]{escape(d.source)} {escape(d.id)}[/]  {escape(d.title)}", markup=True)
        con.print(d.text, markup=False)


def bundled_models() -> Path:
    """The sample semantic layer: ./models, else the one in the source checkout."""
    here = Path("models")
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[3] / "models"


DEMO_SEARCHES: list[dict[str, Any]] = [
    {"question": "monthly revenue by store"},
    {"entities": ["orders.order_total"], "question": "tax", "explain": True},
    {"entities": ["shop.orders.net_revenue"]},
    {"question": "which marketing campaigns brought signups"},
]


@click.command()
@click.option(
    "--models",
    "models_path",
    default=None,
    help="Semantic layer to demo on (default: the bundled models/).",
)
@json_option
@handle_errors
def demo(models_path: str | None, as_json: bool) -> None:
    """Run sample searches on the bundled models.

    Loads the sample semantic layer into a temporary store (yours is not touched) and
    prints a few searches with their results."""
    from layersearch.api import Layersearch
    from layersearch.types import SearchRequest

    path = Path(models_path) if models_path else bundled_models()
    if not path.exists():
        raise ConfigError(f"no models at {path}: pass --models PATH")
    out: list[dict[str, Any]] = []
    with Layersearch(":memory:") as ls:
        report = ls.load(path)
        if not as_json:
            click.echo(
                f"loaded {report.entities} entities, {report.memories_added} memories from {path} "
                "into a temporary store\n"
            )
        for kwargs in DEMO_SEARCHES:
            req = SearchRequest(**kwargs)
            resp = ls.search(req)
            out.append(
                {
                    "request": req.model_dump(exclude_none=True, exclude_defaults=True),
                    "response": resp,
                }
            )
            if not as_json:
                args = (
                    " ".join([f'"{req.question}"'] if req.question else [])
                    + "".join(f" --entity {e}" for e in req.entities or [])
                    + (" --explain" if req.explain else "")
                )
                click.echo(f"$ layersearch search {args.strip()}")
                print_hits(resp, full=False, explain=req.explain)
                click.echo()
    if as_json:
        emit_json({"loaded": report, "searches": out})
