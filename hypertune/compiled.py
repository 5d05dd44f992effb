"""Compiled (numba) kernels: the fast path of the built-in semirings over fixed-size values.

Beside the semiring kernels: the project's one open-addressing table of int64 keys (:func:`find_key`,
:func:`insert_key`), used by the BLEU kernels and the readers, and :data:`uncounted_jit`, the decorator
of allocation-free per-item kernels.

The kernels compute exactly what the generic algorithms in :mod:`hypertune.algorithms.inside_outside`
compute with :class:`~hypertune.semirings.BooleanSemiring`, :class:`~hypertune.semirings.RealSemiring`,
:class:`~hypertune.semirings.LogSemiring`, :class:`~hypertune.semirings.TropicalSemiring` and the
first-order :class:`~hypertune.semirings.ExpectationSemiring`; the tests check that they agree.
One loop per algorithm serves all scalar semirings: ``mode`` selects ``plus``/``times``/``zero``/``one``
(:data:`MODES`), the branches are hoisted by LLVM, and there is no Python loop over edges.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from llvmlite.binding import llvm_version_info  # type: ignore[import-untyped]
from numba.core import cgutils, types
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic, overload

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package

BOOLEAN, REAL, LOG, TROPICAL = 0, 1, 2, 3
MODES = {"boolean": BOOLEAN, "real": REAL, "log": LOG, "tropical": TROPICAL}

_jit = numba.njit(cache=True, nogil=True)


def _jit_without_reference_counts():
    """The decorator for a kernel called once per item that allocates nothing: compiled without reference
    counting (numba's ``_nrt`` option, not public API). Otherwise every call counts each array of its
    arguments (and of the tuples its inlined helpers bind) up and down again, which can cost as much as the
    work (the cdec JSON reader's edges, the n-gram intersection's edge copies). numba refuses to compile an
    allocation in such a kernel. numba keeps the option on ``CPUTargetOptions`` (0.68; ``TargetOptions`` in
    older versions); a numba that knows neither gets an ordinary kernel."""
    try:
        from numba.core.cpu import CPUTargetOptions
        from numba.core.options import TargetOptions
    except ImportError:  # pragma: no cover - numba's layout changed
        return _jit
    known = hasattr(CPUTargetOptions, "_nrt") or hasattr(TargetOptions, "_nrt")
    return numba.njit(cache=True, nogil=True, _nrt=False) if known else _jit


uncounted_jit = _jit_without_reference_counts()

_WITHOUT_WRAPPERS: dict[str, Any] = {
    "nopython": True,
    "nogil": True,
    "no_cpython_wrapper": True,
    "no_cfunc_wrapper": True,
}


class _CalleeDispatcher(CPUDispatcher):
    """A kernel compiled without the wrappers that let Python call it (each costs a tenth of a second or more
    to compile): called from Python, it raises instead of jumping to the missing wrapper (a crash)."""

    def __call__(self, *args: Any, **kws: Any) -> Any:
        raise TypeError(f"{self.py_func.__qualname__} is compiled to be called from other kernels only")


def _without_wrappers(func: Callable[..., Any], dispatcher: type[CPUDispatcher], **options: Any) -> Any:
    if getattr(numba.config, "DISABLE_JIT", False):  # NUMBA_DISABLE_JIT: plain Python, as numba.njit does
        return func
    compiled = dispatcher(py_func=func, locals={}, targetoptions={**_WITHOUT_WRAPPERS, **options})
    compiled.enable_caching()
    return compiled


def prefetch(array: np.ndarray, index: int) -> None:
    """Ask the processor to bring the cache line of entry ``index`` of a C-contiguous ``array`` (a flat index,
    whatever its dimensions) towards its caches: a hint, LLVM's ``llvm.prefetch`` (a read, kept in every cache
    level) in compiled code, which reads nothing and cannot fault, so any index is allowed; nothing at all in
    plain Python (``NUMBA_DISABLE_JIT``)."""


@intrinsic
def _llvm_prefetch(typingctx: Any, array: Any, index: Any) -> Any:  # pragma: no cover - compiled
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = builder.bitcast(builder.gep(ary.data, [args[1]]), cgutils.voidptr_t)
        i32 = ir.IntType(32)
        name = "llvm.prefetch.p0" if llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"  # opaque pointers or not
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, i32, i32, i32]), name
        )
        builder.call(function, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@overload(prefetch)
def _prefetch_compiled(array: Any, index: Any) -> Any:  # pragma: no cover - compiled
    def implementation(array: Any, index: Any) -> None:
        _llvm_prefetch(array, index)  # type: ignore[call-arg]  # typed by numba: no typing context here

    return implementation


def callee_jit(func: Callable[..., Any]) -> Any:
    """The decorator of a kernel called only from other kernels, which allocates (so not :func:`helper_jit`):
    compiled without Python's wrappers, cached."""
    return _without_wrappers(func, _CalleeDispatcher)


class _HelperDispatcher(_CalleeDispatcher):
    """A dispatcher that compiles one version per argument *types*, not per constant: a call
    ``f(buf, 0, end, False)`` from a kernel reuses ``f``'s (array, int64, int64, bool) version instead of
    compiling a ``Literal[int](0), Literal[bool](False)`` one (numba types a constant argument as a literal
    and specializes on it; the readers' error codes alone made a dozen versions of one helper)."""

    def get_call_template(self, args: Any, kws: Any) -> Any:
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def helper_jit(func: Callable[..., Any]) -> Any:
    """The decorator of a small helper called only from other kernels (the compiled readers' tokenizers,
    string and key tables, error records), which allocates nothing and returns no array: compiled once per
    argument types, without reference counting (as :data:`uncounted_jit`) and without the wrappers that let
    Python call it (which cost more to compile than many a helper: 2 s of the n-best reader's 8 s). Not
    ``inline="always"``: numba's IR inlining copies a helper into every call site of every caller,
    recursively, which made the Moses n-best reader's one kernel take 80 s of CPU to compile (8 s like this,
    docs/performance.md) and the cdec JSON reader's 100 s (41 s); LLVM still inlines what pays. Python calls
    such a helper through a kernel of its own (the tests do)."""
    return _without_wrappers(func, _HelperDispatcher, **({"_nrt": False} if uncounted_jit is not _jit else {}))


@numba.njit(cache=True, inline="always")
def _zero(mode: int) -> float:
    if mode == BOOLEAN or mode == REAL:
        return 0.0
    return -math.inf


@numba.njit(cache=True, inline="always")
def _one(mode: int) -> float:
    if mode == LOG or mode == TROPICAL:
        return 0.0
    return 1.0


@numba.njit(cache=True, inline="always")
def _plus(mode: int, a: float, b: float) -> float:
    if mode == REAL:
        return a + b
    if mode == LOG:
        if a == -math.inf:
            return b
        if b == -math.inf:
            return a
        if a >= b:
            return a + math.log1p(math.exp(b - a))
        return b + math.log1p(math.exp(a - b))
    return a if a >= b else b  # tropical (max) and Boolean (or on 0/1)


@numba.njit(cache=True, inline="always")
def _times(mode: int, a: float, b: float) -> float:
    if mode == REAL:
        return a * b
    if mode == BOOLEAN:
        return a if a <= b else b
    return a + b


@_jit
def scalar_inside(mode, node_offsets, tail_offsets, tails, values):  # pragma: no cover - compiled
    """β(v) = ⊕_{e ∈ in(v)} k_e ⊗ ⊗_{u ∈ tails(e)} β(u), nodes bottom-up.

    In log mode each node's sum is taken as max + log Σ exp(x - max): one log per node, not per edge.
    """
    n = node_offsets.size - 1
    inside = np.empty(n)
    scratch = np.empty(values.size)
    for v in range(n):
        first, last = node_offsets[v], node_offsets[v + 1]
        total = _zero(mode)
        for e in range(first, last):
            x = values[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                x = _times(mode, x, inside[tails[k]])
            if mode == LOG:
                scratch[e] = x
                if x > total:
                    total = x
            else:
                total = _plus(mode, total, x)
        if mode == LOG and total > -math.inf:
            s = 0.0
            for e in range(first, last):
                s += math.exp(scratch[e] - total)
            total += math.log(s)
        inside[v] = total
    return inside


@_jit
def scalar_outside(mode, head, tail_offsets, tails, values, inside):  # pragma: no cover - compiled
    """α(goal) = one; α(u) ⊕= α(head(e)) ⊗ k_e ⊗ ⊗_{w ∈ tails(e), w ≠ u} β(w), edges top-down.

    In log mode each node accumulates a running maximum ``top`` and ``Σ exp(x - top)``: one exp per
    (edge, tail) and one log per node, instead of a log-sum-exp per (edge, tail).
    """
    n = inside.size
    zero = _zero(mode)
    outside = np.full(n, zero)
    top = np.full(n, -math.inf)
    scaled = np.zeros(n)
    outside[n - 1] = _one(mode)
    top[n - 1], scaled[n - 1] = 0.0, 1.0
    current = -1
    for e in range(head.size - 1, -1, -1):
        h = head[e]
        if mode == LOG and h != current:
            current = h
            outside[h] = top[h] + math.log(scaled[h]) if scaled[h] > 0.0 else -math.inf
        above = outside[h]
        if above == zero:
            continue
        start, stop = tail_offsets[e], tail_offsets[e + 1]
        base = _times(mode, above, values[e])
        for i in range(start, stop):
            x = base
            for j in range(start, stop):
                if j != i:
                    x = _times(mode, x, inside[tails[j]])
            u = tails[i]
            if mode == LOG:
                if x > top[u]:
                    scaled[u] = scaled[u] * math.exp(top[u] - x) + 1.0
                    top[u] = x
                elif x > -math.inf:
                    scaled[u] += math.exp(x - top[u])
            else:
                outside[u] = _plus(mode, outside[u], x)
    return outside


@_jit
def edge_inside(mode, tail_offsets, tails, values, inside):  # pragma: no cover - compiled
    """k_e ⊗ ⊗_{u ∈ tails(e)} β(u) for every edge (the edge's share of its head's inside score)."""
    out = np.empty(values.size)
    for e in range(values.size):
        x = values[e]
        for k in range(tail_offsets[e], tail_offsets[e + 1]):
            x = _times(mode, x, inside[tails[k]])
        out[e] = x
    return out


@_jit
def viterbi_inside(node_offsets, tail_offsets, tails, scores):  # pragma: no cover - compiled
    """Tropical inside with back-pointers: best score and best in-edge (first on ties) of every node."""
    n = node_offsets.size - 1
    best = np.full(n, -math.inf)
    best_edge = np.full(n, -1, dtype=np.int64)
    for v in range(n):
        for e in range(node_offsets[v], node_offsets[v + 1]):
            x = scores[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                x += best[tails[k]]
            if best_edge[v] < 0 or x > best[v]:
                best[v] = x
                best_edge[v] = e
    return best, best_edge


@_jit
def best_yields(best_edge, goals, tail_offsets, tails, target_offsets, target):  # pragma: no cover - compiled
    """The target words of the derivation that takes ``best_edge[v]`` at every node, for every goal: flat word
    ids and offsets (goal ``g``'s words are ``words[offsets[g]:offsets[g + 1]]``). An explicit stack of
    (edge, position in its target), so deep lattices need no recursion."""
    words = np.empty(max(16, target.size), dtype=np.int64)
    offsets = np.zeros(goals.size + 1, dtype=np.int64)
    stack_edge = np.empty(64, dtype=np.int64)
    stack_position = np.empty(64, dtype=np.int64)
    count = 0
    for g in range(goals.size):
        depth = 1
        stack_edge[0], stack_position[0] = best_edge[goals[g]], 0
        while depth:
            e = stack_edge[depth - 1]
            i = target_offsets[e] + stack_position[depth - 1]
            if i == target_offsets[e + 1]:
                depth -= 1
                continue
            stack_position[depth - 1] += 1
            token = target[i]
            if token >= 0:
                if count == words.size:
                    words = np.concatenate((words, np.empty(words.size, dtype=np.int64)))
                words[count] = token
                count += 1
                continue
            if depth == stack_edge.size:
                stack_edge = np.concatenate((stack_edge, np.empty(depth, dtype=np.int64)))
                stack_position = np.concatenate((stack_position, np.empty(depth, dtype=np.int64)))
            stack_edge[depth] = best_edge[tails[tail_offsets[e] - token - 1]]
            stack_position[depth] = 0
            depth += 1
        offsets[g + 1] = count
    return words[:count].copy(), offsets


@_jit
def expectation_inside(node_offsets, tail_offsets, tails, p, r):  # pragma: no cover - compiled
    """First-order expectation semiring inside: <P, R>(v) = ⊕_e <p_e, r_e> ⊗ ⊗_u <P, R>(u)."""
    n = node_offsets.size - 1
    dim = r.shape[1]
    big_p = np.zeros(n)
    big_r = np.zeros((n, dim))
    acc = np.empty(dim)
    for v in range(n):
        for e in range(node_offsets[v], node_offsets[v + 1]):
            pe = p[e]
            for d in range(dim):
                acc[d] = r[e, d]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                u = tails[k]
                pu = big_p[u]
                for d in range(dim):
                    acc[d] = pe * big_r[u, d] + pu * acc[d]
                pe = pe * pu
            big_p[v] += pe
            for d in range(dim):
                big_r[v, d] += acc[d]
    return big_p, big_r


@_jit
def boolean_inside_outside(num_nodes, head, tail_offsets, tails, keep):  # pragma: no cover - compiled
    """Edges and nodes on some derivation of the goal (last node) using only ``keep`` edges.

    Edges must be grouped by head in topological order, as in every hypergraph and builder.
    """
    edges = head.size
    reachable = np.zeros(num_nodes, dtype=np.bool_)
    usable = np.zeros(edges, dtype=np.bool_)
    for e in range(edges):
        if not keep[e]:
            continue
        ok = True
        for k in range(tail_offsets[e], tail_offsets[e + 1]):
            if not reachable[tails[k]]:
                ok = False
                break
        if ok:
            usable[e] = True
            reachable[head[e]] = True
    useful_nodes = np.zeros(num_nodes, dtype=np.bool_)
    useful_edges = np.zeros(edges, dtype=np.bool_)
    useful_nodes[num_nodes - 1] = reachable[num_nodes - 1]
    for e in range(edges - 1, -1, -1):
        if usable[e] and useful_nodes[head[e]]:
            useful_edges[e] = True
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                useful_nodes[tails[k]] = True
    return useful_edges, useful_nodes


@_jit
def grown(a: np.ndarray, need: int) -> np.ndarray:  # pragma: no cover - compiled
    """``a`` when it has ``need`` rows, else a copy with at least twice the rows (amortized growth of the
    arrays compiled searches fill: the n-gram intersection, the exact oracle's states)."""
    if need <= a.shape[0]:
        return a
    bigger = np.empty((max(need, 2 * a.shape[0]),) + a.shape[1:], a.dtype)
    bigger[: a.shape[0]] = a
    return bigger


@_jit
def csr_matvec(indptr, indices, data, vector):  # pragma: no cover - compiled
    """Sparse matrix (CSR) times dense vector: the edge scores w · f_e (summed in the order scipy sums)."""
    out = np.empty(indptr.size - 1)
    for i in range(out.size):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * vector[indices[k]]
        out[i] = s
    return out


@_jit
def dense_matvec(columns, vector):  # pragma: no cover - compiled
    """A dense matrix (column-major, every entry of :func:`csr_matvec`'s rows) times a dense vector, a column
    at a time: each row's terms are added in column order from 0.0, as :func:`csr_matvec` adds a row with
    sorted column indices, so the results are the same bit for bit (an entry the CSR rows leave out adds
    ``0.0 * v``, which for a finite ``v`` changes no sum that starts at 0.0), and the passes stream along columns."""
    out = np.zeros(columns.shape[0])
    for j in range(columns.shape[1]):
        v = vector[j]
        column = columns[:, j]
        for i in range(out.size):
            out[i] += column[i] * v
    return out


@_jit
def csc_matvec_rows(indptr, indices, data, vector, first, last, out):  # pragma: no cover - compiled
    """Rows ``first:last`` of a CSC matrix (sorted row indices) times a dense vector, into
    ``out[first:last]``. Columns whose entry in ``vector`` is zero are skipped, so a unit vector costs one
    column. Each row's terms are added in column order, as a CSR product adds them: the same results
    (up to the sign of a zero)."""
    out[first:last] = 0.0
    for j in range(vector.size):
        v = vector[j]
        if v == 0.0:
            continue
        lo, hi = indptr[j], indptr[j + 1]
        a = lo + np.searchsorted(indices[lo:hi], first)
        b = lo + np.searchsorted(indices[lo:hi], last)
        for k in range(a, b):
            out[indices[k]] += data[k] * v


# ---------------------------------------------------------------------- the key table

#: An empty slot of a key table: the one int64 that is never a key (keys are any other int64: n-gram
#: codes, feature keys, rule ids of a file, which may be negative).
EMPTY_KEY = np.iinfo(np.int64).min
_GOLDEN = np.uint64(11400714819323198485)  # 2**64 / golden ratio: Fibonacci hashing


@numba.njit(cache=True, inline="always")
def key_slot(key: int, shift: np.uint64) -> int:  # pragma: no cover - compiled
    """The home slot of an int64 ``key`` in a table of ``2**(64 - shift)`` slots."""
    return np.int64((np.uint64(key) * _GOLDEN) >> shift)


@helper_jit
def find_key(keys: np.ndarray, base: int, mask: int, shift: np.uint64, key: int) -> int:  # pragma: no cover
    """The slot (absolute index) of ``key`` in the open-addressing table ``keys[base : base + mask + 1]``
    (linear probing; ``EMPTY_KEY`` marks a free slot), or -1. The one key table of the project: the
    BLEU kernels' word and n-gram tables and the readers' :class:`~hypertune.formats._scan.KeyTable`
    are regions of it. Keys are compared, not only hashed: no collisions."""
    i = key_slot(key, shift)
    while True:
        k = keys[base + i]
        if k == key:
            return base + i
        if k == EMPTY_KEY:
            return -1
        i = (i + 1) & mask


@helper_jit
def insert_key(keys: np.ndarray, base: int, mask: int, shift: np.uint64, key: int) -> int:  # pragma: no cover
    """The slot of ``key`` (see :func:`find_key`), inserting it if absent: ``-(slot + 2)`` when new. The
    region must have a free slot."""
    i = key_slot(key, shift)
    while True:
        k = keys[base + i]
        if k == key:
            return base + i
        if k == EMPTY_KEY:
            keys[base + i] = key
            return -(base + i) - 2
        i = (i + 1) & mask


@numba.njit(cache=True, inline="always")
def _precedes(a: float, b: float) -> bool:  # pragma: no cover - compiled
    """``a`` sorts strictly before ``b`` in NumPy's order of floats: ascending, NaN last."""
    return a < b or (b != b and a == a)


@helper_jit
def stable_argsort(values: np.ndarray, lo: int, hi: int, order: np.ndarray, scratch: np.ndarray) -> None:
    """``order[: hi - lo] = np.argsort(values[lo:hi], kind="stable") + lo``: indices by ascending value, equal
    values (``-0.0 == 0.0``) in index order, NaN last; ``scratch`` holds as many. A bottom-up merge sort over
    insertion-sorted runs of 16 (a stable sort's permutation is unique, so this is NumPy's); written out
    because NumPy's argsort in numba costs a second to compile, more than the kernels that call this."""
    n = hi - lo
    for first in range(0, n, 16):
        last = min(first + 16, n)
        for i in range(first, last):
            v = values[lo + i]
            j = i
            while j > first and _precedes(v, values[order[j - 1]]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = lo + i
    source, target, swapped = order, scratch, False
    width = 16
    while width < n:
        for first in range(0, n, 2 * width):
            middle, last = min(first + width, n), min(first + 2 * width, n)
            i, j = first, middle
            for k in range(first, last):  # the right run's element first only if strictly before
                if j < last and (i == middle or _precedes(values[source[j]], values[source[i]])):
                    target[k] = source[j]
                    j += 1
                else:
                    target[k] = source[i]
                    i += 1
        source, target, swapped = target, source, not swapped
        width *= 2
    if swapped:
        for k in range(n):
            order[k] = scratch[k]
