"""``eval plans``: whether a query plan groups by the column the gold SQL groups by."""

from __future__ import annotations

import contextlib

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import handle_errors
from layersearch.cli.evals import (
    _catalog_store,
    _check_without,
    _details_writer,
    _without_option,
    eval_group,
)
from layersearch.cli.options import catalog_option, json_option
from layersearch.cli.output import console, emit_json, print_metrics
from layersearch.cli.progress import Progress
from layersearch.errors import ConfigError


@eval_group.command("plans")
@catalog_option
@click.option(
    "--questions",
    "questions_path",
    required=True,
    help="JSONL with sql (Spider-Syn rows) or a Spider dev.json.",
)
@click.option(
    "--wording",
    default="question",
    show_default=True,
    type=click.Choice(["question", "original_question", "both"]),
    help="Which question of a record to ask (Spider-Syn rows hold two).",
)
@click.option("--limit", default=None, type=click.IntRange(1), help="Only the first N questions.")
@click.option("--details", "details_path", default=None, help="Write per-question JSONL here.")
@_without_option
@json_option
@click.pass_obj
@handle_errors
def eval_plans(
    obj: Ctx,
    catalog_path: str,
    questions_path: str,
    wording: str,
    limit: int | None,
    details_path: str | None,
    without: tuple[str, ...],
    as_json: bool,
) -> None:
    """Plans' grouping columns against the gold SQL's GROUP BY.

    Asks, in catalog mode, each question whose SQL groups and whose words name
    a grouping; the share whose plan groups by a GROUP BY column, by a column of
    a table the SQL reads, and in the right database (docs/agent.md)."""
    from layersearch.eval.plans import plan_items, run_plans
    from layersearch.eval.schema_linking import read_questions

    _check_without(without)
    items = plan_items(read_questions(questions_path, catalog_path), wording)[:limit]
    if not items:
        raise ConfigError(
            f"{questions_path}: no question whose SQL has a GROUP BY and whose words name "
            "a grouping (by, per, each, ...): nothing to plan"
        )
    with contextlib.ExitStack() as stack:
        write = _details_writer(stack, details_path)
        ls = stack.enter_context(_catalog_store(obj, catalog_path, as_json, without=without))
        off = sorted(ls.entities.ranking.without)
        with Progress("asking questions", as_json, total=len(items)) as advance:
            summary = run_plans(ls, items, progress=advance)
        if write is not None:
            for item in items:
                write(
                    {
                        "question": item.question,
                        "db_id": item.db_id,
                        "group_by": sorted(item.gold),
                        "planned": item.planned,
                    }
                )
    if as_json:
        emit_json({**summary, "wording": wording, "without": off})
        return
    if off:
        console().print(f"without: {', '.join(off)}")
    print_metrics(f"plans ({wording})", summary)
