"""An int8 first pass for the exact vector search of a large index.

The exact search takes every row's dot product with the query: over 540k vectors of
384 dimensions that streams 830 MB of float32 from memory a query (33 ms on two free
cores). An int8 copy of the rows, with a scale per row, is a quarter of that, and ONNX
Runtime's integer product (``MatMulInteger``, over a copy of the rows it packs once)
takes about 9 ms.

The int8 scores are only near the cosines, but how near is known: for a row ``x``
stored as ``s·X`` (``X`` int8) and a query ``q`` as ``t·Ā`` (``Ā = A − 64``), the
int8 score ``s·t·⟨X, Ā⟩`` is off from ``⟨x, q⟩`` by ``⟨x − s·X, q⟩ + ⟨s·X, q − t·Ā⟩``,
at most ``‖x − s·X‖·‖q‖ + ‖s·X‖·‖q − t·Ā‖`` (Cauchy–Schwarz; the rows' norms are
measured when the copy is made, the query's at each search). Every row
whose int8 score comes within the largest such bound of the k-th best float32 score of
the first candidates is scored again in float32 (:meth:`VectorIndex._search_screened`),
so a search returns what the float32 product over every row returns, not an
approximation of it.

Used when onnxruntime (the ``[local]`` extra) can be imported; the product graph is
written here, a few hundred bytes, not read from a file. The copies cost memory: the
int8 rows, and ONNX Runtime's packed copy of them (414 MB beside the 830 MB of float32
at 540k x 384).

The query is kept to 7 bits (levels −63..63, stored as 1..127): on x86 CPUs without
VNNI, ONNX Runtime's uint8 × int8 kernel adds two products in a saturating 16-bit
lane, which 255 × 127 × 2 overflows and 127 × 127 × 2 does not. With the full 8 bits,
a score on such a CPU (AVX2 only) could be off by far more than the bound, and a row
of the top k missed; with 7 the product is exact on every CPU.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from typing import Any

import numpy as np

__all__ = ["Int8Screen", "screen_available"]

log = logging.getLogger("layersearch.ranking.int8_screen")

#: rows quantised at a time (bounds the float32 temporary)
_BLOCK = 65_536
#: the query's levels: −63..63, stored as uint8 1..127 (7 bits: see the module notes)
_LEVELS = 63
_ZERO_POINT = 64
#: float32 rounding of the scores compared, on top of the quantisation bound
_SLACK = 1e-5


@functools.cache
def screen_available() -> bool:
    """Whether onnxruntime can be imported."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class Int8Screen:
    """The int8 copy of ``matrix``'s rows and the session that scores a query against
    them. ``scores(q)`` gives every row's int8 score and the bound on its error."""

    def __init__(self, matrix: np.ndarray, threads: int | None = None) -> None:
        import onnxruntime as ort

        started = time.perf_counter()
        n, dims = matrix.shape
        self.rows = n
        #: the process the session was made in (a forked child makes its own: ONNX
        #: Runtime's threads are not copied into it)
        self.pid = os.getpid()
        # The weights are the graph's [dims, n] right-hand side, in rows of n values.
        weights = np.empty((dims, n), dtype=np.int8)
        scales = np.empty(n, dtype=np.float32)
        residual = np.empty(n, dtype=np.float32)  # ‖x − s·X‖ per row
        stored = np.empty(n, dtype=np.float32)  # ‖s·X‖ per row
        for lo in range(0, n, _BLOCK):
            block = np.asarray(matrix[lo : lo + _BLOCK], dtype=np.float32)
            peak = np.abs(block).max(axis=1)
            scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
            q = np.rint(block / scale[:, None]).astype(np.int8)
            weights[:, lo : lo + len(block)] = q.T
            scales[lo : lo + len(block)] = scale
            back = q.astype(np.float32) * scale[:, None]
            stored[lo : lo + len(block)] = np.linalg.norm(back, axis=1)
            residual[lo : lo + len(block)] = np.linalg.norm(block - back, axis=1)
        self._scales = scales
        self._residual = float(residual.max(initial=0.0))
        self._stored = float(stored.max(initial=0.0))
        self._weights = weights
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(os.cpu_count() or 1, 8))
        options.inter_op_num_threads = 1
        # The graph declares a one-column placeholder that the rows replace: ORT warns
        # that the output is wider than declared. Errors only.
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # ORT reads the rows from this value while the session lives: keep both.
        self._value = ort.OrtValue.ortvalue_from_numpy(weights)
        options.add_initializer("B", self._value)
        self._session = ort.InferenceSession(
            product_graph(dims), options, providers=["CPUExecutionProvider"]
        )
        log.info("int8 copy of %d vectors in %.2fs", n, time.perf_counter() - started)

    def scores(self, q: np.ndarray) -> tuple[np.ndarray, float]:
        """Each row's int8 score for the query ``q`` and the most any is off by."""
        peak = float(np.abs(q).max())
        step = peak / _LEVELS if peak > 0 else 1.0
        levels = np.rint(q / step)
        a = (levels + _ZERO_POINT).astype(np.uint8)[None, :]
        raw: Any = self._session.run(None, {"A": a})[0]
        approx = raw[0].astype(np.float32)
        approx *= self._scales
        approx *= np.float32(step)
        query_residual = float(np.linalg.norm(q - levels * step))
        bound = self._residual * float(np.linalg.norm(q)) + self._stored * query_residual
        return approx, bound + _SLACK


# -- the graph: Y[1, n] = MatMulInteger(A[1, dims] uint8, B[dims, n] int8, 64) -------------
# Written as protobuf by hand (the onnx package is not a run-time dependency). Field
# numbers are onnx.proto's.


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(field << 3 | 2) + _varint(len(data)) + data


_UINT8, _INT8, _INT32 = 2, 3, 6


def _value_info(name: str, elem: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    tensor_type = _int(1, elem) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def _tensor(name: str, elem: int, dims: list[int], raw: bytes) -> bytes:
    return b"".join(_int(1, d) for d in dims) + _int(2, elem) + _bytes(8, name) + _bytes(9, raw)


@functools.cache
def product_graph(dims: int) -> bytes:
    """The ONNX model of the int8 product, its ``B`` a placeholder the rows replace."""
    node = _bytes(1, "A") + _bytes(1, "B") + _bytes(1, "zero") + _bytes(2, "Y")
    node += _bytes(3, "scores") + _bytes(4, "MatMulInteger")
    graph = _bytes(1, node) + _bytes(2, "int8_scores")
    graph += _bytes(5, _tensor("zero", _UINT8, [], bytes([_ZERO_POINT])))
    graph += _bytes(5, _tensor("B", _INT8, [dims, 1], bytes(dims)))
    graph += _bytes(11, _value_info("A", _UINT8, [1, dims]))
    graph += _bytes(12, _value_info("Y", _INT32, [1, "rows"]))
    opset = _bytes(1, "") + _int(2, 13)
    return _int(1, 8) + _bytes(8, opset) + _bytes(7, graph)
