"""The MCP tools that browse the layer without a question: list datasources, models,
measures and memories, and describe one model. server.py registers every function of
``TOOLS`` with its own tool decorator, like its own tools (thin: arguments in, one
``Layersearch`` method, a pydantic model out)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from layersearch.types import LayerPage, MemoryPage, ModelDescription

if TYPE_CHECKING:
    from layersearch.api import Layersearch


def _read_api(ctx: Context) -> Layersearch:
    # server.py imports this module to register its tools: a call-time import, no cycle
    from layersearch.server import _read_api as read_api

    return read_api(ctx)


OffsetArg = Annotated[
    int,
    Field(ge=0, description="Skip this many items: the previous page's next_offset. Default 0."),
]
LimitArg = Annotated[
    int, Field(ge=1, le=200, description="How many items in this page (1..200). Default 50.")
]
DatasourceFilter = Annotated[
    str | None,
    Field(description="Only this datasource (an id from list_datasources). Default: all."),
]


def list_datasources(ctx: Context, offset: OffsetArg = 0, limit: LimitArg = 50) -> LayerPage:
    """List the datasources (databases, warehouses, dbt projects) the semantic layer
    holds, with their descriptions. Use it first when you do not know what data exists
    or which datasource a question is about; then `list_models` with one of these ids,
    or `search` with it as `datasource`. Paged: `next_offset` is null on the last page."""
    return _read_api(ctx).browse.list_layer(("datasource",), offset=offset, limit=limit)


def list_models(
    ctx: Context,
    datasource: DatasourceFilter = None,
    offset: OffsetArg = 0,
    limit: LimitArg = 50,
) -> LayerPage:
    """List the models (tables, views, dbt models, cubes, explores' views) of the layer,
    or of one datasource, sorted by id, each with its description and physical table
    (`physical`, what goes after FROM). Use it to see what tables exist; call
    `describe_model` on one to get its columns, measures and joins. To find the models
    relevant to a question, `search` is faster. Paged with offset/next_offset."""
    return _read_api(ctx).browse.list_layer(
        ("model",), datasource=datasource, offset=offset, limit=limit
    )


def list_measures(
    ctx: Context,
    datasource: DatasourceFilter = None,
    model: Annotated[
        str | None,
        Field(description="Only this model's, by full id (datasource.model). Default: all."),
    ] = None,
    kind: Annotated[
        Literal["measure", "aggregation"] | None,
        Field(
            description="measure: named aggregates (metrics); aggregation: parameterised "
            "aggregation functions. Default: both."
        ),
    ] = None,
    offset: OffsetArg = 0,
    limit: LimitArg = 50,
) -> LayerPage:
    """List the measures (metrics: revenue, order count, MRR…) and aggregations the
    layer defines, with their formulas, filtered by datasource, model and kind, sorted
    by id. Use it to see which metrics exist before choosing one, or when `search`
    did not find the metric you expected. Paged with offset/next_offset."""
    kinds = (kind,) if kind else ("measure", "aggregation")
    return _read_api(ctx).browse.list_layer(
        kinds, datasource=datasource, model=model, offset=offset, limit=limit
    )


def describe_model(
    ctx: Context,
    model: Annotated[
        str,
        Field(
            min_length=1,
            description="The model's id ('shop.orders'), or its name when only one model has it.",
        ),
    ],
) -> ModelDescription:
    """Everything needed to query one model in one call: its physical table, its
    dimensions (columns with types, primary keys and SQL expressions), its measures
    and aggregations with formulas, its joins in both directions with the key columns
    as full ids, and the ids of memories tagged with it. Use it when you have chosen a
    model (from `search` or `list_models`) and need its columns or how to join it."""
    return _read_api(ctx).browse.describe_model(model)


def list_memories(ctx: Context, offset: OffsetArg = 0, limit: LimitArg = 50) -> MemoryPage:
    """List the team's saved memories (notes, caveats, example queries), newest first,
    with their ids (memory:<n>), tags and total count. Use it to review what has been
    saved, or to find the id of a memory to correct or `forget_memory`; to find the
    memories relevant to a question, `search` instead. Paged with offset/next_offset."""
    return _read_api(ctx).browse.memory_page(offset, limit)


#: (title, tool) in the order the server lists them; every one reads only
TOOLS: list[tuple[str, Callable[..., Any]]] = [
    ("List datasources", list_datasources),
    ("List models", list_models),
    ("List measures and metrics", list_measures),
    ("Describe a model", describe_model),
    ("List saved memories", list_memories),
]
