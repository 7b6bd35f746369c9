"""The MCP server: thin tools over :class:`layersearch.api.Layersearch`.

With server_browse.py (its browsing tools), the only module that imports ``mcp``. Build a server with
:func:`create_server` and run it with :func:`run_stdio` or :func:`run_http`
(``layersearch serve`` does both). The store is opened once per server, in the
lifespan, on a background thread: listing tools never waits for it, the first
tool call does.

Adding a tool is one function decorated with ``@_tool(...)``: typed, described
arguments in, a pydantic model out, calling one ``Layersearch`` method.
Errors an agent can fix (``LayersearchError``) come back as tool errors with our
message; anything else is logged with its traceback on stderr and reported as
a short internal error, never as a protocol error.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from pydantic_core import to_json

from layersearch import server_browse
from layersearch.calls import CallLimiter, is_expensive
from layersearch.config import Settings, check_token
from layersearch.errors import (
    ConfigError,
    LayersearchError,
    NotFound,
    StoreMissing,
    disk_full_error,
    is_disk_full,
    mask_secrets,
)
from layersearch.httpauth import BearerAuth
from layersearch.logfilter import install as install_log_hygiene
from layersearch.server_args import flat_json as _flat_json
from layersearch.server_args import invalid_message as _invalid
from layersearch.server_args import unknown_message as _unknown
from layersearch.types import (
    ChannelsArg,
    CompactArg,
    ConversationSearchResult,
    CypherFilterArg,
    DatasourceArg,
    EntitiesArg,
    ExplainArg,
    ForgetResult,
    InspectResponse,
    MaxEntitiesArg,
    MaxExampleQueriesArg,
    MaxMemoriesArg,
    MaxPerSourceArg,
    MaxResultsArg,
    Memory,
    NoteDetail,
    ParamsArg,
    QueryArg,
    QuestionArg,
    RoleArg,
    ScopeArg,
    SearchRequest,
    SearchResponse,
    SemanticSearchResult,
    StatusArg,
    SummarySearchResult,
    TagsArg,
    VaultHit,
)

if TYPE_CHECKING:
    from layersearch.api import Layersearch
    from layersearch.semantic.model import Catalog

__all__ = [
    "SERVER_NAME",
    "Service",
    "ForgetResult",
    "check_settings",
    "create_server",
    "run_http",
    "run_stdio",
    "tool_names",
]

log = logging.getLogger("layersearch.server")

SERVER_NAME = "layersearch"
INSTRUCTIONS = """\
layersearch finds semantic-layer context (datasources, models, columns, measures,
aggregations) and the team's saved memories (notes, example queries) for analytics work.
Call `search` before writing a query: name the entities you think you need and/or ask
the question in words. Results are compact ids; call `inspect` with the ids you want
to use for full detail (columns, joins, formulas, related memories). When you learn
something worth keeping (a caveat, a correct query), `save_memory` it against the
entities it concerns."""

F = TypeVar("F", bound=Callable[..., Any])


# -- the service the tools call ---------------------------------------------------------------


class Service:
    """One ``Layersearch`` for the server's lifetime, opened on a background thread.

    ``api()`` waits for the opening to finish; an error while opening (a corrupt
    store, a semantic layer that does not load) is kept and raised by every call,
    so an agent sees the reason instead of a dead server.
    """

    def __init__(self, settings: Settings, *, api: Layersearch | None = None) -> None:
        self.settings = settings
        self._api = api
        self._owned = api is None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._reopen = threading.Lock()
        if api is not None:
            self._ready.set()
        self._limiter: CallLimiter | None = None

    def limiter(self) -> CallLimiter:
        """How read calls run (made on first use, in the server's event loop)."""
        if self._limiter is None:
            self._limiter = CallLimiter()
        return self._limiter

    def start(self) -> None:
        if self._ready.is_set():
            return
        threading.Thread(target=self._open, name="layersearch-open", daemon=True).start()

    def _open(self, *, again: bool = False) -> None:
        try:
            from layersearch.api import Layersearch, resolve_store_location, store_missing
            from layersearch.embed import NO_EMBEDDER, resolve_spec

            spec = resolve_spec(self.settings.embedder, use_default=True)
            location = resolve_store_location(self.settings.store)
            # The server creates a store only to load `models` into it, once they are read;
            # without them a missing store is reported by every call until it exists.
            catalog = None
            if self.settings.models is not None and store_missing(location):
                catalog = Layersearch.read_catalog(self.settings.models)
            api = Layersearch(
                location,
                create=catalog is not None,
                embedder=spec or NO_EMBEDDER,  # not None: that reads $LAYERSEARCH_EMBEDDER
                embedder_config=dict(self.settings.embedder_options or {}) or None,
                ranking=self.settings.ranking,
            )
            self._api = api
            self._load_models_if_empty(api, catalog)
            self._warm(api)
            log.info("store %s ready", api.store.location)
        except StoreMissing as exc:
            if not again:
                log.warning("%s; every tool call says so until it exists", exc)
            self._error = exc
        except BaseException as exc:  # noqa: BLE001 - kept and reported by every tool call
            # Our errors say what is wrong (a traceback would repeat a driver's message,
            # which may hold the address it was given); anything else is a bug.
            ours = isinstance(exc, LayersearchError)
            log.error("could not open the store: %s", mask_secrets(str(exc)), exc_info=not ours)
            self._error = exc
        finally:
            self._ready.set()

    @staticmethod
    def _warm(api: Layersearch) -> None:
        """The snapshot built and a search run here, not in the first call (its full-text
        searcher, worker and caches; without it a lexical server's first search took 4×
        a later one); with an embedder configured, the model loaded and run once and the
        stored vectors read too.

        A dense channel that is not ready is logged, not raised: the lexical channels
        still answer, and each search reports the same error as a warning.
        """
        for problem in api.warm():
            log.warning("dense channel not ready: %s", problem)

    def _load_models_if_empty(self, api: Layersearch, catalog: Catalog | None) -> None:
        """Load ``models`` into a store without a semantic layer (``catalog``: read)."""
        models = self.settings.models
        if models is None:
            return
        if catalog is None and api.corpus().datasources:
            log.info("store already has a semantic layer; not loading %s", models)
            return
        report = api.load(models) if catalog is None else api.load_catalog(catalog)
        log.info(
            "loaded %d entities from %s (%s)",
            report.entities,
            models,
            ", ".join(report.datasources),
        )
        if api.embedder is not None:  # as `layersearch load` does: the vectors now
            try:
                for done in api.embed():
                    log.info("embedded %d %s", done.embedded, done.corpus)
            except LayersearchError as exc:
                log.warning("vectors not computed (the lexical channels answer): %s", exc)

    def api(self, timeout: float | None = 300.0) -> Layersearch:
        if not self._ready.wait(timeout):
            raise LayersearchError("the store is still opening; try again in a moment")
        if isinstance(self._error, StoreMissing):
            with self._reopen:  # made since the server started (`layersearch load`)?
                if isinstance(self._error, StoreMissing):
                    self._error = None
                    self._open(again=True)
        if self._error is not None:
            if isinstance(self._error, LayersearchError):
                raise self._error
            raise LayersearchError(
                f"the server could not open its store ({type(self._error).__name__}: "
                f"{mask_secrets(str(self._error))}); fix the configuration and restart the server"
            )
        assert self._api is not None
        return self._api

    def close(self) -> None:
        if not self._owned:
            return
        self._ready.wait(300.0)
        if self._api is not None:
            self._api.close()
            self._api = None


# -- tools ------------------------------------------------------------------------------------

_TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = []


def _tool(*, title: str, read_only: bool, destructive: bool = False) -> Callable[[F], F]:
    """Register a tool and turn our errors into tool errors an agent can act on."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except LayersearchError as exc:
                raise ToolError(f"{exc.code}: {mask_secrets(str(exc))}") from exc
            except Exception as exc:
                if is_disk_full(exc):
                    full = disk_full_error(getattr(exc, "filename", None) or "the store", exc)
                    log.error("tool %s: %s", fn.__name__, full)
                    raise ToolError(f"{full.code}: {mask_secrets(str(full))}") from exc
                # A bug, not bad input: the traceback goes to stderr, the agent gets one line.
                log.exception("tool %s failed", fn.__name__)
                raise ToolError(
                    f"internal_error: {type(exc).__name__} in {fn.__name__}; the server log "
                    "has the details. Retrying the same call will not help."
                ) from None

        hints = ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=read_only,
            open_world_hint=False,
        )
        if not read_only:  # a write runs to its end, whoever is still listening
            _TOOLS.append((guarded, hints))
            return guarded  # type: ignore[return-value]

        @functools.wraps(fn)
        async def bounded(*args: Any, **kwargs: Any) -> Any:
            # A read runs under its budget, an expensive one in one of few slots, and
            # stops when its client has gone (layersearch.calls).
            try:
                limiter = _service(kwargs["ctx"]).limiter()
                call = functools.partial(guarded, *args, **kwargs)
                expensive = is_expensive(fn.__name__, kwargs)
                return await limiter.run(call, expensive=expensive, name=fn.__name__)
            except LayersearchError as exc:
                raise ToolError(f"{exc.code}: {exc}") from exc

        _TOOLS.append((bounded, hints))
        return bounded  # type: ignore[return-value]

    return decorate


def _service(ctx: Context) -> Service:
    service = ctx.request_context.lifespan_context
    if not isinstance(service, Service):  # the factory's lifespan always yields one
        raise LayersearchError("the server was started without a store")
    return service


def _api(ctx: Context) -> Layersearch:
    return _service(ctx).api()


def _read_api(ctx: Context) -> Layersearch:
    """The API for a tool that reads the semantic layer or memories: an empty store is a
    tool error saying how to fill it, not an empty answer."""
    api = _api(ctx)
    api.require_content()
    return api


@_tool(title="Search the semantic layer", read_only=True)
def search(
    ctx: Context,
    question: QuestionArg = None,
    entities: EntitiesArg = None,
    query: QueryArg = None,
    datasource: DatasourceArg = None,
    max_results: MaxResultsArg = 10,
    compact: CompactArg = True,
    cypher_filter: CypherFilterArg = None,
    params: ParamsArg = None,
    explain: ExplainArg = False,
    channels: ChannelsArg = None,
    max_entities: MaxEntitiesArg = None,
    max_memories: MaxMemoriesArg = None,
    max_example_queries: MaxExampleQueriesArg = None,
    scope: ScopeArg = None,
    max_per_source: MaxPerSourceArg = None,
    tags: TagsArg = None,
    status: StatusArg = None,
    role: RoleArg = None,
) -> SearchResponse:
    """Find the datasources, models, columns, measures, aggregations and saved memories
    relevant to an analytics question. Call this BEFORE writing a query, and again when
    a query fails because of a name.

    Give a `question`, `entities`, or both. `results` interleaves entities and memories,
    each kind in its own ranking; `max_entities`, `max_memories` and
    `max_example_queries` add buckets of that kind alone. Hits are compact (kind, id,
    score, one-line description: a memory's is its note and its example query); call `inspect` with the ids you intend to use to get
    full detail (data types, joins, formulas, memories). Memories are team notes and
    example queries: read the ones returned, they record caveats.

    `scope` widens the search to other corpora: `all` also ranks past conversation
    messages and vault notes in the same list, each hit with its `source`
    (semantic | memory | conversation | vault) and its id for `inspect`.

    A question that names a grouping ("revenue by store per month") also gets `plan`:
    the measure, grouping columns, time grain, models and join path with keys, as ids.
    `weak_match: true` means no hit matches well: the layer may not hold the answer.

    It does not run queries, return data rows, or write SQL. `warnings` explain
    unresolved names (with "did you mean"), empty filters and skipped channels: read them.
    """
    fields = dict(locals())  # the tool's arguments are the request's fields
    del fields["ctx"]
    request = SearchRequest.model_validate(fields)
    if scope is not None:  # each corpus the scope names says itself when it is empty
        return _api(ctx).search(request)
    return _read_api(ctx).search(request)


@_tool(title="Inspect entities and memories", read_only=True)
def inspect(
    ctx: Context,
    ids: Annotated[
        list[str],
        Field(
            min_length=1,
            max_length=200,
            description="Ids from `search` results, any kinds mixed in one call: "
            "'shop', 'shop.orders', 'shop.orders.order_total', 'memory:3', "
            "'conversation:<message_id>', 'vault:<slug>'. A name that is "
            "not an exact id is resolved like in search. 1 to 200 ids.",
        ),
    ],
) -> InspectResponse:
    """Full detail for entities and memories by id, in one batch: for entities the
    description, data type, formula, physical table or column expression (`physical`,
    what the SQL names), sample values, children, joins (with cardinality),
    referenced columns and the memories that mention them; for memories the whole text,
    tags and example query.

    Call it after `search`, on the ids you intend to use. Unknown ids are reported in
    `warnings`; the call fails only when none of the ids is found. It does not search:
    use `search` to discover ids.
    """
    api = _api(ctx)
    if not api.scoped_ids(ids):  # ids of the semantic layer and memories alone
        api.require_content()
    return api.inspect(ids)


@_tool(title="Save a memory", read_only=False)
def save_memory(
    ctx: Context,
    learning: Annotated[
        str,
        Field(
            min_length=1,
            description="What to remember, in full sentences: a caveat, a definition, "
            "a correct way to compute something (up to 20,000 characters).",
        ),
    ],
    entities: Annotated[
        list[str] | None,
        Field(
            description="Entities it concerns, as in search (full ids or unique names). "
            "Each must resolve, otherwise nothing is saved and the error says which. "
            "Default: none."
        ),
    ] = None,
    description: Annotated[
        str | None,
        Field(max_length=500, description="A one-line summary (≤ 500 characters). Optional."),
    ] = None,
    query: Annotated[
        dict[str, Any] | None,
        Field(
            description="An example query (measures, dimensions, filters) this memory "
            "records; its entities are tagged too. Optional."
        ),
    ] = None,
) -> Memory:
    """Save a note or example query against semantic-layer entities, so that later
    searches about those entities surface it. Use it when you learned something another
    analyst (or agent) would need: a caveat, a correct filter, a confirmed query.

    Returns the saved memory with its id (memory:<n>) and the canonical ids it is
    tagged with. It does not deduplicate: search first if a similar memory may exist.
    """
    return _api(ctx).save_memory(learning, description=description, entities=entities, query=query)


@_tool(title="Forget a memory", read_only=False, destructive=True)
def forget_memory(
    ctx: Context,
    memory_id: Annotated[
        str, Field(description="The memory's id, 'memory:<n>' (or just the number).")
    ],
) -> ForgetResult:
    """Delete one saved memory for good, e.g. one that is wrong or outdated. Use
    `inspect` on the id first if unsure what it says. An unknown id is an error."""
    from layersearch.store.duckdb import memory_number

    canonical = f"memory:{memory_number(memory_id)}"
    try:
        _read_api(ctx).forget_memory(canonical)
    except NotFound:
        raise NotFound(f"no memory {canonical}: the list_memories tool shows the ids") from None
    return ForgetResult(forgotten=canonical)


# -- conversations -------------------------------------------------------------------------
#
# The three conversation tools return their markdown contract as the text content, exactly,
# and the same result as structured content (with its output schema).


def _contract(result: Any) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=result.markdown)],
        structured_content=result.model_dump(mode="json"),
    )


@_tool(title="Keyword search in past conversations", read_only=True)
def search_conversations(
    ctx: Context,
    term: Annotated[
        str,
        Field(
            description="Text to find inside messages, case-insensitively and literally "
            "(% and _ are plain characters). Empty with role='user': the most recent "
            "questions the user asked. Default: empty."
        ),
    ] = "",
    limit: Annotated[int, Field(ge=1, le=100, description="How many messages (default 15).")] = 15,
    role: Annotated[
        Literal["user", "assistant"] | None,
        Field(description="Only messages of this role. Default: both."),
    ] = None,
) -> Annotated[CallToolResult, ConversationSearchResult]:
    """Find exact words or names in imported chat conversations (deterministic, newest
    first): e.g. a table name, an error message, a metric someone defined. Use
    `semantic_search` when you only know the meaning. Returns a markdown table
    | Date | Source | Role | conv_id | Preview | (first 200 characters), or
    "No conversations found containing '<term>'"."""
    return _contract(_api(ctx).conversations.search_conversations(term, limit=limit, role=role))


@_tool(title="Semantic search in past conversations", read_only=True)
def semantic_search(
    ctx: Context,
    query: Annotated[str, Field(min_length=1, description="What the messages should be about.")],
    limit: Annotated[int, Field(ge=1, le=100, description="How many messages (default 10).")] = 10,
) -> Annotated[CallToolResult, SemanticSearchResult]:
    """Find messages in imported conversations by meaning, with the configured embedder
    (vectors made by `layersearch conversations import` + `layersearch embed`). Returns, per
    hit, the conversation title, similarity 1/(1+distance), source, date, conv_id and a
    400-character preview. Without an embedder, or with vectors from another model, it is an
    error starting 'embedding unavailable:' — never a silent keyword fallback."""
    return _contract(_api(ctx).conversations.semantic_search(query, limit=limit))


@_tool(title="Search conversation summaries", read_only=True)
def search_summaries(
    ctx: Context,
    query: Annotated[str, Field(description="What the summarised conversations were about.")],
    extract: Annotated[
        Literal["summary", "questions", "decisions", "quotes"],
        Field(description="Which stored field to return, verbatim (default summary)."),
    ] = "summary",
    limit: Annotated[int, Field(ge=1, le=100, description="How many summaries (default 10).")] = 10,
    domain: Annotated[
        str | None, Field(description="Only this domain (letters, digits, spaces, - _ . ,).")
    ] = None,
    importance: Annotated[
        Literal["breakthrough", "significant", "routine"] | None,
        Field(description="Only summaries of this importance."),
    ] = None,
    thinking_stage: Annotated[
        Literal["exploring", "crystallizing", "refining", "executing"] | None,
        Field(description="Only summaries at this thinking stage."),
    ] = None,
    source: Annotated[
        str | None, Field(description="Only conversations from this source (e.g. claude, chatgpt).")
    ] = None,
    mode: Annotated[
        Literal["hybrid", "fts", "vector"],
        Field(description="hybrid (full text + vectors, fused by RRF; default), fts, or vector."),
    ] = "hybrid",
) -> Annotated[CallToolResult, SummarySearchResult]:
    """Search the imported summaries of past conversations (decisions, open questions,
    quotable lines) and return one projection per call; every row carries
    [conv_id · date] and [summary_id]. Invalid filter values are errors listing the valid
    ones."""
    return _contract(
        _api(ctx).conversations.search_summaries(
            query,
            extract=extract,
            limit=limit,
            domain=domain,
            importance=importance,
            thinking_stage=thinking_stage,
            source=source,
            mode=mode,
        )
    )


# -- vault -----------------------------------------------------------------------------------


@_tool(title="Search the notes vault", read_only=True)
def vault_search(
    ctx: Context,
    query: Annotated[
        str, Field(min_length=1, description="What the notes should be about, in words.")
    ],
    tags: Annotated[
        list[str] | None,
        Field(
            description="Keep notes carrying ANY of these tags (nested tags match). Default: any."
        ),
    ] = None,
    domain: Annotated[
        str | None,
        Field(description="Keep notes of this domain (as the vault declares). Default: any."),
    ] = None,
    status: Annotated[
        list[str] | None,
        Field(description="Keep notes whose status is one of these. Default: any."),
    ] = None,
    note_type: Annotated[
        str | None, Field(description="Keep notes of this type (frontmatter type/note_type).")
    ] = None,
    date_range: Annotated[
        dict[str, str | None] | None,
        Field(
            description="{start, end} ISO dates (YYYY-MM-DD) on the note's `updated` date; "
            "either end may be omitted."
        ),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="How many notes (default 10).")] = 10,
    mode: Annotated[
        Literal["vector", "hybrid"],
        Field(description="vector (default), or hybrid: fused with full text (an RRF score)."),
    ] = "vector",
    explain: ExplainArg = False,
) -> Annotated[CallToolResult, list[VaultHit]]:
    """Find notes in the indexed markdown vault (runbooks, metric definitions, incident
    write-ups, decisions) by meaning, within the filters you give (all combine with AND).

    Returns [{slug, title, path, score}] best first, score the cosine similarity of the
    note's best-matching section (hybrid: the fused score); no content: call
    `vault_get_note` with a slug to read one. Without an embedder the notes are ranked by
    full text alone, and a last text block starting `warning:` says so. An empty list
    means nothing matched; an error means the search could not run (vectors made by
    another model in vector mode, bad filter value).
    """
    warnings: list[str] = []
    hits = _api(ctx).vault.search(
        query,
        tags=tags,
        domain=domain,
        status=status,
        note_type=note_type,
        date_range=date_range,
        limit=limit,
        mode=mode,
        explain=explain,
        warnings=warnings,
    )
    # The hits as the SDK renders a returned list (one JSON block each), then the warnings.
    texts = [to_json(h, indent=2).decode() for h in hits] + [f"warning: {w}" for w in warnings]
    return CallToolResult(
        content=[TextContent(type="text", text=text) for text in texts],
        structured_content={"result": [h.model_dump(mode="json") for h in hits]},
    )


@_tool(title="Read a vault note", read_only=True)
def vault_get_note(
    ctx: Context,
    slug: Annotated[
        str,
        Field(description="The note's slug as vault_search returned it (path without .md)."),
    ],
) -> NoteDetail:
    """The whole note (markdown body) and its metadata: title, tags, domain, status,
    type, created/updated dates, frontmatter. A slug that does not exist, or that tries
    to leave the vault (`../`), is an error."""
    return _api(ctx).vault.get_note(slug)


class _StrictTool(Tool):
    """A tool whose arguments are checked our way before the SDK validates them.

    An argument the tool does not take is an error naming the ones it does (the SDK
    would drop it silently: ``{"q": "revenue"}`` searched for nothing). An argument
    the schema rejects (out of range, wrong type, not one of the choices) is reported
    in one line per argument with what it takes, instead of pydantic's report and its
    documentation URL."""

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        properties: dict[str, Any] = self.parameters.get("properties", {})
        unknown = sorted(set(arguments) - set(properties))
        if unknown:
            raise ToolError(f"Error executing tool {self.name}: {_unknown(unknown, properties)}")
        try:
            result = await super().run(arguments, context, convert_result)
            for block in result.content if isinstance(result, CallToolResult) else []:
                if isinstance(block, TextContent):  # one line of JSON, not indented
                    block.text = _flat_json(block.text)
            return result
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                message = _invalid(exc.__cause__, properties)
                raise ToolError(f"Error executing tool {self.name}: {message}") from None
            raise


def tool_names() -> list[str]:
    return [fn.__name__ for fn, _ in _TOOLS]


for _title, _fn in server_browse.TOOLS:  # the browsing tools, after the others
    _tool(title=_title, read_only=True)(_fn)

# -- the server -------------------------------------------------------------------------------


def create_server(
    settings: Settings | None = None, *, api: Layersearch | None = None
) -> MCPServer[Service]:
    """An MCP server over the store in ``settings`` (opened in the lifespan), or over an
    already open ``api`` (left open: the caller owns it)."""
    settings = settings or Settings()
    if api is None:
        check_settings(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Service]) -> AsyncIterator[Service]:
        service = Service(settings, api=api)
        service.start()
        try:
            yield service
        finally:
            service.close()

    from layersearch import __version__

    tools = [
        _StrictTool.from_function(fn, annotations=hints, structured_output=True)
        for fn, hints in _TOOLS
    ]
    server: MCPServer[Service] = MCPServer(
        SERVER_NAME,
        title="layersearch",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
        tools=tools,
    )
    return server


def check_settings(settings: Settings) -> None:
    """Refuse, before serving, a configuration every tool call would fail on: an embedder
    spec or options that do not parse, a ``models`` path that does not exist. (The store
    itself opens in the background; its errors are reported by the tools.)"""
    where = f"{settings.source}: " if settings.source is not None else ""
    from layersearch.embed import make_embedder, resolve_spec

    spec = resolve_spec(settings.embedder, use_default=True)
    if spec is not None:
        try:  # building an embedder is cheap: models and clients load on first use
            make_embedder(spec, config=dict(settings.embedder_options) or None)
        except ConfigError as exc:
            raise ConfigError(f"{where}embedder: {exc}") from exc
    if settings.models is not None and not settings.models.exists():
        raise ConfigError(f"{where}models: {settings.models} does not exist")


def run_stdio(server: MCPServer[Service]) -> None:
    """Serve over stdin/stdout until the client closes stdin."""
    install_log_hygiene()
    server.run("stdio")


def http_url(host: str, port: int) -> str:
    """The URL a client connects to (IPv6 addresses in brackets)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/mcp"


def run_http(
    server: MCPServer[Service],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    log_level: str = "warning",
    sock: Any = None,
) -> None:
    """Serve streamable HTTP at http://host:port/mcp (on ``sock``, bound there, if given).
    A token, when given, is required as ``Authorization: Bearer <token>``; a non-loopback
    host without one, or a weak one (:func:`layersearch.config.check_token`), is refused."""
    check_token(host, token)
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if token:
        app = BearerAuth(app, token)
    log.info("serving MCP over streamable HTTP at %s", http_url(host, port))
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on")
    install_log_hygiene()  # after uvicorn's own logging configuration
    uvicorn.Server(config).run(sockets=None if sock is None else [sock])
