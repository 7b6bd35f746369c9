"""How the MCP server words a call's bad arguments: an argument the tool does not take,
with the name meant (from the tool's own parameter names and a small table of names
other tools and APIs use for the same thing), and one clause per invalid value."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

#: names agents and other tools use for the same argument; a name in a group points at
#: the one member of that group the tool takes (``limit`` → ``max_results``)
ALIASES: tuple[frozenset[str], ...] = (
    frozenset({"question", "query", "q", "text", "term", "search", "search_term", "prompt"}),
    frozenset({"max_results", "limit", "k", "top_k", "n", "size", "page_size", "max_hits"}),
    frozenset({"ids", "id", "entity_ids", "entity_id"}),
    frozenset({"memory_id", "id", "memory"}),
    frozenset({"slug", "note", "note_id", "path"}),
    frozenset({"datasource", "database", "db", "db_id"}),
    frozenset({"entities", "names", "entity"}),
    frozenset({"model", "model_id", "table"}),
)


def meant(name: str, properties: Iterable[str]) -> str | None:
    """The argument of ``properties`` that ``name`` most likely stands for: its alias
    in :data:`ALIASES` the tool takes (the first in the tool's order when it takes
    several: ``question`` before ``query`` in search), else a close spelling."""
    props = [p for p in properties if p != name]
    for group in ALIASES:
        if name in group:
            same = [p for p in props if p in group]
            if same:
                return same[0]
    close = difflib.get_close_matches(name, props, n=1)
    return close[0] if close else None


def unknown_message(unknown: list[str], properties: dict[str, Any]) -> str:
    named = ", ".join(f"'{u}'" for u in unknown)
    close = [f"'{m}'" for u in unknown if (m := meant(u, properties)) is not None]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    noun = "argument" if len(unknown) == 1 else "arguments"
    listing = f"{' The' if hint else '; the'} arguments are: {', '.join(properties)}"
    return f"invalid_argument: unknown {noun} {named}{hint}{listing}"


def flat_json(text: str) -> str:
    """A tool result's JSON text on one line, without indentation (what the SDK writes
    indented); any other text unchanged."""
    if not text.startswith(("{\n", "[\n")):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def invalid_message(exc: ValidationError, properties: dict[str, Any]) -> str:
    """One clause per failed argument: what was wrong, the value given, what it takes."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [str(x) for x in err.get("loc", ())]
        name = loc[0] if loc else "arguments"
        where = name + "".join(f"[{x}]" if x.isdigit() else f".{x}" for x in loc[1:])
        msg = str(err.get("msg", "is invalid"))
        if err.get("type") == "missing":
            text = f"missing required argument {where}"
        elif msg.startswith("Input should "):
            text = f"{where} should {msg[len('Input should ') :]}"
        else:
            text = f"{where}: {msg[:1].lower()}{msg[1:]}"
        if err.get("type") != "missing" and "input" in err:
            shown = repr(err["input"])
            text += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
        other = meant(name, properties) if isinstance(err.get("input"), str) else None
        if other is not None and other in _alias_group(name):
            text += f"; did you mean '{other}'?"
        described = properties.get(name, {}).get("description")
        if described:
            text += f"; {name}: {described}"
        parts.append(text)
    return "invalid_argument: " + "; ".join(parts)


def _alias_group(name: str) -> set[str]:
    return {m for group in ALIASES if name in group for m in group}
