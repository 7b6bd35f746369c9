"""Wire models: what the API takes and returns (pydantic, so the CLI's --json and
the MCP server's structured output share one schema).

One place for every corpus: entity search and inspect, memories, loads and embeds,
then the conversation contracts and the vault. Field order is the JSON order."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_serializer

Kind = Literal["datasource", "model", "column", "measure", "aggregation", "memory"]
#: the channels a search request may name (``SearchRequest.channels``)
RequestChannel = Literal["bm25", "fulltext", "vector"]
#: the channels that rank entities, as hits report them (``ChannelScore.channel``): the
#: requested ones and ``schema``, which runs with ``fulltext`` when there is a question
Channel = Literal["bm25", "fulltext", "schema", "vector"]
CHANNELS: tuple[str, ...] = get_args(RequestChannel)


class ChannelScore(BaseModel):
    """How one channel ranked a hit."""

    model_config = ConfigDict(frozen=True)

    channel: str = Field(
        description="input | bm25 | fulltext | schema | vector | words (a memory by the share "
        "of the question its text holds) | tags (a memory tagged with a ranked entity) | "
        "table (a column at its table's rank among the fused tables) | "
        "recent (newest memories, no input)"
    )
    rank: int = Field(description="1-based rank within the channel")
    score: float = Field(description="the channel's own score")
    contribution: float = Field(
        description="this channel's share of the fused score: weight/(k+rank)"
    )
    weight: float = Field(
        default=1.0,
        description="the channel's fusion weight for this question: 1 for plain RRF; the "
        "table channel's is the separation of the fused tables' scores",
    )
    separation: float | None = Field(
        default=None,
        description="for a weighed channel (table): how far the fused table scores fall "
        "from the 1st to the 10th, as a fraction of their whole range (0 flat, 1 one stands out)",
    )
    reach: float | None = Field(
        default=None,
        description="for a weighed channel (table): the share of the question's words it "
        "could read (1)",
    )
    matched: list[str] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="schema channel: the question words the hit's own name, label and "
        "description matched, in question order: the word for an exact match, "
        "'word→term weight' through a bridge (abbreviation, synonym, nearest word)",
    )


def _absent(value: object) -> bool:
    return value is None


class StageMove(BaseModel):
    """What one ranking stage (``docs/ranking.md``) did to a hit."""

    model_config = ConfigDict(frozen=True)

    stage: str = Field(description="the stage's name (the name --without takes)")
    before: int = Field(
        description="1-based position in the stage's list before it ran (0: not in it)"
    )
    after: int = Field(description="1-based position in the stage's list after it ran")
    note: str = Field(description="what the stage did to the hit")
    adjustment: float = Field(
        default=0.0,
        description="the score the stage added to the hit's own, so that scores follow the order",
    )


def explain_text(parts: Sequence[ChannelScore]) -> str:
    """``schema #1 (0.93) x1.24 [name, divisions→department 0.31] + vector #3 (0.61)
    x0.76``: a weight other than 1 is shown, and the words a channel matched."""
    return " + ".join(
        f"{p.channel} #{p.rank} ({p.score:.3g})"
        + (f" x{p.weight:.2f}" if p.weight is not None and p.weight != 1.0 else "")
        + (f" [{', '.join(p.matched)}]" if p.matched else "")
        for p in parts
    )


def stages_text(moves: Sequence[StageMove]) -> str:
    """``join-keys #9→#4 +0.0021 (join key of two first tables); memory-tags new→#3``."""
    return "; ".join(
        f"{m.stage} {'#' + str(m.before) if m.before else 'new'}→#{m.after}"
        + (f" {m.adjustment:+.4f}" if m.adjustment else "")
        + (f" ({m.note})" if m.note else "")
        for m in moves
    )


class Hit(BaseModel):
    kind: str = Field(
        description="datasource | model | column | measure | aggregation | memory | "
        "conversation | vault (or a registered corpus's kind)"
    )
    id: str
    score: float = Field(
        description="fused Reciprocal Rank Fusion score (k=60), plus the adjustments of the "
        "stages that moved the hit: never higher than the score above it (docs/ranking.md)"
    )
    description: str = Field("", description="one-line summary")
    # Absent rather than null when not asked for: compact hits carry no empty fields.
    text: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="the whole rendered entity or memory (compact=false)",
    )
    explanation: list[ChannelScore] | None = Field(
        default=None,
        exclude_if=_absent,
        description="which channels ranked this hit, at which rank and score (explain=true)",
    )
    stages: list[StageMove] | None = Field(
        default=None,
        exclude_if=_absent,
        description="explain=true: every ranking stage that moved this hit (a rule after "
        "fusion, or a channel fused in), in the order they ran",
    )
    # Present only on hits of a scoped search (``scope``): unscoped output is unchanged.
    source: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="scoped searches: semantic (an entity) | memory | conversation | vault "
        "(or a registered corpus's source)",
    )
    conv_id: str | None = Field(
        default=None, exclude_if=_absent, description="a conversation hit's conversation id"
    )
    message_id: str | None = Field(
        default=None, exclude_if=_absent, description="a conversation hit's message id"
    )
    slug: str | None = Field(
        default=None, exclude_if=_absent, description="a vault hit's note slug (vault_get_note)"
    )
    physical: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="compact=false: a model's table or relation, a column's SQL expression",
    )

    def line(self, explain: bool = False) -> str:
        """The compact one-line form; with ``explain``, the channels that ranked the hit
        follow it (``why: fulltext #1 (7.31) + bm25 #3 (2.05)``), when the search was
        asked for them (``explain=True``)."""
        desc = f"  {self.description}" if self.description else ""
        line = f"{self.kind:<11} {self.id}  {self.score:.4f}{desc}"
        if explain and self.explanation:
            line += f"  why: {explain_text(self.explanation)}"
        if explain and self.stages:
            line += f"  moved: {stages_text(self.stages)}"
        return line


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: set by the API when it asks for explanations only to read the channels (the
    #: weak-match check): the stages' what-if fusions are then not traced
    _channels_only: bool = PrivateAttr(default=False)
    #: with ``_channels_only``: hits are explained up to this many of a model, column,
    #: measure or aggregation (the weak-match check reads no more)
    _explain_entities: int | None = PrivateAttr(default=None)
    #: set by the query plan for its part searches, which read entities only: no memory
    #: is ranked, and ``results`` is the entity list, each hit its kind, id and score
    #: only (without ``explain``)
    _entities_only: bool = PrivateAttr(default=False)
    #: ranking stages switched off for this request beside the configured ones when no
    #: vector channel searches it (the query plan's part searches: plan/answer.py)
    _lexical_without: frozenset[str] = PrivateAttr(default=frozenset())

    entities: list[str] | None = Field(
        None,
        description="entity names or ids: full id, model.leaf, bare name, sum(col), memory:<id>",
    )
    query: dict[str, Any] | None = Field(
        None,
        description="an example-query shape (measures, dimensions, filters) whose entities count",
    )
    question: str | None = Field(None, description="free text, any characters")
    datasource: str | None = Field(None, description="scope every channel to this datasource")
    max_results: int = Field(10, description="how many hits (1..limit)")
    compact: bool = Field(True, description="one-line hits; false adds the full text")
    cypher_filter: str | None = Field(
        None,
        description="read-only openCypher returning `id`: a hard allowlist applied before ranking",
    )
    params: dict[str, Any] | None = Field(None, description="values for $name in cypher_filter")
    explain: bool = Field(False, description="attach each hit's per-channel ranks and scores")
    channels: list[str] | None = Field(
        None, description="subset of bm25, fulltext, vector (default: all that can run)"
    )
    max_entities: int | None = Field(
        default=None,
        description="also return `entities`: this many entities from their own ranking (1..limit)",
    )
    max_memories: int | None = Field(
        default=None,
        description="also return `memories`: this many notes (memories with no query) from "
        "their own ranking (1..limit)",
    )
    max_example_queries: int | None = Field(
        default=None,
        description="also return `example_queries`: this many example queries from their own "
        "ranking (1..limit)",
    )
    scope: str | list[str] | None = Field(
        default=None,
        description="which corpora: semantic (default: entities + memories), memory, "
        "conversations, vault, summaries, all (every one but summaries), or a list of these",
    )
    max_per_source: int | None = Field(
        default=None, description="scoped searches: at most this many hits of one source"
    )
    tags: list[str] | None = Field(
        default=None, description="scoped searches: vault notes with any of these tags"
    )
    status: list[str] | None = Field(
        default=None, description="scoped searches: vault notes with any of these statuses"
    )
    role: str | None = Field(
        default=None, description="scoped searches: conversation messages of this role"
    )


class SearchResponse(BaseModel):
    results: list[Hit] = Field(
        description="entities and memories merged: an entity, a memory, an entity, … each "
        "kind in its own ranking (max_results of them)"
    )
    warnings: list[str] = Field(default_factory=list)
    # The buckets are present only when asked for (max_entities, max_memories,
    # max_example_queries): a response to a request without them is as it always was.
    entities: list[Hit] | None = Field(
        default=None, exclude_if=_absent, description="the entity bucket (max_entities)"
    )
    memories: list[Hit] | None = Field(
        default=None, exclude_if=_absent, description="the note bucket: memories with no query"
    )
    example_queries: list[Hit] | None = Field(
        default=None,
        exclude_if=_absent,
        description="the example-query bucket: memories with a query",
    )
    weak_match: bool | None = Field(
        default=None,
        exclude_if=_absent,
        description="true when no hit matches the question well (the layer may not have "
        "what was asked for); a warning says why. Absent otherwise",
    )
    plan: QueryPlan | None = Field(
        default=None,
        exclude_if=_absent,
        description="a question that names a grouping ('by state', 'per month'): the "
        "measure(s), grouping dimensions, time grain, models and join path, as ids",
    )


class Memory(BaseModel):
    """A note or example query saved against entities."""

    id: str = Field(description="memory:<n>")
    learning: str
    description: str | None = None
    entities: list[str] = Field(default_factory=list, description="canonical ids it is tagged with")
    query: dict[str, Any] | None = None
    created_at: datetime


class EntityInfo(BaseModel):
    """An entity as ``inspect`` shows it."""

    kind: Kind
    id: str
    name: str
    datasource: str
    model: str | None = None
    label: str | None = None
    description: str | None = None
    data_type: str | None = None
    formula: str | None = None
    hidden: bool = False
    primary_key: bool = False
    values: list[str] = Field(default_factory=list)
    physical: str | None = Field(
        default=None,
        description="the physical name where the layer has one: a model's table, view or "
        "relation (FROM), a column's SQL expression",
    )
    children: list[str] = Field(default_factory=list)
    joins: list[dict[str, Any]] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)
    memories: list[str] = Field(default_factory=list)


class MessageDetail(BaseModel):
    """A conversation message as ``inspect`` shows it (id ``conversation:<message_id>``)."""

    id: str
    conv_id: str
    message_id: str
    conversation_title: str | None = None
    role: str
    speaker: str | None = None
    created: datetime | None = None
    content: str


class DocumentDetail(BaseModel):
    """A document of a registered corpus (``corpora.registry``) as ``inspect`` shows it."""

    id: str
    source: str
    title: str = ""
    text: str = ""


class InspectResponse(BaseModel):
    entities: list[EntityInfo] = Field(default_factory=list)
    memories: list[Memory] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # Present only when ids of those kinds were asked for: entity inspect is unchanged.
    conversations: list[MessageDetail] | None = Field(
        default=None, exclude_if=_absent, description="conversation:<message_id> ids"
    )
    notes: list[NoteDetail] | None = Field(
        default=None, exclude_if=_absent, description="vault:<slug> ids"
    )
    documents: list[DocumentDetail] | None = Field(
        default=None,
        exclude_if=_absent,
        description="ids of a registered corpus without a field of its own",
    )


class LoadReport(BaseModel):
    datasources: list[str]
    models: int
    entities: int
    memories_added: int = 0
    skipped: list[str] = Field(default_factory=list)
    unresolved_tags: list[str] = Field(
        default_factory=list, description="memory tags that no longer resolve after this load"
    )


class EmbedReport(BaseModel):
    """What ``embed`` did for one corpus."""

    corpus: str
    model: str = Field(description="the embedding model, e.g. local/all-MiniLM-L6-v2 (384)")
    documents: int
    embedded: int
    unchanged: int = Field(description="skipped: same text, same model, already stored")
    pruned: int = Field(description="vectors of documents that no longer exist, deleted")
    failed: list[str] = Field(default_factory=list)


# -- conversations ---------------------------------------------------------------------------------------


class ConversationHit(BaseModel):
    date: str | None
    source: str
    role: str
    conversation_id: str
    message_id: str
    created: datetime | None
    preview: str


class ConversationSearchResult(BaseModel):
    term: str
    role: str | None
    limit: int
    hits: list[ConversationHit]
    markdown: str


class SemanticHit(BaseModel):
    rank: int
    conversation_id: str
    conversation_title: str
    source: str
    date: str | None
    message_id: str
    distance: float
    similarity: float
    preview: str


class SemanticSearchResult(BaseModel):
    query: str
    limit: int
    hits: list[SemanticHit]
    markdown: str


class SummaryHit(BaseModel):
    rank: int
    summary_id: str
    conversation_id: str
    conversation_title: str | None
    date: str | None
    extract: str
    items: list[str] = Field(description="the projected field, verbatim (one item for summary)")
    score: float
    channels: dict[str, int] = Field(default_factory=dict, description="channel → rank")
    stages: list[StageMove] | None = Field(
        default=None,
        exclude_if=_absent,
        description="explain=true: every ranking stage that moved this summary (a channel "
        "fused in), in the order they ran",
    )


class SummarySearchResult(BaseModel):
    query: str
    extract: str
    mode: str
    limit: int
    hits: list[SummaryHit]
    warnings: list[str] = Field(default_factory=list)
    markdown: str


class MessageHit(BaseModel):
    message_id: str
    conversation_id: str
    turn_id: str | None
    role: str
    speaker: str | None
    score: float
    channels: dict[str, int] = Field(default_factory=dict)
    stages: list[StageMove] | None = Field(
        default=None,
        exclude_if=_absent,
        description="explain=true: every ranking stage that moved this turn, in the order "
        "they ran (docs/ranking.md)",
    )


class MessageSearchResult(BaseModel):
    query: str
    hits: list[MessageHit]
    warnings: list[str] = Field(default_factory=list)


# -- vault ------------------------------------------------------------------------------------------


class VaultHit(BaseModel):
    """One note found by ``vault_search``; the content is fetched with ``vault_get_note``."""

    slug: str = Field(description="the note's path in the vault without .md, e.g. Metrics/Churn")
    title: str
    path: str = Field(description="the file, relative to the vault root")
    score: float = Field(
        description="vector mode: cosine similarity of the best chunk (-1..1); "
        "hybrid mode, or full text alone without an embedder: the fused Reciprocal Rank "
        "Fusion score"
    )
    explanation: list[ChannelScore] | None = Field(
        None, description="which channels ranked this note, at which rank and score (explain)"
    )
    stages: list[StageMove] | None = Field(
        None,
        description="explain: every ranking stage that moved this note (a channel fused in "
        "moves it from where the other channel put it), in the order they ran",
    )

    @model_serializer(mode="wrap")
    def _drop_empty_explanation(self, handler: Any) -> Any:
        # The wire contract is {slug, title, path, score}; the explanation only when asked for.
        data = handler(self)
        if isinstance(data, dict):
            for key in ("explanation", "stages"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data


class NoteDetail(BaseModel):
    """A whole note and its metadata, as stored by the last index run."""

    slug: str
    path: str
    title: str
    tags: list[str]
    domain: str | None = None
    status: str | None = None
    note_type: str | None = None
    created: date | None = None
    updated: date
    body: str = Field(description="the markdown after the frontmatter")
    content_hash: str
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list, description="what could not be read")


class VaultIndexReport(BaseModel):
    """What one ``vault index`` run did."""

    root: str
    notes: int
    added: int
    changed: int
    unchanged: int = Field(description="skipped: same content hash as stored")
    deleted: int = Field(description="notes gone from the vault (renamed ones included), pruned")
    chunks_written: int
    vectors: EmbedReport | None = Field(None, description="None when no embedder is configured")
    problems: list[str] = Field(default_factory=list, description="path: what could not be read")
    warnings: list[str] = Field(default_factory=list)
    seconds: float


class ForgetResult(BaseModel):
    forgotten: str = Field(description="the id of the memory that was deleted")


# -- the MCP search tool's arguments (what an agent reads in its input schema) ----------

QuestionArg = Annotated[
    str | None,
    Field(
        description="The question in plain words, any characters "
        "(e.g. 'monthly revenue by store'). Ranks by full text (and vectors when configured)."
    ),
]

EntitiesArg = Annotated[
    list[str] | None,
    Field(
        description="Entities you already think are relevant: full ids "
        "('shop.orders.order_total'), 'model.leaf', a bare name unique in scope, "
        "'sum(order_total)', or 'memory:<n>'. Named entities always come back as hits, "
        "and memories tagged with them rank first."
    ),
]

QueryArg = Annotated[
    dict[str, Any] | None,
    Field(
        description="An example-query object (measures, dimensions, filters, "
        "time_dimensions) whose referenced entities count like `entities`."
    ),
]

DatasourceArg = Annotated[
    str | None,
    Field(
        description="Only this datasource. An unknown name is an error that lists the "
        "known ones. Default: all datasources."
    ),
]

MaxResultsArg = Annotated[
    int, Field(ge=1, le=100, description="How many hits, 1 to 100. Default 10.")
]

CompactArg = Annotated[
    bool,
    Field(
        description="true (default): one line per hit (kind, id, score, description). "
        "false: also the full text of each hit; prefer `inspect` on chosen ids instead."
    ),
]

CypherFilterArg = Annotated[
    str | None,
    Field(
        description="A read-only openCypher query returning `id`, e.g. "
        "\"MATCH (m:Model)-[:CONTAINS]->(c:ModelColumn) WHERE m.name = 'orders' "
        'RETURN c.id AS id". Its ids are a hard allowlist applied before ranking. '
        "Labels: Datasource, Model, ModelColumn, Measure, Aggregation, Memory; "
        "relationships: CONTAINS, JOINS, MENTIONS, REFERENCES. Default: no filter."
    ),
]

ParamsArg = Annotated[
    dict[str, Any] | None,
    Field(description="Values for $name parameters in cypher_filter. Default: none."),
]

ExplainArg = Annotated[
    bool,
    Field(
        description="Attach to each hit which channels ranked it, at which rank and "
        "score, and the ranking stages that moved it. Default false."
    ),
]

ChannelsArg = Annotated[
    list[RequestChannel] | None,
    Field(
        description="Restrict ranking to these channels (bm25 = memories by entity "
        "overlap, fulltext, vector). Default: every channel that can run."
    ),
]

MaxEntitiesArg = Annotated[
    int | None,
    Field(
        ge=1,
        le=100,
        description="Also return `entities`: this many entities, ranked among entities "
        "alone. Default: no such bucket.",
    ),
]

MaxMemoriesArg = Annotated[
    int | None,
    Field(
        ge=1,
        le=100,
        description="Also return `memories`: this many notes (memories without a query), "
        "ranked among notes alone. Default: no such bucket.",
    ),
]

MaxExampleQueriesArg = Annotated[
    int | None,
    Field(
        ge=1,
        le=100,
        description="Also return `example_queries`: this many saved example queries, "
        "ranked among them alone. Default: no such bucket.",
    ),
]


InspectResponse.model_rebuild()  # NoteDetail is defined after it


ScopeArg = Annotated[
    str | list[str] | None,
    Field(
        description="Which corpora to search: 'semantic' (default: entities and memories), "
        "'memory', 'conversations', 'vault', 'summaries', 'all' (every one but summaries), "
        "or a list of these. Scoped hits carry `source`; ids are entity ids, 'memory:<n>', "
        "'conversation:<message_id>', 'vault:<slug>', 'summary:<hex>'."
    ),
]

MaxPerSourceArg = Annotated[
    int | None,
    Field(ge=1, le=100, description="Scoped search: at most this many hits of one source."),
]

TagsArg = Annotated[
    list[str] | None,
    Field(description="Scoped search: only vault notes with any of these tags."),
]

StatusArg = Annotated[
    list[str] | None,
    Field(description="Scoped search: only vault notes with any of these statuses."),
]

RoleArg = Annotated[
    Literal["user", "assistant"] | None,
    Field(description="Scoped search: only conversation messages of this role."),
]


# -- browsing the layer (list and describe tools) ----------------------------------------------


class LayerItem(BaseModel):
    """One datasource, model, column, measure or aggregation as a listing shows it."""

    kind: Kind
    id: str
    name: str
    datasource: str
    label: str | None = Field(default=None, exclude_if=_absent)
    description: str | None = Field(
        default=None, exclude_if=_absent, description="its first line, up to 200 characters"
    )
    data_type: str | None = Field(default=None, exclude_if=_absent)
    formula: str | None = Field(default=None, exclude_if=_absent)
    physical: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="a model's table or relation, a column's SQL expression",
    )
    primary_key: bool | None = Field(default=None, exclude_if=_absent)


class LayerPage(BaseModel):
    """A page of a listing, sorted by id."""

    items: list[LayerItem]
    total: int = Field(description="how many match the filters, over all pages")
    offset: int
    next_offset: int | None = Field(
        default=None, description="pass as offset for the next page; null on the last page"
    )


class JoinInfo(BaseModel):
    """A join between two models, with its keys as full column ids."""

    source: str = Field(description="the model that declares the join")
    target: str = Field(description="the model it joins to")
    keys: list[tuple[str, str]] = Field(
        default_factory=list, description="(source column id, target column id) pairs"
    )
    cardinality: str | None = None
    join_type: str | None = Field(default=None, exclude_if=_absent)


class ModelDescription(BaseModel):
    """A model with everything needed to query it."""

    model: LayerItem
    dimensions: list[LayerItem] = Field(description="its columns (visible ones)")
    measures: list[LayerItem] = Field(description="its measures and aggregations (visible ones)")
    joins: list[JoinInfo] = Field(
        description="joins it declares and joins other models declare to it, with keys"
    )
    memories: list[str] = Field(default_factory=list, description="ids of memories tagged with it")


class MemoryPage(BaseModel):
    """A page of saved memories, newest first."""

    memories: list[Memory]
    total: int
    offset: int
    next_offset: int | None = None


# -- the query plan of a grouped question --------------------------------------------------------


class PlanItem(BaseModel):
    """A measure or grouping dimension the plan chose, and the question's words that chose it."""

    id: str
    words: str = Field(description="the part of the question this item answers")
    alternatives: list[str] | None = Field(
        default=None, exclude_if=_absent, description="explain=true: the runner-up ids"
    )


class PlanTime(BaseModel):
    """The time grain a question names ("per month", "last quarter")."""

    grain: Literal["day", "week", "month", "quarter", "year"]
    words: str
    dimension: str | None = Field(
        default=None, exclude_if=_absent, description="a date or time column of the measure's model"
    )


class QueryPlan(BaseModel):
    """What a grouped question asks for, as ids: the measure(s), the grouping dimensions
    and time grain it names, the models involved and the join path between them."""

    measures: list[PlanItem]
    dimensions: list[PlanItem] = Field(default_factory=list)
    time: PlanTime | None = Field(default=None, exclude_if=_absent)
    models: list[str] = Field(default_factory=list, description="the models involved")
    joins: list[JoinInfo] = Field(
        default_factory=list, description="the join path between the models, with keys"
    )
    warnings: list[str] | None = Field(default=None, exclude_if=_absent)


SearchResponse.model_rebuild()
