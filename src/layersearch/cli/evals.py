"""Measuring search quality on labelled data: the ``eval`` group."""

from __future__ import annotations

import contextlib
import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import handle_errors
from layersearch.cli.options import (
    baseline_option,
    catalog_option,
    channels_option,
    json_option,
    sample_values_option,
)
from layersearch.cli.output import console, emit_json, print_metrics, print_skipped
from layersearch.cli.progress import Progress, status
from layersearch.errors import ConfigError


@click.group("eval")
def eval_group() -> None:
    """Measure search quality on labelled questions."""


def _without_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--without",
        "without",
        multiple=True,
        metavar="STAGE",
        help="Switch a ranking stage off (repeatable; docs/ranking.md lists them).",
    )(f)


def _check_without(without: tuple[str, ...]) -> None:
    """Refuses an unknown ``--without`` stage before any input is read."""
    from layersearch.corpora.entities.config import EntityRankingConfig

    EntityRankingConfig().without_stages(without)


@contextlib.contextmanager
def _catalog_store(
    obj: Ctx,
    catalog_path: str,
    as_json: bool,
    sample_values: int = 0,
    without: tuple[str, ...] = (),
) -> Iterator[Any]:
    """A throwaway in-memory store holding the catalog (and, with an embedder, its
    vectors), for an evaluation; ``sample_values`` as ``load --sample-values``; the
    settings file's ranking with the stages ``without`` names switched off."""
    from layersearch.api import Layersearch

    settings = obj.settings()
    with Layersearch(
        ":memory:",
        embedder=obj.embedder,
        embedder_config=obj.embedder_options,
        ranking=settings.ranking,
    ) as ls:
        ls.entities.ranking = ls.entities.ranking.without_stages(without)
        with status(f"loading {catalog_path}", as_json):
            report = ls.load(catalog_path, sample_values=sample_values)
            if sample_values:  # what could not be sampled, as load says it
                print_skipped(report.skipped)
            ls.corpus()
        if ls.embedder is not None:
            with Progress("embedding the catalog", as_json) as progress:
                ls.embed(progress=progress)
        yield ls


@eval_group.command("schema-linking")
@catalog_option
@click.option(
    "--questions",
    "questions_path",
    required=True,
    help="JSONL (question, db_id, gold_tables, gold_columns[, evidence]) or a Spider dev.json.",
)
@click.option(
    "--mode",
    default="catalog",
    show_default=True,
    type=click.Choice(["catalog", "scoped"]),
    help="catalog: no hint; scoped: the gold database as the datasource filter.",
)
@click.option(
    "--channels",
    "channel_sets",
    multiple=True,
    help="Comma list of bm25,fulltext,vector; repeat to compare sets (default: all that run).",
)
@click.option(
    "--half",
    default=None,
    type=click.Choice(["A", "B"], case_sensitive=False),
    help="Only half A (the first ceil(n/2) questions in file order) or half B (the rest).",
)
@click.option(
    "--limit",
    default=None,
    type=click.IntRange(1),
    help="Only the first N questions (of the half).",
)
@click.option("--details", "details_path", default=None, help="Write per-question JSONL here.")
@click.option("--plot", "plot_path", default=None, help="Draw recall@k curves to this PNG.")
@baseline_option
@_without_option
@sample_values_option
@json_option
@click.pass_obj
@handle_errors
def eval_schema_linking(
    obj: Ctx,
    catalog_path: str,
    questions_path: str,
    mode: str,
    channel_sets: tuple[str, ...],
    half: str | None,
    limit: int | None,
    details_path: str | None,
    plot_path: str | None,
    baselines: tuple[str, ...],
    without: tuple[str, ...],
    sample_values: int,
    as_json: bool,
) -> None:
    """Table and column recall of search on labelled questions."""
    from layersearch.eval.baseline import parse_baselines, run_baselines
    from layersearch.eval.schema_linking import (
        best_of_sets,
        channel_union,
        parse_channel_sets,
        plot_recall,
        read_questions,
        run_schema_linking,
        select_half,
        write_details,
    )

    _check_without(without)
    sets = parse_channel_sets(channel_sets)
    floors = parse_baselines(baselines)
    questions = select_half(read_questions(questions_path, catalog_path), half)[:limit]
    total = len(questions) * (len(sets) + len(floors))
    with (
        _catalog_store(obj, catalog_path, as_json, sample_values, without) as ls,
        Progress("asking questions", as_json, total=total) as advance,
    ):
        off = sorted(ls.entities.ranking.without)
        results = run_schema_linking(ls, questions, mode=mode, channel_sets=sets, progress=advance)
        asked = len(questions) * len(sets)
        floor_results = run_baselines(
            ls, questions, floors, mode=mode, progress=lambda n: advance(asked + n)
        )
    if details_path:
        write_details([*results, *floor_results], details_path)
    if plot_path:
        plot_recall(results, plot_path, title=f"{Path(catalog_path).name}, {mode} mode")
    best, union = best_of_sets(results), channel_union(results)
    floor = {"baselines": [r.summary() for r in floor_results]} if floor_results else {}
    if as_json:
        if len(results) == 1:
            emit_json({**results[0].summary(), "mode": mode, "without": off, **floor})
        else:
            runs = [r.summary() for r in results]
            emit_json(
                {
                    "mode": mode,
                    "without": off,
                    "runs": runs,
                    "best_of_sets": best,
                    "channel_union": union,
                    **floor,
                }
            )
        return
    if off:
        console().print(f"without: {', '.join(off)}")
    _print_eval(results, mode)
    if best is not None:
        print_metrics(f"best of {len(results)} sets", best)
    if union is not None:
        print_metrics("fulltext ∪ vector", union)
    if floor_results:
        _print_against_baselines(results, floor_results, mode)


def _print_against_baselines(results: list[Any], floors: list[Any], mode: str) -> None:
    """Search's channel sets and the baselines side by side, one row each."""
    from layersearch.cli.output import print_rows

    keys = ("table_recall@5", "table_recall@10", "column_recall@10")
    rows = [(r.label or "no channel", [r.metrics.get(k) for k in keys]) for r in results]
    rows += [(f"baseline {f.label}", [f.metrics.get(k) for k in keys]) for f in floors]
    heads = ("ranked by", "table R@5", "table R@10", "column R@10")
    print_rows(f"search against baselines ({mode} mode)", heads, rows)


@eval_group.command("examples")
@catalog_option
@click.option(
    "--pairs",
    "pairs_path",
    required=True,
    help="JSONL: db_id, question, original_question, sql, gold_tables, gold_columns.",
)
@click.option(
    "--ask",
    default="question",
    show_default=True,
    type=click.Choice(["question", "original_question"]),
    help="Which text is asked (the saved example is always original_question).",
)
@channels_option
@click.option(
    "--half",
    type=click.Choice(["A", "B"]),
    default=None,
    help="Only half A (the first ceil(n/2) pairs in file order) or half B (the rest).",
)
@click.option("--limit", default=None, type=click.IntRange(1), help="Only the first N pairs.")
@click.option("--details", "details_path", default=None, help="Write per-pair JSONL here.")
@_without_option
@json_option
@click.pass_obj
@handle_errors
def eval_examples(
    obj: Ctx,
    catalog_path: str,
    pairs_path: str,
    ask: str,
    channels: str | None,
    half: str | None,
    limit: int | None,
    details_path: str | None,
    without: tuple[str, ...],
    as_json: bool,
) -> None:
    """Measure whether saved example queries come back."""
    from layersearch.eval.examples import read_pairs, run_examples
    from layersearch.eval.schema_linking import select_half

    _check_without(without)
    chosen = _one_channel_set(channels)
    pairs = select_half(read_pairs(pairs_path), half)[:limit]
    with (
        _catalog_store(obj, catalog_path, as_json, without=without) as ls,
        Progress("asking questions", as_json, total=len(pairs) * 2) as advance,
    ):
        off = sorted(ls.entities.ranking.without)
        result = run_examples(
            ls,
            pairs,
            ask=ask,
            channels=chosen,
            progress=lambda stage, done, total: advance(
                done + (total if stage.endswith("with memories") else 0)
            ),
        )
    if details_path:
        with Path(details_path).open("w", encoding="utf-8") as fh:
            for row in result.details:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {
        **result.summary(),
        "ask": ask,
        "channels": channels or "default",
        "without": off,
    }
    if as_json:
        emit_json(summary)
        return
    print_metrics(
        f"example queries, asked with {ask}", {**summary, "without": ", ".join(off) or "none"}
    )


@eval_group.command("abbreviate-catalog")
@click.option("--catalog", "catalog_path", required=True, help="A Spider tables.json.")
@click.option(
    "--questions",
    "questions_path",
    default=None,
    help="Questions to map along: a Spider dev.json or JSONL (question, db_id, gold ids).",
)
@click.option("--out-catalog", required=True, help="Where to write the abbreviated tables.json.")
@click.option("--out-questions", default=None, help="Where to write the mapped questions (JSONL).")
@click.option(
    "--style",
    type=click.Choice(["skeleton", "truncate", "short", "mixed"]),
    default="skeleton",
    show_default=True,
    help="skeleton: facility -> fclt; truncate: location -> loca; short: concert -> cnc; "
    "mixed: each word one of the three.",
)
@json_option
@click.pass_obj
@handle_errors
def eval_abbreviate_catalog(
    obj: Ctx,
    catalog_path: str,
    questions_path: str | None,
    out_catalog: str,
    out_questions: str | None,
    style: str,
    as_json: bool,
) -> None:
    """Write an abbreviated copy of a Spider catalog.

    By default every word over 4 letters keeps its first letter, then its consonants,
    at most 4 (facility -> fclt); --style picks another convention. The rules are in
    layersearch.eval.abbreviate."""
    from layersearch.eval.abbreviate import write_abbreviated

    n_db, n_q = write_abbreviated(
        catalog_path, questions_path, out_catalog, out_questions, style=style
    )
    if as_json:
        emit_json(
            {
                "databases": n_db,
                "style": style,
                "catalog": out_catalog,
                "questions": n_q if out_questions else None,
                "questions_file": out_questions,
            }
        )
        return
    click.echo(
        f"wrote {n_db} databases to {out_catalog}"
        + (f" and {n_q} questions to {out_questions}" if out_questions else ""),
        err=True,
    )


@eval_group.command("layers")
@click.option("--data", "data_dir", required=True, help="The folder holding the samples.")
@click.option(
    "--questions",
    "questions_path",
    required=True,
    help="JSONL of {sample, question, gold}: e.g. tests/eval_data/semantic_layers.jsonl.",
)
@channels_option
@click.option("--details", is_flag=True, help="List each question's rank and first hits.")
@json_option
@click.pass_obj
@handle_errors
def eval_layers(
    obj: Ctx,
    data_dir: str,
    questions_path: str,
    channels: str | None,
    details: bool,
    as_json: bool,
) -> None:
    """Measure column recall on imported semantic layers."""
    from layersearch.eval.layers import read_layer_questions, run_layers

    chosen = _one_channel_set(channels)
    obj.settings()
    with status("loading the samples and asking", as_json):
        result = run_layers(
            data_dir, read_layer_questions(questions_path), channels=chosen, embedder=obj.embedder
        )
    if as_json:
        emit_json(result if details else result["summary"])
        return
    from rich.table import Table

    table = Table(title="imported layers: column recall", show_edge=False)
    table.add_column("sample")
    table.add_column("questions", justify="right")
    keys = [k for k in next(iter(result["summary"].values())) if k != "questions"]
    for k in keys:
        table.add_column(k, justify="right")
    for sample, row in result["summary"].items():
        table.add_row(sample, str(row["questions"]), *(f"{row[k]:.3f}" for k in keys))
    console().print(table)
    if details:
        for r in result["questions"]:
            click.echo(f"{r['sample']}  {r['rank']}  {r['question']}  {', '.join(r['top'])}")


@eval_group.command("agent")
@click.option("--data", "data_dir", required=True, help="The folder holding the six layers.")
@click.option(
    "--questions",
    "questions_path",
    default=None,
    help="JSONL of grouped, plain and unanswerable questions (default: the bundled set).",
)
@channels_option
@click.option("--details", is_flag=True, help="List each question's outcome and first hits.")
@json_option
@click.pass_obj
@handle_errors
def eval_agent(
    obj: Ctx,
    data_dir: str,
    questions_path: str | None,
    channels: str | None,
    details: bool,
    as_json: bool,
) -> None:
    """Grouped, plain and unanswerable questions on layers.

    Grouped: measure and grouping dimension both in the top 5 or both in the
    plan; plain: hit@5; and the share of unanswerable and answerable questions
    given the weak-match warning."""
    from layersearch.eval.agent import read_agent_questions, run_agent_eval

    chosen = _one_channel_set(channels)
    obj.settings()
    with status("loading the layers and asking", as_json):
        result = run_agent_eval(
            data_dir, read_agent_questions(questions_path), channels=chosen, embedder=obj.embedder
        )
    if as_json:
        emit_json(result if details else result["summary"])
        return
    summary = result["summary"]
    counts = summary["questions"]
    click.echo(
        f"{counts['grouped']} grouped, {counts['plain']} plain, {counts['none']} unanswerable"
    )
    for key, value in summary.items():
        if key != "questions":
            click.echo(f"  {key:<22} {'n/a' if value is None else f'{value:.3f}'}")
    if details:
        for r in result["questions"]:
            mark = "ok  " if r["ok"] else "MISS"
            flag = " [weak]" if r["flagged"] else ""
            click.echo(f"{mark} {r['type']:<7} {r['sample']}: {r['question']}{flag}")
            click.echo(f"       {', '.join(r['top'])}")


def _print_eval(results: list[Any], mode: str) -> None:
    for res in results:
        title = f"{res.label or 'no channel'} ({mode} mode)"
        print_metrics(title, res.summary(), skip=("channels",))
        for w in res.warnings:
            click.echo(f"warning: {w}", err=True)
        console().print()


def _one_channel_set(channels: str | None) -> list[str] | None:
    """``--channels`` of a command that runs one channel set (default: all that run)."""
    from layersearch.eval.schema_linking import parse_channel_sets

    (chosen,) = parse_channel_sets([channels] if channels else None)
    return chosen


@eval_group.command("conversations")
@click.option("--locomo", "locomo", required=True, help="A LoCoMo file or folder of LoCoMo files.")
@click.option(
    "--channels",
    default=None,
    help="Comma-separated channel sets: fulltext, vector, fulltext+vector (default: all).",
)
@click.option(
    "--cache",
    default=None,
    help="Keep the evaluation store (and its vectors) in this folder between runs.",
)
@click.option(
    "--conversations",
    "chosen",
    default=None,
    help="Comma-separated sample ids (26,30) or 1-based positions in file order (default: all).",
)
@click.option(
    "--details",
    "details_path",
    default=None,
    type=click.Path(dir_okay=False, writable=True),
    help="Write one JSON line per question and channel set (ranked turns, metrics) here.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a message search setting, e.g. --set resolve_dates=true (repeatable).",
)
@click.option(
    "--without",
    "without",
    multiple=True,
    metavar="STAGE",
    help="Switch off a message search stage, e.g. --without session-text (repeatable; "
    "docs/ranking.md lists them).",
)
@click.option(
    "--facts-llm",
    "facts_llm",
    default=None,
    metavar="SPEC",
    help="Extract facts from each session with this chat model (litellm:<model>) first; "
    "only this flag turns it on here ([facts_llm_options] apply). Cached with --cache.",
)
@json_option
@click.pass_obj
@handle_errors
def eval_conversations_cmd(
    obj: Ctx,
    locomo: str,
    channels: str | None,
    cache: str | None,
    chosen: str | None,
    details_path: str | None,
    overrides: tuple[str, ...],
    without: tuple[str, ...],
    facts_llm: str | None,
    as_json: bool,
) -> None:
    """Message search recall and MRR on LoCoMo questions.

    recall_any / recall_all / evidence recall at 5, 10, 20 and MRR, overall and per
    category; the dense channel uses LAYERSEARCH_TURN_EMBEDDER, else --embedder, else the
    local MiniLM model."""
    from layersearch.embed import conversation_embedder, make_embedder
    from layersearch.embed.llm import make_llm
    from layersearch.eval.conversations import (
        CHANNEL_SETS,
        evaluate_locomo,
        parse_channel_sets,
        parse_config,
    )

    sets = parse_channel_sets(channels)
    config = parse_config(overrides).without_stages(without)
    llm = make_llm(facts_llm, obj.settings().facts_llm_options) if facts_llm else None
    embedder = None
    if any("vector" in CHANNEL_SETS[s] for s in sets):
        embedder = conversation_embedder(make_embedder(obj.embedder or "local"))
    with contextlib.ExitStack() as stack:
        write = _details_writer(stack, details_path)

        with Progress("evaluating", as_json) as progress:
            result = evaluate_locomo(
                locomo,
                channel_sets=sets,
                embedder=embedder,
                config=config,
                store_dir=cache,
                conversations=chosen,
                progress=lambda _name, done, total: progress(done, total),
                details=write,
                facts_llm=llm,
            )
    if as_json:
        emit_json(result)
        return
    _print_locomo(result)


def _print_locomo(result: dict[str, Any]) -> None:
    """``eval conversations`` for people: markdown tables, overall then per category."""
    click.echo(
        f"{result['questions']} questions over {len(result['conversations'])} conversations"
        + (f"; dense: {result['embedder']}" if result["embedder"] else "")
        + (f"; without: {', '.join(result['without'])}" if result.get("without") else "")
    )
    if "facts" in result:
        f = result["facts"]
        click.echo(
            f"facts ({f['model']}): {f['sessions']} sessions, {f['extracted']} extracted, "
            f"{f['cached']} cached, {f['failed']} failed"
        )
    columns = [
        f"{m}@{k}" for m in ("recall_any", "recall_all", "evidence_recall") for k in (5, 10, 20)
    ] + ["mrr"]
    click.echo("| channels | " + " | ".join(columns) + " |")
    click.echo("|---" * (len(columns) + 1) + "|")
    for name, r in result["channel_sets"].items():
        click.echo(f"| {name} | " + " | ".join(f"{r[c]:.3f}" for c in columns) + " |")
    bounds = (
        ("best of the sets (oracle)", result.get("best_of_sets")),
        ("fulltext ∪ vector, top k each", result.get("channel_union")),
    )
    for label, r in bounds:
        if r is not None:
            click.echo(
                f"| {label} | "
                + " | ".join(f"{r[c]:.3f}" if c in r else "—" for c in columns)
                + " |"
            )
    top = result["channel_sets"].get(result["channel_set"])
    if top:
        click.echo(f"\nper category ({result['channel_set']}):")
        click.echo("| category | questions | " + " | ".join(columns) + " |")
        click.echo("|---" * (len(columns) + 2) + "|")
        for cat, r in top["per_category"].items():
            click.echo(
                f"| {cat} | {r['questions']} | " + " | ".join(f"{r[c]:.3f}" for c in columns) + " |"
            )
    for w in result["warnings"]:
        click.echo(f"warning: {w}", err=True)


@eval_group.command("vault")
@click.option("--vault", "vault_dir", default=None, help="Vault folder (default: fixtures/vault).")
@click.option(
    "--queries",
    default=None,
    help="Labelled queries JSONL (default: fixtures/vault_queries.jsonl).",
)
@click.option(
    "--mode", default="vector", show_default=True, type=click.Choice(["vector", "hybrid"])
)
@click.option(
    "--without",
    "without",
    multiple=True,
    metavar="STAGE",
    help="Switch off a vault search stage: vector or fulltext (repeatable).",
)
@json_option
@click.pass_obj
@handle_errors
def eval_vault(
    obj: Ctx,
    vault_dir: str | None,
    queries: str | None,
    mode: str,
    without: tuple[str, ...],
    as_json: bool,
) -> None:
    """Vault search recall and MRR on labelled queries.

    Recall@5/@10 and MRR, in a temporary store."""
    from layersearch.eval.vault import evaluate_vault

    result = evaluate_vault(
        vault_dir, queries, mode=mode, embedder=obj.embedder or "fake", without=without
    )
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"{result['queries']} queries, {result['mode']} mode, {result['embedder']}"
        + (f", without {', '.join(result['without'])}" if result["without"] else "")
        + ": "
        f"recall@5 {result['recall@5']:.3f}  recall@10 {result['recall@10']:.3f}  "
        f"mrr {result['mrr']:.3f}"
    )
    for miss in result["misses"]:
        click.echo(f"  missed at 5: {miss['query']}  (wanted {', '.join(miss['missing'])})")


@eval_group.command("scope")
@click.option(
    "--locomo",
    default=None,
    help="LoCoMo file or folder (default: $LAYERSEARCH_SHARED_DATA/locomo or shared/data/locomo).",
)
@click.option(
    "--queries",
    default=None,
    help="Labelled queries JSONL (default: the set in layersearch/eval/data/scope).",
)
@click.option(
    "--half",
    type=click.Choice(["A", "B"], case_sensitive=False),
    default=None,
    help="Only half A (the odd lines of the query file) or half B (the even lines).",
)
@click.option(
    "--limit", default=None, type=click.IntRange(1), help="Only the first N queries (of the half)."
)
@click.option(
    "--details",
    "details_path",
    default=None,
    type=click.Path(dir_okay=False, writable=True),
    help="Write one JSON line per query (gold ids, each tool's hits, scope=all hits, "
    "each miss's rank in its own tool) here.",
)
@_without_option
@json_option
@click.pass_obj
@handle_errors
def eval_scope(
    obj: Ctx,
    locomo: str | None,
    queries: str | None,
    half: str | None,
    limit: int | None,
    details_path: str | None,
    without: tuple[str, ...],
    as_json: bool,
) -> None:
    """Recall@10 of scope=all against calling each tool.

    The mixed store holds models/ and its memories, the LoCoMo conversations and the
    vault fixture, plus the notes written for this evaluation; the baseline is the
    union of the top 10 of search, conversation message search and vault search."""
    from layersearch.eval.scope import DEFAULT_QUERIES, evaluate_scope, stage_switches

    settings = obj.settings()
    stage_switches(without)  # an unknown stage is refused before the store is built
    with contextlib.ExitStack() as stack:
        write = _details_writer(stack, details_path)

        with Progress("building the mixed store", as_json) as progress:
            result = evaluate_scope(
                locomo=locomo,
                queries=queries or DEFAULT_QUERIES,
                embedder=obj.embedder,
                embedder_config=obj.embedder_options,
                limit=limit,
                half=half,
                progress=lambda _stage, done, total: progress(done, total),
                status=progress.relabel,
                details=write,
                without=without,
                ranking=settings.ranking,
            )
    if as_json:
        emit_json(result)
        return
    _print_scope(result)


def _print_scope(result: dict[str, Any]) -> None:
    """``eval scope`` for people: one markdown row per source, baseline and scope=all."""
    counts = result["counts"]
    which = f" (half {result['half']})" if result.get("half") else ""
    click.echo(
        textwrap.fill(
            f"{result['queries']} queries{which}; store: {counts['entities']} entities, "
            f"{counts['memories']} memories, {counts['messages']} messages in "
            f"{counts['conversations']} conversations, {counts['vault_notes']} vault notes; "
            f"dense: {result['embedder']}; without: {', '.join(result['without']) or 'none'}",
            width=80,
        )
    )
    base, scoped = result["baseline"], result["scope_all"]
    split, own = result.get("best_split"), result.get("own_split")
    click.echo("| source | queries | baseline | scope=all | best split | own split |")
    click.echo("|---|---|---|---|---|---|")

    def cell(run: dict[str, Any] | None, source: str | None = None) -> str:
        if run is None:
            return "n/a"
        value = run["recall@10"] if source is None else run["per_source"][source]["recall@10"]
        return "n/a" if value is None else f"{value:.3f}"

    for source, row in base["per_source"].items():
        click.echo(
            f"| {source} | {row['queries']} | {cell(base, source)} | {cell(scoped, source)} "
            f"| {cell(split, source)} | {cell(own, source)} |"
        )
    click.echo(
        f"| overall | {result['queries']} | {cell(base)} | {cell(scoped)} | {cell(split)} "
        f"| {cell(own)} |"
    )
    click.echo("(recall@10; the baseline reads up to 30 items, the others 10; the splits")
    click.echo("are oracles: ten places split with the labels over the single-source")
    click.echo("calls' top 10s (best) or the lists scope=all fuses (own))")
    if result["scope_unsupported"]:
        click.echo(f"scope=all not measured: {result['scope_unsupported']}", err=True)
    for w in result["warnings"]:
        if not w.startswith("scope=all not run"):
            click.echo(f"warning: {w}", err=True)


def _details_writer(
    stack: contextlib.ExitStack, details_path: str | None
) -> Callable[[dict[str, Any]], None] | None:
    """A function writing one record per line to ``--details`` (None without it); the
    file closes with ``stack``. A file that cannot be opened is a ConfigError naming it."""
    if details_path is None:
        return None
    try:
        out = stack.enter_context(open(details_path, "w", encoding="utf-8"))  # noqa: SIM115 - the stack closes it
    except OSError as exc:
        raise ConfigError(f"--details {details_path}: {exc.strerror}") from exc

    def write(record: dict[str, Any]) -> None:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")

    return write
