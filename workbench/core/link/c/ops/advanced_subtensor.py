"""C for advanced indexing: AdvancedSubtensor (a gather) and AdvancedIncSubtensor (a
scatter that sets, or increments like ``np.add.at``).

The index's layout is known when the code is generated (`AdvancedIndexPlan`: which
output dimensions are basic ones, sliced or kept whole or new, where the broadcast
dimensions of the index arrays go), so the C is straight-line for it. At run time:

1. the basic dimensions: slices follow Python's `slice.indices` (subtensor.py's
   `wbs_slice`), each giving a length, a stride and a start offset;
2. boolean masks become the coordinates of their True elements (NumPy's `nonzero`),
   one index vector per axis they cover; a mask whose shape differs from the axes
   it covers is NumPy's IndexError (except a mask axis of length 0, as NumPy);
3. the index arrays broadcast together (NumPy's IndexError "shape mismatch" when they
   cannot), and one pass over the broadcast shape reads every index, wraps negative
   ones and checks the bounds (NumPy's IndexError naming the index, axis and length);
   an empty broadcast reads no index, as NumPy;
4. with no basic dimension before the broadcast ones, each element or inner block is
   copied (gather) or written (scatter) as soon as its index is read; otherwise the
   byte offsets go to a table read once per outer position. A scatter in place reads
   every index once before the first write, so a bad index leaves x untouched (a
   copy being written is discarded on an error). Blocks are one `memcpy` when
   contiguous; the scatter writes or adds the value (broadcast to the indexed shape)
   in NumPy's order, so repeated indices accumulate when incrementing and the last
   write wins when setting.

A 0-d boolean mask (``x[True]``) has no C: such a node runs `perform`.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Variable
from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import alloc_output, copy_to_output
from workbench.core.link.c.ops.join import COPY_SUPPORT
from workbench.core.link.c.ops.shape import ViewCBase, tensor_dtypes_have_c
from workbench.core.link.c.ops.subtensor import (
    SUBTENSOR_SUPPORT,
    element_update,
    inner_update_loop,
)
from workbench.core.link.c.types import c_type_name
from workbench.core.tensor.advanced_subtensor import (
    AdvancedIncSubtensor,
    AdvancedIndexPlan,
    AdvancedSubtensor,
)
from workbench.core.tensor.indexing import fill

__all__ = ["AdvancedIncSubtensorC", "AdvancedSubtensorC"]

#: Small offset tables live on the stack; larger ones are allocated per call.
_SMALL = 32


def _is_mask(entry: Any) -> bool:
    return isinstance(entry, Variable) and entry.type.dtype.is_bool


def _has_zero_d_mask(node: Any, first_index: int) -> bool:
    return any(v.type.dtype.is_bool and v.type.ndim == 0 for v in node.inputs[first_index:])


class _Layout:
    """The generated C's view of an advanced index on a node: the plan, the C names of
    its index inputs, and the index components (one per indexed axis)."""

    def __init__(self, op: Any, node: Any, inputs: list[str], first_index: int) -> None:
        index_vars = node.inputs[first_index:]
        self.names = {id(v): c for v, c in zip(index_vars, inputs[first_index:])}
        self.nd = node.inputs[0].type.ndim
        self.plan = AdvancedIndexPlan(op.idx_list, fill(op.idx_list, index_vars), self.nd)
        # components: ("const", axis, value) | ("scalar", axis, cname, dtype) |
        # ("array", axis, cname, dtype, ndim) | ("coords", axis, mask number, k)
        self.components: list[tuple[Any, ...]] = []
        self.masks: list[tuple[str, int, int]] = []  # (cname, first axis, ndim)
        for entry, axis in self.plan.advanced:
            if isinstance(entry, int):
                self.components.append(("const", axis, entry))
            elif _is_mask(entry):
                m = len(self.masks)
                self.masks.append((self.names[id(entry)], axis, entry.type.ndim))
                for k in range(entry.type.ndim):
                    self.components.append(("coords", axis + k, m, k))
            elif entry.type.ndim == 0:
                self.components.append(("scalar", axis, self.names[id(entry)],
                                        entry.type.dtype))
            else:
                self.components.append(("array", axis, self.names[id(entry)],
                                        entry.type.dtype, entry.type.ndim))
        ranks = [c[4] for c in self.components if c[0] == "array"]
        ranks += [1 for c in self.components if c[0] == "coords"]
        self.br = max(ranks, default=0)  # rank of the broadcast index shape
        self.nb = len(self.plan.basic)
        self.at = self.plan.insert_at
        self.rank = self.nb + self.br  # rank of x[idx]

    def arrays(self) -> list[tuple[int, tuple[Any, ...]]]:
        """(number, component) of the components read per broadcast position."""
        return [(j, c) for j, c in enumerate(self.components) if c[0] in ("array", "coords")]


def _slice_part(part: Any, names: dict[int, str]) -> tuple[str, str]:
    """(has, value) C expressions of a slice start/stop/step (int, None or Variable)."""
    if part is None:
        return "0", "0"
    if isinstance(part, Variable):
        return "1", f"WBS_INDEX({names[id(part)]}, {c_type_name(part.type.dtype)})"
    return "1", f"((npy_intp){int(part)}LL)"


def _basic_code(lay: _Layout, t: str, end: str) -> str:
    """C filling `wbx_bdims`/`wbx_bstr` (the basic output dimensions of `t[idx]`) and
    moving `wbx_base` to their first element."""
    code = []
    for k, part in enumerate(lay.plan.basic):
        if part[0] == "new":
            code.append(f"wbx_bdims[{k}] = 1; wbx_bstr[{k}] = 0;")
        elif part[0] == "dim":
            code.append(f"wbx_bdims[{k}] = PyArray_DIMS({t})[{part[1]}]; "
                        f"wbx_bstr[{k}] = PyArray_STRIDES({t})[{part[1]}];")
        else:
            _, axis, entry = part
            has_start, start = _slice_part(entry.start, lay.names)
            has_stop, stop = _slice_part(entry.stop, lay.names)
            _, step = _slice_part(entry.step, lay.names)
            if entry.step is None:
                step = "1"
            code.append(f"""{{
  const npy_intp step_in = {step};
  if (step_in == 0) {{
    PyErr_SetString(PyExc_ValueError, "slice step cannot be zero"); goto {end};
  }}
  const npy_intp step = step_in < -NPY_MAX_INTP ? -NPY_MAX_INTP : step_in;
  npy_intp first, len;
  const npy_intp n = PyArray_DIMS({t})[{axis}], s = PyArray_STRIDES({t})[{axis}];
  wbs_slice(n, {has_start}, {start}, {has_stop}, {stop}, step, &first, &len);
  if (len > 0) wbx_base += first * s;
  wbx_bdims[{k}] = len; wbx_bstr[{k}] = len > 1 ? s * step : s;
}}""")
    return "\n".join(code)


def _check_index(value: str, axis: int, n: str, end: str, label: str) -> str:
    """C reading the index `value` into `v`, wrapped into `w` (axis length `n`), or
    failing with NumPy's IndexError."""
    msg = c_string_literal(f"index %ld is out of bounds for axis {axis} with size %ld (%s)")
    return f"""const npy_intp v = {value};
const npy_intp w = v < 0 ? v + {n} : v;
if (w < 0 || w >= {n}) {{
  PyErr_Format(PyExc_IndexError, {msg}, (long)v, (long){n}, {label}); goto {end};
}}"""


def _masks_code(lay: _Layout, t: str, end: str, label: str) -> str:
    """C turning each boolean mask into the coordinates of its True elements:
    `wbx_mask<m>` (k vectors of `wbx_count<m>` intp) per mask m."""
    code = []
    for m, (mask, axis, k) in enumerate(lay.masks):
        msg = c_string_literal(
            "boolean index did not match indexed array along axis %d; size of axis is %ld "
            "but size of corresponding boolean axis is %ld (%s)")
        code.append(f"""{{
  for (int j = 0; j < {k}; j++) {{
    const npy_intp n = PyArray_DIMS({t})[{axis} + j], nm = PyArray_DIMS({mask})[j];
    if (nm != 0 && n != nm) {{  /* NumPy lets a mask axis of length 0 pass */
      PyErr_Format(PyExc_IndexError, {msg}, {axis} + j, (long)n, (long)nm, {label});
      goto {end};
    }}
  }}
  npy_intp total = 1, idx[{k}], count = 0;
  for (int j = 0; j < {k}; j++) {{ total *= PyArray_DIMS({mask})[j]; idx[j] = 0; }}
  for (int pass = 0; pass < 2 && total > 0; pass++) {{
    if (pass == 1) {{
      wbx_mask{m} = (npy_intp *)malloc(({k} * count + 1) * sizeof(npy_intp));
      if (!wbx_mask{m}) {{ PyErr_NoMemory(); goto {end}; }}
      wbx_count{m} = count; count = 0;
    }}
    for (npy_intp e = 0; e < total; e++) {{
      const char *p = PyArray_BYTES({mask});
      for (int j = 0; j < {k}; j++) p += idx[j] * PyArray_STRIDES({mask})[j];
      if (*(const npy_bool *)p) {{
        if (pass == 1)
          for (int j = 0; j < {k}; j++) wbx_mask{m}[j * wbx_count{m} + count] = idx[j];
        count++;
      }}
      for (int j = {k} - 1; j >= 0; j--) {{ if (++idx[j] < PyArray_DIMS({mask})[j]) break;
                                          idx[j] = 0; }}
    }}
  }}
}}""")
    return "\n".join(code)


def _component_shape(comp: tuple[Any, ...]) -> tuple[int, list[str], list[str]]:
    """(rank, dims, byte strides) C expressions of an array component."""
    if comp[0] == "coords":
        return 1, [f"wbx_count{comp[2]}"], ["(npy_intp)sizeof(npy_intp)"]
    _, _, cname, _, nd = comp
    return (nd, [f"PyArray_DIMS({cname})[{d}]" for d in range(nd)],
            [f"PyArray_STRIDES({cname})[{d}]" for d in range(nd)])


def _read(comp: tuple[Any, ...], ptr: str) -> str:
    if comp[0] == "coords":
        return f"*(const npy_intp *)({ptr})"
    ctype = c_type_name(comp[3])
    return f"wbs_clamp_{ctype}(*(const {ctype} *)({ptr}))"


def _broadcast_code(lay: _Layout, t: str, end: str, label: str) -> str:
    """C broadcasting the index components (`wbx_bshape`, `wbx_bsize`; NumPy's
    IndexError when they cannot) and checking the scalar ones (into `wbx_off0`)."""
    br = lay.br
    code = [_offsets_shape_only(lay)]
    arrays = lay.arrays()
    mismatch = c_string_literal("shape mismatch: indexing arrays could not be broadcast "
                                "together with shapes %s (%s)")
    shapes_text = [_component_shape(comp)[:2] for _, comp in arrays]
    # the message lists every index array's shape, as NumPy's
    pieces = []
    for rank, dims in shapes_text:
        pieces.append(f"    {{ npy_intp s[{max(rank, 1)}] = {{{', '.join(dims) or '0'}}};\n"
                      f"      char b[128]; wbv_shape_text(b, sizeof(b), s, {rank}, 1);\n"
                      f"      at += snprintf(text + at, at < sizeof(text) ? sizeof(text) - at "
                      f": 0, \"%s%s\", at ? \" \" : \"\", b); }}")
    code.append(f"""if (wbx_bad) {{
  char text[1024]; size_t at = 0;
{chr(10).join(pieces)}
  PyErr_Format(PyExc_IndexError, {mismatch}, text, {label}); goto {end};
}}""")
    code.append(f"for (int d = 0; d < {br}; d++) wbx_bsize *= wbx_bshape[d];")
    # scalar components: checked once (even for an empty broadcast, as NumPy), folded
    # into the constant offset
    for comp in lay.components:
        if comp[0] == "const":
            value = f"((npy_intp){int(comp[2])}LL)"
        elif comp[0] == "scalar":
            value = f"WBS_INDEX({comp[2]}, {c_type_name(comp[3])})"
        else:
            continue
        n = f"PyArray_DIMS({t})[{comp[1]}]"
        code.append(f"{{\n{_check_index(value, comp[1], n, end, label)}\n"
                    f"  wbx_off0 += w * PyArray_STRIDES({t})[{comp[1]}];\n}}")
    return "\n".join(code)


def _offsets_loop(lay: _Layout, t: str, end: str, label: str, y_strides: str | None,
                  emit: str | None = None) -> str:
    """C reading every index of the broadcast (after `_broadcast_code`): each position's
    byte offset `off` in `t` goes to `wbx_xoff` (and, when `y_strides` names the value's
    aligned strides, its offset `yo` in the value to `wbx_yoff`), or to the C statement
    `emit` when given (then no table is kept: `off` and `yo` are its to use)."""
    br, brl = lay.br, max(lay.br, 1)
    arrays = lay.arrays()
    code = ["{"]
    if emit is None:
        code.append(f"""if (wbx_bsize > {_SMALL}) {{
  wbx_xoff = (npy_intp *)malloc(wbx_bsize * sizeof(npy_intp));
  if (!wbx_xoff) {{ PyErr_NoMemory(); goto {end}; }}""")
    if y_strides and emit is None:
        code.append(f"""  wbx_yoff = (npy_intp *)malloc(wbx_bsize * sizeof(npy_intp));
  if (!wbx_yoff) {{ PyErr_NoMemory(); goto {end}; }}""")
    if emit is None:
        code.append("}")
    # strides of each array component along the broadcast dims (0 where broadcast)
    for j, comp in arrays:
        rank, dims, strides = _component_shape(comp)
        code.append(f"npy_intp wbx_cs{j}[{brl}] = {{0}};")
        for dd in range(rank):
            code.append(f"wbx_cs{j}[{dd + br - rank}] = {dims[dd]} == 1 ? 0 : {strides[dd]};")
    last = br - 1
    bases = []
    for j, comp in arrays:
        data = (f"(const char *)wbx_mask{comp[2]} + {comp[3]} * wbx_count{comp[2]} * "
                "(npy_intp)sizeof(npy_intp)") if comp[0] == "coords" else \
            f"PyArray_BYTES({comp[2]})"
        bases.append(f"const char *p{j} = {data};\n"
                     f"for (int d = 0; d < {last}; d++) p{j} += wbx_i[d] * wbx_cs{j}[d];")
    reads, hoisted = [], []
    for j, comp in arrays:
        code.append(f"const npy_intp wbx_n{j} = PyArray_DIMS({t})[{comp[1]}], "
                    f"wbx_s{j} = PyArray_STRIDES({t})[{comp[1]}];")
        if not br:
            check = _check_index(_read(comp, f"p{j}"), comp[1], f"wbx_n{j}", end, label)
            reads.append(f"{{\n{check}\n  off += w * wbx_s{j};\n}}")
            continue
        # an index constant along the innermost broadcast dimension (a column of
        # arange in take_along_axis) is read once per row
        code.append(f"const int wbx_h{j} = wbx_cs{j}[{last}] == 0;")
        once = _check_index(_read(comp, f"p{j}"), comp[1], f"wbx_n{j}", end, label)
        hoisted.append(f"npy_intp wbx_c{j} = 0;\n"
                       f"if (wbx_h{j}) {{\n{once}\n  wbx_c{j} = w * wbx_s{j};\n}}")
        check = _check_index(_read(comp, f"p{j} + i * wbx_cs{j}[{last}]"), comp[1],
                             f"wbx_n{j}", end, label)
        reads.append(f"if (wbx_h{j}) off += wbx_c{j};\n"
                     f"else {{\n{check}\n  off += w * wbx_s{j};\n}}")
    y_base = y_step = ""
    if y_strides:  # the value's offset `yo` at this position
        y_base = ("npy_intp yb = 0;\n"
                  f"for (int d = 0; d < {last}; d++) yb += wbx_i[d] * {y_strides}[{lay.at} + d];")
        y_step = (f"const npy_intp yo = yb + i * {y_strides}[{lay.at + last}];" if br
                  else "const npy_intp yo = 0;")
        if emit is None:
            y_step += " wbx_yoff[k] = yo;"
    code.append(f"""if (wbx_bsize > 0) {{
  npy_intp wbx_i[{brl}] = {{0}}, k = 0;
  const npy_intp inner_n = {f"wbx_bshape[{last}]" if br else "1"};
  for (;;) {{
    {chr(10).join(bases)}
    {chr(10).join(hoisted)}
    {y_base}
    for (npy_intp i = 0; i < inner_n; i++, k++) {{
      npy_intp off = wbx_off0;
      {chr(10).join(reads)}
      {y_step}
      {emit if emit is not None else "wbx_xoff[k] = off;"}
    }}
    int d = {last} - 1;
    while (d >= 0) {{ if (++wbx_i[d] < wbx_bshape[d]) break; wbx_i[d] = 0; d--; }}
    if (d < 0) break;
  }}
}}
}}""")
    return "\n".join(code)


def _declarations(lay: _Layout) -> str:
    nbl, brl = max(lay.nb, 1), max(lay.br, 1)
    code = [f"npy_intp wbx_bdims[{nbl}], wbx_bstr[{nbl}], wbx_bshape[{brl}];",
            f"npy_intp wbx_odims[{max(lay.rank, 1)}];",
            "npy_intp wbx_bsize = 1, wbx_off0 = 0;",
            f"npy_intp wbx_xsmall[{_SMALL}], *wbx_xoff = wbx_xsmall;",
            f"npy_intp wbx_ysmall[{_SMALL}], *wbx_yoff = wbx_ysmall;",
            "int wbx_bad = 0, wbx_err = 1;",
            "PyArrayObject *wbx_ycopy = NULL;",
            "(void)wbx_yoff; (void)wbx_ysmall; (void)wbx_ycopy; (void)wbx_bad;"]
    for m in range(len(lay.masks)):
        code.append(f"npy_intp *wbx_mask{m} = NULL, wbx_count{m} = 0;")
    return "\n".join(code)


def _cleanup(lay: _Layout, end: str, fail: str) -> str:
    frees = [f"free(wbx_mask{m});" for m in range(len(lay.masks))]
    return (f"{end}:\n"
            "if (wbx_xoff != wbx_xsmall) free(wbx_xoff);\n"
            "if (wbx_yoff != wbx_ysmall) free(wbx_yoff);\n"
            "Py_XDECREF(wbx_ycopy);\n"
            + "\n".join(frees) + f"\nif (wbx_err) {fail}")


def _odims(lay: _Layout) -> str:
    """C filling `wbx_odims`: the shape of `t[idx]`."""
    at, br, nb = lay.at, lay.br, lay.nb
    return (f"for (int d = 0; d < {at}; d++) wbx_odims[d] = wbx_bdims[d];\n"
            f"for (int d = 0; d < {br}; d++) wbx_odims[{at} + d] = wbx_bshape[d];\n"
            f"for (int d = {at}; d < {nb}; d++) wbx_odims[{br} + d] = wbx_bdims[d];")


def _outer_loops(lay: _Layout, body: str, pointers: list[tuple[str, str, str]]) -> str:
    """`body` inside nested loops over the outer basic dimensions (before the broadcast
    ones); each (name, start, strides) pointer advances by its strides."""
    at = lay.at
    decl = "\n".join(f"const char *{n}_0 = {start};" for n, start, _ in pointers)
    opens, closes = [], []
    for d in range(at):
        opens.append(f"for (npy_intp o{d} = 0; o{d} < wbx_bdims[{d}]; o{d}++) {{")
        opens.append("\n".join(f"const char *{n}_{d + 1} = {n}_{d} + o{d} * {s}[{d}];"
                               for n, _, s in pointers))
        closes.append("}")
    aliases = "\n".join(f"const char *{n} = {n}_{at}; (void){n};" for n, _, _ in pointers)
    return "{\n" + decl + "\n" + "\n".join(opens) + "\n{\n" + aliases + "\n" + body + \
        "\n}\n" + "\n".join(closes) + "\n}"


class _AdvancedCBase(ViewCBase):
    first_index = 1

    def c_supports(self, node: Any) -> bool:
        return tensor_dtypes_have_c(node) and not _has_zero_d_mask(node, self.first_index)

    def why_not_supported(self, node: Any) -> str | None:
        """The linker report's reason when `c_supports` says no."""
        if _has_zero_d_mask(node, self.first_index):
            return (f"{node.op}: a 0-d boolean mask (x[True]) has no C; the node runs its "
                    "Python perform (NumPy's indexing)")
        return None

    def c_headers(self) -> list[str]:
        return [*super().c_headers(), "<string.h>", "<stdlib.h>"]

    def c_support_code(self) -> str:
        return super().c_support_code() + SUBTENSOR_SUPPORT + COPY_SUPPORT

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (6,)


@register_c_op(AdvancedSubtensor)
class AdvancedSubtensorC(_AdvancedCBase):
    """``x[idx]`` for an advanced index: a C-ordered copy (the previous call's buffer
    when it has the shape). With no basic dimension before the broadcast ones, each
    element or block is copied as soon as its index is read; otherwise the offsets
    are kept in a table read once per outer position."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, (z,) = inputs[0], outputs
        fail, label = sub["fail"], sub["label"]
        end = f"wbx_end_{name}"
        lay = _Layout(self.op, node, inputs, 1)
        dtype = node.outputs[0].type.dtype
        size = node.outputs[0].type.numpy_dtype.itemsize
        at, nb = lay.at, lay.nb
        ni = nb - at

        def copy(src: str) -> str:
            if ni == 0:
                return f"memcpy(dst, {src}, {size}); dst += {size};"
            return (f"if (contiguous) memcpy(dst, {src}, block);\n"
                    f"else wbc_copy(dst, dstr, {src}, wbx_bstr + {at}, wbx_bdims + {at}, "
                    f"{ni}, {size});\n"
                    "dst += block;")

        if at == 0:
            gather = _offsets_loop(lay, x, end, label, None, emit=copy("wbx_base + off"))
        else:
            body = f"for (npy_intp b = 0; b < wbx_bsize; b++) {{\n{copy('src + wbx_xoff[b]')}\n}}"
            gather = (_offsets_loop(lay, x, end, label, None) + "\nif (total > 0) "
                      + _outer_loops(lay, body, [("src", "wbx_base", "wbx_bstr")]))
        return f"""{{
{_declarations(lay)}
char *wbx_base = PyArray_BYTES({x});
{_basic_code(lay, x, end)}
{_masks_code(lay, x, end, label)}
{_broadcast_code(lay, x, end, label)}
{_odims(lay)}
{alloc_output(z, str(lay.rank), "wbx_odims", str(dtype), f"goto {end};")}
{{
  char *dst = PyArray_BYTES({z});
  npy_intp block = {size}, dstr[{max(ni, 1)}];
  int contiguous = 1;
  for (int d = {nb} - 1; d >= {at}; d--) {{
    dstr[d - {at}] = block;
    if (wbx_bdims[d] != 1 && wbx_bstr[d] != block) contiguous = 0;
    block *= wbx_bdims[d];
  }}
  (void)contiguous; (void)dstr;
  npy_intp total = block * wbx_bsize;
  for (int d = 0; d < {at}; d++) total *= wbx_bdims[d];
  (void)total;
  {gather}
}}
wbx_err = 0;
{_cleanup(lay, end, fail)}
}}"""


@register_c_op(AdvancedIncSubtensor)
class AdvancedIncSubtensorC(_AdvancedCBase):
    """``x`` with ``x[idx]`` set to, or incremented by, ``y`` (broadcast); in place when
    the Op says so (a read-only input is copied), else into a C-ordered copy."""

    first_index = 2

    def c_supports(self, node: Any) -> bool:
        return super().c_supports(node) and node.inputs[1].type.dtype == \
            node.inputs[0].type.dtype

    def why_not_supported(self, node: Any) -> str | None:
        if node.inputs[1].type.dtype != node.inputs[0].type.dtype:
            return (f"{node.op}: the value's dtype {node.inputs[1].type.dtype} differs from "
                    f"x's {node.inputs[0].type.dtype}; the node runs its Python perform")
        return super().why_not_supported(node)

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, y = inputs[:2]
        (z,) = outputs
        fail, label = sub["fail"], sub["label"]
        end = f"wbx_end_{name}"
        lay = _Layout(self.op, node, inputs, 2)
        dtype = node.inputs[0].type.dtype
        ctype = c_type_name(dtype)
        nd, y_nd, rank = lay.nd, node.inputs[1].type.ndim, lay.rank
        at, nb, br = lay.at, lay.nb, lay.br
        if self.op.inplace:
            prepare = f"""if (PyArray_ISWRITEABLE({x})) {{
  Py_XDECREF({z}); {z} = {x}; Py_INCREF({z});
}} else {{
  Py_XDECREF({z});
  {z} = (PyArrayObject *)PyArray_NewCopy({x}, NPY_CORDER);
  if (!{z}) goto {end};
}}"""
        else:
            prepare = copy_to_output(z, x, nd, f"goto {end};")
        mismatch = c_string_literal("shape mismatch: value array of shape %s could not be "
                                    "broadcast to indexing result of shape %s (%s)")
        ni = nb - at
        loops = ["char *pt0 = (char *)tgt + wbx_xoff[b];",
                 "const char *py0 = yv + wbx_yoff[b];"]
        for j in range(ni - 1):
            d = at + j
            loops.append(f"for (npy_intp q{j} = 0; q{j} < wbx_bdims[{d}]; q{j}++) {{\n"
                         f"char *pt{j + 1} = pt{j} + q{j} * wbx_bstr[{d}];\n"
                         f"const char *py{j + 1} = py{j} + q{j} * wbx_ystr[{br + d}];")
        if ni:  # the innermost basic dimension: a typed loop when contiguous
            last = ni - 1
            loops.append(f"{{ char *po = pt{last}; const char *py = py{last};\n"
                         "const npy_intp n_in = wbx_nin, so = wbx_so, sy = wbx_sy;\n"
                         f"{inner_update_loop(str(dtype), self.op.set_instead_of_inc)}\n}}")
        else:
            loops.append(element_update(str(dtype), self.op.set_instead_of_inc,
                                        f"*({ctype} *)pt0", f"*(const {ctype} *)py0"))
        if at == 0:  # write as each index is read (and checked)
            loops[:2] = ["char *pt0 = wbx_base + off;", "const char *py0 = wbx_ydata + yo;"]
            write = "{\n" + "\n".join(loops) + "\n" + "}" * max(ni - 1, 0) + "\n}"
            scatter = _offsets_loop(lay, z, end, label, "wbx_ystr", emit=write)
            if self.op.inplace:  # x itself: every index checked before the first write
                scatter = (_offsets_loop(lay, z, end, label, None, emit="(void)off;") + "\n"
                           + scatter)
        else:  # offsets kept in tables, read once per outer position
            body = ("for (npy_intp b = 0; b < wbx_bsize; b++) {\n" + "\n".join(loops) + "\n"
                    + "}" * max(ni - 1, 0) + "\n}")
            scatter = (_offsets_loop(lay, z, end, label, "wbx_ystr") + "\nif (total > 0) "
                       + _outer_loops(lay, body, [
                           ("tgt", "wbx_base", "wbx_bstr"),
                           ("yv", "wbx_ydata", "wbx_ystr")]))
        return f"""{{
{_declarations(lay)}
{prepare}
char *wbx_base = PyArray_BYTES({z});
PyArrayObject *wbx_ysrc = {y};
npy_intp wbx_ystr[{max(rank, 1)}];
{_basic_code(lay, z, end)}
{_masks_code(lay, z, end, label)}
{_broadcast_code(lay, z, end, label)}
{_odims(lay)}
{{
  int ok = {y_nd} <= {rank};
  for (int d = 0; ok && d < {rank}; d++) {{
    const int yd = d - ({rank} - {y_nd});
    if (yd < 0) {{ wbx_ystr[d] = 0; continue; }}
    const npy_intp yn = PyArray_DIMS({y})[yd];
    if (yn == wbx_odims[d]) wbx_ystr[d] = yn == 1 ? 0 : PyArray_STRIDES({y})[yd];
    else if (yn == 1) wbx_ystr[d] = 0;
    else ok = 0;
  }}
  if (!ok) {{
    char a[512], b[512];
    PyErr_Format(PyExc_ValueError, {mismatch},
                 wbv_shape_text(a, sizeof(a), PyArray_DIMS({y}), {y_nd}, 1),
                 wbv_shape_text(b, sizeof(b), wbx_odims, {rank}, 1), {label});
    goto {end};
  }}
}}
{{ /* a value sharing memory with the output is read from a copy */
  char *ylo, *yhi, *zlo, *zhi;
  wbs_extent({y}, &ylo, &yhi); wbs_extent({z}, &zlo, &zhi);
  if (ylo < zhi && zlo < yhi) {{
    wbx_ycopy = (PyArrayObject *)PyArray_NewCopy({y}, NPY_CORDER);
    if (!wbx_ycopy) goto {end};
    wbx_ysrc = wbx_ycopy;
    for (int d = 0; d < {rank}; d++) {{
      const int yd = d - ({rank} - {y_nd});
      if (yd >= 0 && wbx_ystr[d] != 0) wbx_ystr[d] = PyArray_STRIDES(wbx_ycopy)[yd];
    }}
  }}
}}
{{
  npy_intp total = wbx_bsize;
  for (int d = 0; d < {nb}; d++) total *= wbx_bdims[d];
  (void)total;
  /* loop constants in locals (never reloaded after a write through a pointer) */
  const char *const wbx_ydata = PyArray_BYTES(wbx_ysrc);
  const npy_intp wbx_nin = wbx_bdims[{max(nb - 1, 0)}], wbx_so = wbx_bstr[{max(nb - 1, 0)}];
  const npy_intp wbx_sy = wbx_ystr[{max(rank - 1, 0)}];
  (void)wbx_ydata; (void)wbx_nin; (void)wbx_so; (void)wbx_sy;
  {scatter}
}}
wbx_err = 0;
{_cleanup(lay, end, fail)}
}}"""


def _offsets_shape_only(lay: _Layout) -> str:
    """C computing `wbx_bshape` (and `wbx_bad` when the index arrays do not broadcast),
    reading no index."""
    br = lay.br
    code = [f"for (int d = 0; d < {max(br, 1)}; d++) wbx_bshape[d] = 1;"]
    for _, comp in lay.arrays():
        rank, dims, _ = _component_shape(comp)
        for dd in range(rank):
            d = dd + br - rank
            code.append(f"{{ const npy_intp n = {dims[dd]};\n"
                        f"  if (n != 1) {{ if (wbx_bshape[{d}] != 1 && wbx_bshape[{d}] != n) "
                        f"wbx_bad = 1; wbx_bshape[{d}] = n; }} }}")
    code.append(f"for (int d = {br}; d < {max(br, 1)}; d++) wbx_bshape[d] = 1;")
    return "\n".join(code)
