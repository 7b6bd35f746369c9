"""Past conversations and their summaries: ``conversations import | embed | search |
semantic`` and ``summaries import | search``."""

from __future__ import annotations

from typing import Any

import click

from layersearch.cli.context import Ctx, with_embedder
from layersearch.cli.errors import handle_errors
from layersearch.cli.options import (
    again_option,
    format_option,
    json_option,
    limit_option,
    no_embed_option,
)
from layersearch.cli.output import emit_json
from layersearch.cli.progress import Progress, status
from layersearch.errors import ConfigError


def _conversation_formats() -> list[str]:
    from layersearch.corpora.conversations import FORMATS

    return ["auto", *sorted(FORMATS)]


def _embed(ls: Any, as_json: bool) -> Any:
    """The vectors of what an import added, when an embedder is configured."""
    if ls.embedder is None:
        return []
    with Progress("embedding", as_json) as progress:
        return ls.conversations.embed(progress=progress)


def _facts_llm(obj: Ctx, flag: str | None) -> Any:
    """The chat model that extracts facts at import: --facts-llm, else the settings'
    facts_llm (layersearch.toml, $LAYERSEARCH_FACTS_LLM); ``None`` when off."""
    settings = obj.settings()
    spec = flag if flag is not None else settings.facts_llm
    from layersearch.embed.llm import make_llm

    return make_llm(spec, settings.facts_llm_options)


def _print_problems(problems: list[str]) -> None:
    for p in problems:
        click.echo(f"skipped: {p}", err=True)


@click.group()
def conversations() -> None:
    """Import and search past conversations.

    Chat exports (ChatGPT, Claude, Cursor, Gemini, …), agent sessions and LoCoMo files."""


@conversations.command("import")
@click.argument("path")
@format_option(
    "Export format: auto, chatgpt, claude, claude_code, cursor, gemini, generic, locomo."
)
@no_embed_option
@click.option(
    "--facts-llm",
    "facts_llm",
    default=None,
    metavar="SPEC",
    help="Extract facts from each session with this chat model (litellm:<model>), "
    "cached in the store; `none` turns off a configured one. Default: facts_llm in "
    "layersearch.toml or LAYERSEARCH_FACTS_LLM, else off.",
)
@json_option
@click.pass_obj
@handle_errors
def conversations_import(
    obj: Ctx, path: str, fmt: str, no_embed: bool, facts_llm: str | None, as_json: bool
) -> None:
    """Import a file or folder of chat exports.

    Idempotent: a newer export of the same conversations adds only what is new."""
    if fmt not in _conversation_formats():
        raise ConfigError(
            f"unknown format '{fmt}': use one of {', '.join(_conversation_formats())}"
        )
    llm = _facts_llm(obj, facts_llm)
    with status(f"reading {path}", as_json):
        from layersearch.corpora.conversations import import_conversations

        parsed = import_conversations(path, fmt)
    ls = obj.api(create=True)  # after the input is read: a file that fails creates no store
    with Progress("importing", as_json) as progress:
        report = ls.conversations.import_conversations(
            parsed.conversations, problems=parsed.problems, progress=progress
        )
    facts = None
    if llm is not None:
        with Progress(f"extracting facts with {llm.model}", as_json) as progress:
            facts = ls.conversations.extract_facts(
                llm, sorted({c.id for c in parsed.conversations}), progress=progress
            )
    embedded = _embed(ls, as_json) if not no_embed else []
    if as_json:
        out: dict[str, Any] = {"import": report, "embedded": embedded}
        if facts is not None:
            out["facts"] = facts
        emit_json(out)
        return
    click.echo(
        f"{report.conversations} conversations, {report.messages} messages read: "
        f"{report.conversations_added} conversations and {report.messages_added} messages added, "
        f"{report.conversations_updated} conversations updated, "
        f"{report.messages_removed} superseded messages removed; "
        f"{report.injected} injected messages kept out of search"
    )
    if facts is not None:
        click.echo(
            f"facts ({facts.model}): {facts.sessions} sessions, {facts.extracted} extracted "
            f"({facts.facts} facts), {facts.cached} cached, {facts.failed} failed"
        )
    for r in embedded:
        click.echo(f"{r.corpus}: {r.embedded} embedded, {r.unchanged} unchanged — {r.model}")
    _print_problems(report.problems)


@conversations.command("embed")
@again_option
@json_option
@click.pass_obj
@handle_errors
def conversations_embed(obj: Ctx, again: bool, as_json: bool) -> None:
    """Compute message and summary vectors (incremental).

    Uses the configured embedder (--embedder); --all embeds every text again."""
    ls = with_embedder(obj)
    with Progress("embedding", as_json) as progress:
        reports = ls.conversations.embed(progress=progress, again=again)
    if as_json:
        emit_json(reports)
        return
    for r in reports:
        click.echo(
            f"{r.corpus}: {r.embedded} embedded, {r.unchanged} unchanged, {r.pruned} pruned — {r.model}"
        )


@conversations.command("search")
@click.argument("term", required=False, default="")
@click.option("--role", default=None, help="Only messages by user or assistant.")
@limit_option(15)
@json_option
@click.pass_obj
@handle_errors
def conversations_search(obj: Ctx, term: str, role: str | None, limit: int, as_json: bool) -> None:
    """Messages containing TERM, newest first.

    TERM is matched case-insensitively and literally (% and _ are plain
    characters). With no TERM and --role user: the most recent questions asked."""
    result = obj.api().conversations.search_conversations(term, limit=limit, role=role)
    if as_json:
        emit_json(result)
    else:
        click.echo(result.markdown)


@conversations.command("semantic")
@click.argument("query")
@limit_option(10)
@json_option
@click.pass_obj
@handle_errors
def conversations_semantic(obj: Ctx, query: str, limit: int, as_json: bool) -> None:
    """Messages nearest in meaning to QUERY.

    Needs an embedder (--embedder) and `conversations embed`."""
    result = obj.api(embeds_query=True).conversations.semantic_search(query, limit=limit)
    if as_json:
        emit_json(result)
    else:
        click.echo(result.markdown)


@click.group()
def summaries() -> None:
    """Import and search conversation summaries."""


@summaries.command("import")
@click.argument("path")
@json_option
@click.pass_obj
@handle_errors
def summaries_import(obj: Ctx, path: str, as_json: bool) -> None:
    """Import conversation summaries from JSONL.

    The format is in docs/conversations.md; bad lines are reported, not imported."""
    ls = obj.api(create=True)
    report = ls.conversations.import_summaries(path)
    embedded = _embed(ls, as_json)
    if as_json:
        emit_json({"import": report, "embedded": embedded})
        return
    click.echo(
        f"{report.summaries} summaries read: {report.added} added, {report.updated} updated"
        + (
            f"; {report.unknown_conversations} for conversations not imported yet"
            if report.unknown_conversations
            else ""
        )
    )
    _print_problems(report.problems)


@summaries.command("search")
@click.argument("query", required=False, default="")
@click.option(
    "--extract",
    default="summary",
    show_default=True,
    help="summary, questions, decisions or quotes.",
)
@limit_option(10)
@click.option("--domain", default=None, help="Domain contains this text.")
@click.option("--importance", default=None, help="breakthrough, significant or routine.")
@click.option(
    "--thinking-stage", default=None, help="exploring, crystallizing, refining or executing."
)
@click.option("--source", default=None, help="Conversation source (claude, chatgpt, …).")
@click.option("--mode", default="hybrid", show_default=True, help="hybrid, fts or vector.")
@click.option(
    "--explain", is_flag=True, help="Add which channels ranked each summary and what moved it."
)
@json_option
@click.pass_obj
@handle_errors
def summaries_search(obj: Ctx, query: str, as_json: bool, **filters: Any) -> None:
    """Summaries matching QUERY, projected to one field (--extract)."""
    # The options (extract, limit, domain, importance, thinking_stage, source, mode,
    # explain) are the service's keyword arguments under the same names.
    result = obj.api().conversations.search_summaries(query, **filters)
    if as_json:
        emit_json(result)
        return
    click.echo(result.markdown)
    if filters["explain"] and result.hits:
        from layersearch.cli.output import console, detail
        from layersearch.types import stages_text

        con = console()
        con.print()
        for h in result.hits:
            ranks = sorted(h.channels.items(), key=lambda kv: (kv[1], kv[0]))
            why = " + ".join(f"{c} #{r}" for c, r in ranks) or "newest first (no query)"
            moved = f"; moved: {stages_text(h.stages)}" if h.stages else ""
            detail(con, f"{h.rank}. {h.summary_id} {h.score:.4f}  why: {why}{moved}")
