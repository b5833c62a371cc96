"""What the Ops of `wt.linalg` share: a core signature, stacks of matrices, dtypes,
errors, and the small matrix helpers their gradients are written with.

Every decomposition and solver is a `LinalgOp` with a gufunc-style
`gufunc_signature` such as ``"(m,m),(m,n)->(m,n)"``: the core dimensions of each
input and output. Dimensions before the core ones are batch dimensions (a stack
of matrices); they broadcast between inputs like numpy's, and `make_node` and
`infer_shape` read the output shapes off the signature. A Blockwise wrapper can
use the same signature.

Dtypes: the Ops compute in float32, float64, complex64 or complex128 (LAPACK's s,
d, c and z routines); the functions of the namespace convert integer and boolean
inputs to float64 and mixed inputs to the common one (complex64 only when every
input is float32 or complex64), as numpy.linalg does. float16 and bfloat16 raise
numpy.linalg's TypeError ("array type float16 is unsupported in linalg"; scipy.linalg
would upcast, but the names of `wt.linalg` are numpy's). Outputs that are real by
definition (eigenvalues of a Hermitian matrix, singular values, log|det|) are real
for complex inputs (`output_dtypes` "real"). Complex matrices follow the conjugate
conventions: Hermitian for cholesky/eigh/"pos"/"her", ``a = L L^H``, ``U S V^H``.

Gradients of complex inputs: the autodiff has no complex gradient convention yet
(the elementwise Ops say "holomorphic gradients come later"), so every `L_op` of a
`LinalgOp` gives, for complex inputs, a gradient that is not implemented: `grad`
raises `NullTypeGradError` naming the Op and the dtype, never a wrong number; `R_op`
raises `MethodNotDefined`.

Failures (a singular matrix for `solve`/`inv`, a matrix that is not positive
definite for `cholesky`) raise `numpy.linalg.LinAlgError` naming the function,
on every linker. Wrong shapes raise what the library the function follows raises
(`shape_error`): numpy.linalg's LinAlgError (a matrix that is not square, too few
dimensions) for the numpy names and for `expm` (scipy.linalg.expm raises it too),
ValueError for scipy.linalg's solvers `solve`, `solve_triangular` and `cho_solve`
(also for a `b` whose rows do not match `a`); statically when the shapes are known,
else when run, checked before any other (`LinalgOp.check_core_shapes`, the same on
every linker; the C writes the same messages).

An ill-conditioned matrix (reciprocal 1-norm condition number below the machine
epsilon of its dtype) makes `solve` (every `assume_a` but "tri") and `inv` warn with
`LinAlgWarning`, as scipy.linalg does, on the py and C linkers (the C linker asks
LAPACK's gecon/pocon/sycon/hecon after the factorisation, or for a real general solve
runs gecon's estimator by its own faster solves, after one probe solve that skips it
for a matrix the probe shows well conditioned: gecon's decision, but for a chance of at
most 1e-8 that an ill-conditioned matrix escapes the probe, link/c/ops/lapack.py;
`perform` computes the exact
``1 / (|a|_1 |a^-1|_1)``); torch reports no condition estimate,
so the gpu linker does not warn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor.blockwise import parse_gufunc_signature
from workbench.core.tensor.elemwise import broadcast_length, broadcast_static_shapes, dimshuffle
from workbench.core.tensor.type import TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["MISMATCH_MESSAGE", "SQUARE_MESSAGE", "LinAlgError", "LinAlgWarning", "LinalgOp",
           "ShapeCheck", "as_lapack_operands", "linalg_error", "real_dtype", "shape_checked",
           "shape_error",
           "warn_if_ill_conditioned", "warn_ill_conditioned"]

#: The exception of failed factorisations, numpy's own (so `except np.linalg.LinAlgError` works).
LinAlgError = np.linalg.LinAlgError

#: The functions that follow scipy.linalg's errors for wrong shapes (ValueError), and
#: numpy's products (ValueError), whose checks `local_inv_dot_to_solve` keeps; every
#: other one follows numpy.linalg's (LinAlgError), as scipy.linalg.expm does too.
SCIPY_SHAPE_ERRORS = frozenset({"solve", "solve_triangular", "cho_solve", "dot", "matmul"})

#: The message of a matrix that is not square (the C formats it with ``%ld``s).
SQUARE_MESSAGE = ("{function}: last 2 dimensions of the array must be square, but {what}'s "
                  "are ({rows}, {cols})")
#: The message of core lengths that differ between two inputs.
MISMATCH_MESSAGE = ("{function}: {what} has {got} in its core dimension '{name}' where {other}"
                    " has {expected} (signature {signature})")


def shape_error(function: str) -> type[Exception]:
    """The exception of a wrong shape in `function`: ValueError for scipy.linalg's
    solvers, numpy.linalg's LinAlgError (a ValueError too) for the others."""
    return ValueError if function in SCIPY_SHAPE_ERRORS else LinAlgError

class LinAlgWarning(RuntimeWarning):
    """An ill-conditioned matrix in `solve` or `inv`: the result may not be accurate
    (scipy.linalg.LinAlgWarning's meaning; a RuntimeWarning like scipy's)."""


def warn_ill_conditioned(function: str, rcond: float, batch_index: int | None = None) -> None:
    """Warn `LinAlgWarning` that a matrix of `function` has reciprocal condition number
    `rcond` (the C linker calls this too, with a negative `batch_index` for None)."""
    import warnings

    where = (f" (matrix {batch_index} of the stack)"
             if batch_index is not None and batch_index >= 0 else "")
    warnings.warn(f"{function}: Ill-conditioned matrix (rcond={rcond:.6g}): result may not "
                  f"be accurate{where}", LinAlgWarning, stacklevel=2)


def warn_if_ill_conditioned(function: str, a: np.ndarray, inverse: np.ndarray | None = None
                            ) -> None:
    """`warn_ill_conditioned` for the first matrix of the stack `a` whose reciprocal
    1-norm condition number ``1 / (|a|_1 |a^-1|_1)`` is below the machine epsilon of
    its dtype (scipy's test; computed exactly here, where LAPACK's gecon estimates).
    `inverse`: `a`'s inverse when the caller has it (else it is computed)."""
    if a.size == 0:
        return
    with np.errstate(all="ignore"):
        if inverse is None:
            rcond = 1 / np.linalg.cond(a, 1)
        else:
            def norm1(m: np.ndarray) -> np.ndarray:
                return np.abs(m).sum(axis=-2).max(axis=-1)

            rcond = 1 / (norm1(a) * norm1(inverse))
    eps = np.finfo(a.dtype).eps
    flat = np.atleast_1d(rcond).reshape(-1)
    bad = np.flatnonzero(flat < eps)
    if bad.size:
        warn_ill_conditioned(function, float(flat[bad[0]]), int(bad[0]) if a.ndim > 2 else None)


#: The dtypes the Ops compute in.
COMPUTE_DTYPES = ("float32", "float64", "complex64", "complex128")


def real_dtype(dtype: Any) -> dtypes.Dtype:
    """The real dtype of the same precision (float32 for complex64); real ones unchanged."""
    d = dtypes.as_dtype(dtype)
    if d == dtypes.complex64:
        return dtypes.float32
    return dtypes.float64 if d == dtypes.complex128 else d


def _complex_inputs(inputs: Sequence[Variable]) -> list[Variable]:
    return [v for v in inputs if getattr(getattr(v.type, "dtype", None), "is_complex", False)]


def _refusing_complex_l_op(l_op: Any) -> Any:
    """`l_op` that, for complex inputs, returns "not implemented" gradients naming the
    Op and the dtype (see the module docstring) instead of running."""
    import functools

    @functools.wraps(l_op)
    def L_op(self: Op, inputs: Sequence[Variable], outputs: Sequence[Variable],  # noqa: N802
             output_grads: Sequence[Variable]) -> list[Variable]:
        found = _complex_inputs(inputs)
        if not found:
            return l_op(self, inputs, outputs, output_grads)
        from workbench.core.graph.type import grad_not_implemented

        why = (f"complex inputs ({found[0].type.dtype}): workbench has no complex gradient "
               "convention yet")
        return [grad_not_implemented(self, i, x, why) for i, x in enumerate(inputs)]

    return L_op


def _refusing_complex_r_op(r_op: Any) -> Any:
    import functools

    @functools.wraps(r_op)
    def R_op(self: Op, inputs: Sequence[Variable],  # noqa: N802
             eval_points: Sequence[Variable | None]) -> list[Variable | None]:
        found = _complex_inputs(inputs)
        if found:
            from workbench.core.graph.utils import MethodNotDefined

            raise MethodNotDefined(f"{self}.R_op for complex inputs ({found[0].type.dtype}): "
                                   "workbench has no complex gradient convention yet")
        return r_op(self, inputs, eval_points)

    return R_op


def linalg_error(function: str, message: str, batch_index: int | None = None) -> LinAlgError:
    """A LinAlgError whose message starts with the function's name (and says which matrix
    of a stack failed)."""
    where = f" (matrix {batch_index} of the stack)" if batch_index is not None else ""
    return LinAlgError(f"{function}: {message}{where}")


def min_length(m: Any, n: Any, symbolic: bool) -> Any:
    """``min(m, n)`` of two core lengths: an int, None (unknown) or, when `symbolic`, an
    int64 0-d Variable."""
    if isinstance(m, (int, np.integer)) and isinstance(n, (int, np.integer)):
        return int(min(m, n))
    if not symbolic:
        return 0 if 0 in (m, n) else None
    from workbench.core.tensor.math import minimum

    return minimum(m, n)


def _is_symbolic(var: Any) -> bool:
    return not isinstance(var, (int, np.integer))


class LinalgOp(Op):
    """Base of the linear-algebra Ops: inputs and outputs with core dimensions named by
    `gufunc_signature` and any number of leading batch dimensions.

    Subclasses set `gufunc_signature`, `function_name` (for messages) and
    `perform_core`/`perform`; `make_node` checks ranks, square matrices and matching
    core lengths, and builds the outputs (dtype: the inputs' common dtype, or
    `output_dtypes` per output). The `L_op` and `R_op` a subclass writes are wrapped
    to refuse complex inputs (module docstring).
    """

    abstract = True
    gufunc_signature = ""
    function_name = ""
    #: per output, None (the inputs' dtype) or "real" (its real counterpart: float64
    #: for complex128 inputs)
    output_dtypes: tuple[str | None, ...] = ()

    #: the names of the inputs in messages
    input_names: tuple[str, ...] = ("a", "b")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "perform" in cls.__dict__:
            cls.perform = _shape_checked_perform(cls.__dict__["perform"])  # type: ignore[method-assign]
        if "L_op" in cls.__dict__:
            cls.L_op = _refusing_complex_l_op(cls.__dict__["L_op"])  # type: ignore[method-assign]
        if "R_op" in cls.__dict__:
            cls.R_op = _refusing_complex_r_op(cls.__dict__["R_op"])  # type: ignore[method-assign]

    def output_dtype(self, k: int, dtype: Any) -> dtypes.Dtype:
        """The dtype of output `k` for inputs of `dtype`."""
        forced = self.output_dtypes[k] if k < len(self.output_dtypes) else None
        return real_dtype(dtype) if forced == "real" else dtypes.as_dtype(dtype)

    @property
    def core_ndims(self) -> tuple[list[int], list[int]]:
        ins, outs = parse_gufunc_signature(self.gufunc_signature)
        return [len(c) for c in ins], [len(c) for c in outs]

    @property
    def shape_error(self) -> type[Exception]:
        """The exception of a wrong shape (`shape_error` of the function's name)."""
        return shape_error(self.function_name)

    def input_name(self, position: int) -> str:
        """How messages name input `position` ("a", "b")."""
        names = self.input_names
        return names[position] if position < len(names) else f"input {position}"

    def check_core_shapes(self, shapes: Sequence[Sequence[Any]]) -> None:
        """Raise `shape_error` for an input whose core matrix must be square and is
        not, or core lengths that differ between inputs; lengths that are None
        (unknown statically) are skipped. `make_node` calls it with static shapes,
        `perform` and the torch kernels with the values' shapes (the C checks the same
        with the same messages)."""
        ins, _ = parse_gufunc_signature(self.gufunc_signature)
        known: dict[str, tuple[int, str]] = {}
        for position, (shape, core) in enumerate(zip(shapes, ins)):
            what = self.input_name(position)
            lengths = tuple(shape)[len(shape) - len(core):]
            if (len(core) == 2 and core[0] == core[1] and None not in lengths
                    and lengths[0] != lengths[1]):
                raise self.shape_error(SQUARE_MESSAGE.format(
                    function=self.function_name, what=what, rows=lengths[0], cols=lengths[1]))
            for name, length in zip(core, lengths):
                if length is None:
                    continue
                if name in known and known[name][0] != length:
                    raise self.shape_error(MISMATCH_MESSAGE.format(
                        function=self.function_name, what=what, got=length, name=name,
                        other=known[name][1], expected=known[name][0],
                        signature=self.gufunc_signature))
                known.setdefault(name, (int(length), what))

    def check_inputs(self, inputs: Sequence[Variable]) -> None:
        """Ranks, dtypes and static core lengths against the signature."""
        ins, _ = parse_gufunc_signature(self.gufunc_signature)
        if len(inputs) != len(ins):
            raise TypeError(f"{self.function_name} takes {len(ins)} inputs, got {len(inputs)}")
        dtype = inputs[0].type.dtype
        for position, (var, core) in enumerate(zip(inputs, ins)):
            what = self.input_name(position)
            if var.type.ndim < len(core):
                raise self.shape_error(
                    f"{self.function_name}: {what} has {var.type.ndim} dimension(s) but needs "
                    f"at least {len(core)} (core dimensions {'(' + ','.join(core) + ')'})")
            if str(var.type.dtype) not in COMPUTE_DTYPES or var.type.dtype != dtype:
                raise TypeError(
                    f"{self}: all inputs must be of one dtype among {', '.join(COMPUTE_DTYPES)}"
                    f", got {what} of type {var.type} (the functions of wt.linalg cast for "
                    "you)")
        self.check_core_shapes([v.type.shape for v in inputs])

    def make_node(self, *inputs: Any) -> Apply:
        inputs = [as_tensor_variable(v) for v in inputs]
        self.check_inputs(inputs)
        ins, outs = parse_gufunc_signature(self.gufunc_signature)
        batches = [v.type.shape[:v.type.ndim - len(c)] for v, c in zip(inputs, ins)]
        nb = max(len(b) for b in batches)
        batch = broadcast_static_shapes([(1,) * (nb - len(b)) + b for b in batches])
        if batch is None:
            raise ValueError(f"{self.function_name}: the batch dimensions "
                             f"{', '.join(format_shape(b) for b in batches)} cannot be broadcast "
                             "together")
        lengths: dict[str, int | None] = {}
        for var, core in zip(inputs, ins):
            for name, length in zip(core, var.type.shape[var.type.ndim - len(core):]):
                if lengths.get(name) is None:
                    lengths[name] = length
        lengths.update(self.derived_lengths(lengths, symbolic=False))
        dtype = inputs[0].type.dtype
        outputs = []
        for k, core in enumerate(outs):
            shape = batch + tuple(lengths.get(name) for name in core)
            outputs.append(TensorType(self.output_dtype(k, dtype), shape)())
        return Apply(self, inputs, outputs)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        ins, outs = parse_gufunc_signature(self.gufunc_signature)
        nb = node.outputs[0].type.ndim - len(outs[0])
        batch: list[Any] = []
        for d in range(nb):
            static = node.outputs[0].type.shape[d]
            if static is not None:
                batch.append(static)
                continue
            candidates = []
            for var, shape, core in zip(node.inputs, input_shapes, ins):
                offset = nb - (var.type.ndim - len(core))
                if d >= offset and var.type.shape[d - offset] != 1:
                    candidates.append(shape[d - offset])
            batch.append(broadcast_length(candidates) if candidates else 1)
        lengths: dict[str, Any] = {}
        for shape, core in zip(input_shapes, ins):
            for name, length in zip(core, shape[len(shape) - len(core):]):
                if name not in lengths or (_is_symbolic(lengths[name])
                                           and not _is_symbolic(length)):
                    lengths[name] = length
        lengths.update(self.derived_lengths(lengths, symbolic=True))
        result = []
        for out, core in zip(node.outputs, outs):
            static_core = out.type.shape[nb:]
            result.append(tuple(batch) + tuple(
                s if s is not None else lengths[name] for s, name in zip(static_core, core)))
        return result

    def derived_lengths(self, lengths: dict[str, Any], symbolic: bool) -> dict[str, Any]:
        """Core lengths of the outputs that no input names (e.g. ``k = min(m, n)`` of an
        SVD), from the known ones: static ints or None when `symbolic` is False,
        ints or int64 0-d Variables when True."""
        return {}

    #: props not shown by pprint (implied by the inputs' ranks)
    pprint_hidden: tuple[str, ...] = ("b_ndim",)
    #: the name pprint writes ("": `function_name`, the name messages use)
    pprint_name = ""

    def pprint_text(self, args: Sequence[str]) -> str:
        """How pprint writes the node: the function's name, its arguments and the props
        that differ from the function's defaults (``solve(A, b, assume_a='pos')``)."""
        import inspect

        defaults = {name: param.default for name, param in
                    inspect.signature(type(self).__init__).parameters.items()
                    if param.default is not inspect.Parameter.empty}
        shown = [f"{name}={getattr(self, name)!r}" for name in self.__props__
                 if name not in self.pprint_hidden and name in defaults
                 and getattr(self, name) != defaults[name]]
        return f"{self.pprint_name or self.function_name}({', '.join([*args, *shown])})"

    def batch_shape(self, inputs: Sequence[np.ndarray]) -> tuple[int, ...]:
        """The broadcast batch shape of input values (numpy's error when they do not)."""
        ins, _ = parse_gufunc_signature(self.gufunc_signature)
        try:
            return np.broadcast_shapes(*(v.shape[:v.ndim - len(c)] for v, c in zip(inputs, ins)))
        except ValueError as exc:
            raise ValueError(f"{self.function_name}: {exc}") from None


def _shape_checked_perform(perform: Any) -> Any:
    """`perform` that first checks the core shapes of the values (`check_core_shapes`)."""
    import functools

    @functools.wraps(perform)
    def checked(self: LinalgOp, node: Apply, inputs: Sequence[Any],
                output_storage: list[list[Any]]) -> None:
        self.check_core_shapes([np.shape(v) for v in inputs])
        perform(self, node, inputs, output_storage)

    return checked


class ShapeCheck(LinalgOp):
    """Its first input, unchanged (a view), once the core shapes of all its inputs fit
    `signature` (`check_core_shapes`: a matrix that must be square, lengths that must
    agree), raising what `function` raises: numpy's LinAlgError for `matrix_power` and
    `lstsq`, which are composed of products whose own error would be another. Put in
    the graph only where the shapes are not known statically (else the function checks
    them when built); any dtype (matrix_power of integers)."""

    __props__ = ("function", "signature")
    view_map = {0: [0]}  # noqa: RUF012 (the Op contract's class attribute)

    def __init__(self, function: str, signature: str) -> None:
        self.function, self.signature = str(function), str(signature)

    @property
    def function_name(self) -> str:  # type: ignore[override]
        return self.function

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        return self.signature

    def make_node(self, *inputs: Any) -> Apply:
        inputs = [as_tensor_variable(v) for v in inputs]
        ins, _ = parse_gufunc_signature(self.signature)
        for position, (var, core) in enumerate(zip(inputs, ins)):
            if var.type.ndim < len(core):
                raise self.shape_error(f"{self.function}: {self.input_name(position)} has "
                                       f"{var.type.ndim} dimension(s) but needs at least "
                                       f"{len(core)}")
        self.check_core_shapes([v.type.shape for v in inputs])
        return Apply(self, inputs, [inputs[0].type()])

    def pprint_text(self, args: Sequence[str]) -> str:
        return args[0]

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = inputs[0]  # the checked-perform wrapper checked the shapes

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        from workbench.core.graph.type import disconnected_type

        return [output_grads[0], *(disconnected_type() for _ in inputs[1:])]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [eval_points[0]]


def shape_checked(function: str, signature: str, *values: Variable) -> Variable:
    """`values[0]`, through a `ShapeCheck` when some core length of `values` is not
    known statically (the check then happens when run); static shapes are checked
    here, now."""
    check = ShapeCheck(function, signature)
    ins, _ = parse_gufunc_signature(signature)
    core = [v.type.shape[v.type.ndim - len(c):] for v, c in zip(values, ins)]
    if all(length is not None for lengths in core for length in lengths):
        check.check_core_shapes([v.type.shape for v in values])
        return values[0]
    return check(*values)


# -- conversion of user inputs ---------------------------------------------------------


def lapack_dtype(function: str, tensors: Sequence[Variable]) -> dtypes.Dtype:
    """numpy.linalg's compute dtype of `tensors`: float32 or complex64 when every input is
    float32 or complex64, else float64 or complex128 (complex when one input is);
    integers and booleans count as float64. float16 and bfloat16 raise numpy's
    TypeError, naming the function and the input."""
    narrow = (dtypes.float32, dtypes.complex64)
    for position, var in enumerate(tensors):
        d = var.type.dtype
        if d in (dtypes.float16, dtypes.bfloat16):
            what = var.name or f"input {position}"
            raise TypeError(f"{function}: array type {d} is unsupported in linalg ({what} has "
                            f"type {var.type}; numpy.linalg refuses it too: cast to float32)")
    single = all(v.type.dtype in narrow for v in tensors)
    if any(v.type.dtype.is_complex for v in tensors):
        return dtypes.complex64 if single else dtypes.complex128
    return dtypes.float32 if single else dtypes.float64


def as_lapack_operands(function: str, *values: Any, min_ndims: Sequence[int] = ()
                       ) -> list[Variable]:
    """The inputs of a linalg function as tensors of one compute dtype (`lapack_dtype`:
    float32, float64, complex64 or complex128). Refuses float16/bfloat16 (as numpy)
    and too few dimensions (`shape_error` of the function)."""
    from workbench.core.tensor.basic import cast

    tensors = [as_tensor_variable(v) for v in values]
    for position, var in enumerate(tensors):
        need = min_ndims[position] if position < len(min_ndims) else 0
        if var.type.ndim < need:
            what = var.name or f"input {position}"
            raise shape_error(function)(
                f"{function}: {what} has {var.type.ndim} dimension(s), needs at least {need} "
                f"(got type {var.type})")
    dtype = lapack_dtype(function, tensors)
    return [v if v.type.dtype == dtype else cast(v, dtype) for v in tensors]


# -- matrix helpers for the gradients ----------------------------------------------------


def transpose(x: Variable) -> Variable:
    """`x` with its last two dimensions swapped (numpy's ``x.mT``)."""
    nd = x.type.ndim
    return dimshuffle(x, (*range(nd - 2), nd - 1, nd - 2))


def conj_transpose(x: Variable) -> Variable:
    """`x` with its last two dimensions swapped and, when complex, conjugated (``x.mH``)."""
    if not x.type.dtype.is_complex:
        return transpose(x)
    from workbench.core.tensor import math as tm

    return tm.conj(transpose(x))


def add_axis(x: Variable, position: int) -> Variable:
    """`x` with a length-1 dimension inserted at `position` (negative counts from the end)."""
    nd = x.type.ndim
    position = position if position >= 0 else nd + 1 + position
    order: list[Any] = list(range(nd))
    order.insert(position, "x")
    return dimshuffle(x, order)


def drop_axis(x: Variable, position: int) -> Variable:
    """`x` without its length-1 dimension at `position` (negative counts from the end)."""
    nd = x.type.ndim
    position = position if position >= 0 else nd + position
    return dimshuffle(x, [d for d in range(nd) if d != position])


def _triangle_mask(x: Variable, lower: bool, strict: bool = False) -> Variable:
    """A boolean (n, m) mask of the lower (or upper) triangle of `x`'s core matrices."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.shape import shape_tuple

    n, m = shape_tuple(x)[-2:]
    rows = dimshuffle(arange(n), (0, "x"))
    cols = dimshuffle(arange(m), ("x", 0))
    if lower:
        return tm.gt(rows, cols) if strict else tm.ge(rows, cols)
    return tm.lt(rows, cols) if strict else tm.le(rows, cols)


def triangle(x: Variable, lower: bool, strict: bool = False) -> Variable:
    """The lower (or upper) triangle of each core matrix of `x`, zeros elsewhere
    (numpy.tril / triu with k = 0, or k = -1 / 1 when `strict`)."""
    from workbench.core.tensor import math as tm

    return tm.switch(_triangle_mask(x, lower, strict), x, 0)


def diagonal_part(x: Variable) -> Variable:
    """Each core matrix of `x` with everything off its diagonal zeroed."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.shape import shape_tuple

    n = shape_tuple(x)[-1]
    idx = arange(n)
    mask = tm.eq(dimshuffle(idx, (0, "x")), dimshuffle(idx, ("x", 0)))
    return tm.switch(mask, x, 0)


def symmetric_from_triangle_grad(g: Variable, lower: bool) -> Variable:
    """The gradient with respect to the stored triangle of a symmetric matrix whose other
    triangle is implied: ``g_ij + g_ji`` below (above) the diagonal, ``g_ii`` on it, 0 in
    the triangle that is not read."""
    from workbench.core.tensor import math as tm

    return tm.sub(triangle(tm.add(g, transpose(g)), lower), diagonal_part(g))


def eye_like(w: Variable) -> Variable:
    """The identity matrix of w's dtype, as long as w's last dimension."""
    from workbench.core.tensor.creation import eye
    from workbench.core.tensor.shape import shape_tuple

    return eye(shape_tuple(w)[-1], dtype=w.type.dtype)


def batched_outer(u: Variable, v: Variable) -> Variable:
    """``u[..., :, None] * v[..., None, :]``."""
    from workbench.core.tensor import math as tm

    return tm.mul(add_axis(u, -1), add_axis(v, -2))


def sum_to_input(g: Variable, x: Variable, core: int) -> Variable:
    """`g`, computed at the broadcast batch shape, summed back to the batch shape of `x`
    (whose last `core` dimensions are its core dimensions)."""
    from workbench.core.tensor.reduction import sum as reduce_sum

    lead = g.type.ndim - x.type.ndim
    if lead > 0:
        g = reduce_sum(g, tuple(range(lead)))
    axes = tuple(d for d in range(x.type.ndim - core)
                 if x.type.shape[d] == 1 and g.type.shape[d] != 1)
    if axes:
        g = reduce_sum(g, axes, keepdims=True)
    if any(x.type.shape[d] is None for d in range(x.type.ndim - core)):
        from workbench.core.tensor.elemwise import sum_to_shape

        g = sum_to_shape(g, x, [g])  # a batch length 1 only known at run time
    return g
