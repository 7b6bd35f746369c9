"""How the MCP server words a call's bad arguments: an argument the tool does not take,
with the name meant (from the tool's own parameter names and a small table of names
other tools and APIs use for the same thing), and one clause per invalid value."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError


def unknown_message(unknown: list[str], properties: dict[str, Any]) -> str:
    named = ", ".join(f"'{u}'" for u in unknown)
    close = [m for u in unknown for m in difflib.get_close_matches(u, properties, n=1)]
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    noun = "argument" if len(unknown) == 1 else "arguments"
    return (
        f"invalid_argument: unknown {noun} {named}{hint}; the arguments are: "
        f"{', '.join(properties)}"
    )


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
        described = properties.get(name, {}).get("description")
        if described:
            text += f"; {name}: {described}"
        parts.append(text)
    return "invalid_argument: " + "; ".join(parts)
