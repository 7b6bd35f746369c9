"""Entities and memories as ranking documents (tantivy fields) and as rendered hits."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from layersearch.ranking.fulltext import FTDoc
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.types import Memory

SHORT_DESCRIPTION = 160


def entity_doc(e: Entity, id_hash: int | None = None) -> FTDoc:
    """The full-text document of ``e``; ``id_hash``: its id's key hash, when known."""
    parent = e.model if e.kind in ("column", "measure", "aggregation") else e.datasource
    if e.kind == "datasource":
        parent = None
    return FTDoc(
        id=e.id,
        kind=e.kind,
        scopes=(e.datasource,),
        fields={
            "name": e.name,
            "label": e.label,
            "parent": parent,
            "description": e.description,
            "formula": e.formula,
            "values": " ".join(e.values) if e.values else None,
        },
        id_hash=id_hash,
    )


def memory_doc(m: Memory) -> FTDoc:
    scopes = sorted({t.split(".", 1)[0] for t in m.entities if not t.startswith("memory:")})
    tags = " ".join(t.rsplit(".", 1)[-1] for t in m.entities)
    return FTDoc(
        id=m.id,
        kind="memory",
        scopes=scopes,
        fields={
            "text": m.learning,
            "description": m.description,
            # an example query is code, as a measure's formula is: its weakest field
            "formula": one_line_query(m.query) if m.query else None,
            "tags": tags or None,
        },
    )


def _short(text: str | None, limit: int = SHORT_DESCRIPTION) -> str:
    if not text:
        return ""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


def describe_entity(e: Entity) -> str:
    head = e.label if e.label and e.label.lower() != e.name.lower() else ""
    typ = f"[{e.data_type}]" if e.data_type else ""
    parts = [p for p in (head, typ, _short(e.description, 120)) if p]
    if e.formula and e.kind in ("measure", "aggregation"):
        parts.append(f"= {_short(e.formula, 60)}")
    return _short(" ".join(parts))


def render_entity(e: Entity, edges_out: Sequence[EdgeRecord], memories: Sequence[str]) -> str:
    lines = [f"{e.kind} {e.id}"]
    if e.label:
        lines.append(f"label: {e.label}")
    if e.data_type:
        lines.append(f"type: {e.data_type}")
    if e.primary_key:
        lines.append("primary key")
    if e.description:
        lines.append(f"description: {e.description}")
    if e.formula:
        lines.append(f"formula: {e.formula}")
    if e.values:
        lines.append("values: " + ", ".join(e.values[:20]))
    for edge in edges_out:
        if edge.type == "JOINS":
            on = ", ".join(
                f"{a} = {b}"
                for a, b in zip(
                    edge.props.get("source_columns") or [],
                    edge.props.get("target_columns") or [],
                    strict=False,
                )
            )
            card = edge.props.get("cardinality") or "unknown cardinality"
            lines.append(f"joins {edge.dst} ({card}){' on ' + on if on else ''}")
        elif edge.type == "REFERENCES":
            lines.append(f"references {edge.dst}")
    if memories:
        lines.append("memories: " + ", ".join(memories))
    return "\n".join(lines)


def render_memory(m: Memory) -> str:
    lines = [f"memory {m.id} ({m.created_at.isoformat()})", m.learning]
    if m.description:
        lines.append(f"description: {m.description}")
    if m.entities:
        lines.append("entities: " + ", ".join(m.entities))
    if m.query:
        lines.append("query: " + json.dumps(m.query, sort_keys=True))
    return "\n".join(lines)


#: A memory hit's description: its learning up to this many characters (whole words),
#: and for an example query the query's one-line form, at most as long again.
MEMORY_DESCRIPTION = 300


def describe_memory(m: Memory) -> str:
    """What an agent reads of a memory hit: its learning (the first 300 characters, on a
    word boundary) and, for an example query, the query on one line."""
    text = _words(m.learning, MEMORY_DESCRIPTION)
    if m.query:
        text += " | query: " + _words(one_line_query(m.query), MEMORY_DESCRIPTION)
    return text


def one_line_query(query: Mapping[str, object]) -> str:
    """An example query on one line: its SQL alone when that is all it holds, else its
    JSON (keys sorted, no spaces after separators)."""
    if set(query) == {"sql"} and isinstance(query["sql"], str):
        return " ".join(query["sql"].split())
    return json.dumps(
        _one_line_strings(query), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )


def _one_line_strings(value: object) -> object:
    """``value`` with the white space of its strings folded (a query is depth-checked)."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        return {k: _one_line_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_one_line_strings(v) for v in value]
    return value


def _words(text: str, limit: int) -> str:
    """``text`` on one line, cut at the last word boundary within ``limit`` characters."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    cut = one[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"
