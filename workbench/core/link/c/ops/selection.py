"""C for TopK and Unique, the selection Ops whose result is chosen from the data.

TopK keeps, for each line along its axis, a heap of the `k` best entries seen so far
(the worst at the root: an entry better than it replaces it), then sorts the heap:
O(n log k) per line, for k up to `HEAP_K`; a larger k copies the line and selects by
quickselect (median-of-three, O(n); a merge sort of the whole line if it needs more
than 64 rounds), then merge sorts the first k. "Better" is the Op's order: larger (or
smaller) first, NaN the largest value (first when largest, last when smallest, as
NumPy sorts it), ties by the lower position, so the result is the `perform`'s exactly.

Unique (flattened, ``axis=None``) sorts the positions with NumPy's own stable sort
(``PyArray_ArgSort``, NPY_STABLESORT, NaN last) and walks them once: a new value
starts a group (NaNs form one group, NumPy's ``equal_nan=True``), whose first
position is the index, whose size the count, and each entry's group its inverse.
Unique along an axis orders the slices lexicographically (each element as NumPy
compares it: NaN last, -0.0 equal to 0.0) with a stable merge sort of their
positions, and starts a group where any element differs (``!=``: slices with a NaN
are never merged, as in NumPy). The output lengths are known only then: the arrays
are allocated after the walk, as Nonzero's are.

Complex inputs (and float16, which C does not compute) run the Ops' `perform`.
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import alloc_output
from workbench.core.link.c.ops.shape import ViewCBase, tensor_dtypes_have_c
from workbench.core.tensor.counting import Unique
from workbench.core.tensor.sort import TopK

__all__ = ["HEAP_K", "TopKC", "UniqueC"]

#: TopK keeps a heap for k up to this; a larger k selects by quickselect (O(n)).
HEAP_K = 16


def _is_float(node: Any) -> bool:
    return node.inputs[0].type.dtype.kind == "f"


class _SelectionC(ViewCBase):
    """Real dtypes with C element types (complex orders run `perform`)."""

    def c_supports(self, node: Any) -> bool:
        return tensor_dtypes_have_c(node) and node.inputs[0].type.dtype.kind != "c"

    def why_not_supported(self, node: Any) -> str | None:
        """The linker report's reason when `c_supports` says no."""
        if node.inputs[0].type.dtype.kind == "c":
            return (f"{node.op}: complex input ({node.inputs[0].type.dtype}): no C order "
                    "for complex values; the node runs its Python perform (NumPy's)")
        return None

    def c_headers(self) -> list[str]:
        return [*super().c_headers(), "<stdlib.h>", "<string.h>"]


@register_c_op(TopK)
class TopKC(_SelectionC):
    """The k best entries of each line and their int64 positions (a k-heap or quickselect)."""

    def c_support_code_apply(self, node: Any, name: str) -> str:
        t = _c_type(node)
        if _is_float(node):
            nan_first = "1" if self.op.largest else "0"
            key = (f"  const int na = a != a, nb = b != b;\n"
                   f"  if (na || nb) return na && nb ? ia < ib : (na ? {nan_first} : "
                   f"!{nan_first});\n")
        else:
            key = ""
        better = ">" if self.op.largest else "<"
        return f"""
/* Whether (a at ia) comes before (b at ib) in the Op's order. */
static inline int wbk_before_{name}({t} a, npy_intp ia, {t} b, npy_intp ib) {{
{key}  return a {better} b || (a == b && ia < ib);
}}
/* Restore the heap (the worst entry at the root) below position i of size n. */
static void wbk_sift_{name}({t} *v, npy_intp *p, npy_intp i, npy_intp n) {{
  for (;;) {{
    npy_intp worst = i;
    const npy_intp l = 2 * i + 1, r = l + 1;
    if (l < n && wbk_before_{name}(v[worst], p[worst], v[l], p[l])) worst = l;
    if (r < n && wbk_before_{name}(v[worst], p[worst], v[r], p[r])) worst = r;
    if (worst == i) return;
    const {t} tv = v[i]; v[i] = v[worst]; v[worst] = tv;
    const npy_intp tp = p[i]; p[i] = p[worst]; p[worst] = tp;
    i = worst;
  }}
}}
/* Heap sort of a heap of `size` entries (the worst at the root): best first. */
static void wbk_pop_all_{name}({t} *v, npy_intp *p, npy_intp size) {{
  for (npy_intp s = size; s > 1; s--) {{  /* the worst to the end */
    const {t} tv = v[0]; v[0] = v[s - 1]; v[s - 1] = tv;
    const npy_intp tp = p[0]; p[0] = p[s - 1]; p[s - 1] = tp;
    wbk_sift_{name}(v, p, 0, s - 1);
  }}
}}
/* The k best entries of the n-long line at `line` (element stride `step`), best first. */
static void wbk_select_{name}(const {t} *line, npy_intp step, npy_intp n, npy_intp k,
                              {t} *v, npy_intp *p) {{
  npy_intp size = 0;
  for (npy_intp t = 0; t < n; t++) {{
    const {t} x = line[t * step];
    if (size < k) {{  /* push, then move up while the parent is better */
      npy_intp i = size++;
      v[i] = x; p[i] = t;
      while (i > 0) {{
        const npy_intp up = (i - 1) / 2;
        if (!wbk_before_{name}(v[up], p[up], v[i], p[i])) break;
        const {t} tv = v[i]; v[i] = v[up]; v[up] = tv;
        const npy_intp tp = p[i]; p[i] = p[up]; p[up] = tp;
        i = up;
      }}
    }} else if (k > 0 && wbk_before_{name}(x, t, v[0], p[0])) {{
      v[0] = x; p[0] = t;
      wbk_sift_{name}(v, p, 0, k);
    }}
  }}
  wbk_pop_all_{name}(v, p, size);
}}
#define WBK_SWAP_{name}(i, j) do {{ const {t} tv_ = v[i]; v[i] = v[j]; v[j] = tv_; \
  const npy_intp tp_ = p[i]; p[i] = p[j]; p[j] = tp_; }} while (0)
/* v[lo..hi] split around a median-of-three pivot: its final position. */
static npy_intp wbk_partition_{name}({t} *v, npy_intp *p, npy_intp lo, npy_intp hi) {{
  const npy_intp mid = lo + (hi - lo) / 2;
  if (wbk_before_{name}(v[mid], p[mid], v[lo], p[lo])) WBK_SWAP_{name}(mid, lo);
  if (wbk_before_{name}(v[hi], p[hi], v[lo], p[lo])) WBK_SWAP_{name}(hi, lo);
  if (wbk_before_{name}(v[mid], p[mid], v[hi], p[hi])) WBK_SWAP_{name}(mid, hi);
  const {t} pv = v[hi];
  const npy_intp pp = p[hi];
  npy_intp store = lo;
  for (npy_intp i = lo; i < hi; i++) {{  /* branch-free: swap always, advance if before */
    const int move = wbk_before_{name}(v[i], p[i], pv, pp);
    WBK_SWAP_{name}(i, store);
    store += move;
  }}
  WBK_SWAP_{name}(store, hi);
  return store;
}}
/* Bottom-up merge sort of the first `count` entries of v/p, best first (tv/tp: room for
   as many). */
static void wbk_merge_sort_{name}({t} *v, npy_intp *p, {t} *tv, npy_intp *tp,
                                  npy_intp count) {{
  {t} *sv = v, *dv = tv;
  npy_intp *sp = p, *dp = tp;
  for (npy_intp width = 1; width < count; width *= 2) {{
    for (npy_intp lo = 0; lo < count; lo += 2 * width) {{
      const npy_intp mid = lo + width < count ? lo + width : count;
      const npy_intp hi = lo + 2 * width < count ? lo + 2 * width : count;
      npy_intp a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {{
        const int right = wbk_before_{name}(sv[b], sp[b], sv[a], sp[a]);
        const npy_intp from = right ? b : a;
        dv[o] = sv[from]; dp[o] = sp[from]; o++;
        b += right; a += !right;
      }}
      for (; a < mid; a++, o++) {{ dv[o] = sv[a]; dp[o] = sp[a]; }}
      for (; b < hi; b++, o++) {{ dv[o] = sv[b]; dp[o] = sp[b]; }}
    }}
    {t} *xv = sv; sv = dv; dv = xv;
    npy_intp *xp = sp; sp = dp; dp = xp;
  }}
  if (sv != v) {{ memcpy(v, sv, sizeof({t}) * (size_t)count);
                  memcpy(p, sp, sizeof(npy_intp) * (size_t)count); }}
}}
/* The k best of the line, best first, by quickselect (v, p and tv, tp hold n entries
   each): the k-th best put in place (everything before it better), then the first k
   merge sorted; a pathological line (too many rounds) is merge sorted whole instead. */
static void wbk_quickselect_{name}(const {t} *line, npy_intp step, npy_intp n, npy_intp k,
                                   {t} *v, npy_intp *p, {t} *tv, npy_intp *tp) {{
  for (npy_intp t = 0; t < n; t++) {{ v[t] = line[t * step]; p[t] = t; }}
  npy_intp lo = 0, hi = n - 1, rounds = 0;
  while (lo < hi) {{
    if (++rounds > 64) {{  /* introselect's guard: O(n log n) whatever the data */
      wbk_merge_sort_{name}(v, p, tv, tp, n);
      return;
    }}
    const npy_intp at = wbk_partition_{name}(v, p, lo, hi);
    if (at == k - 1) break;
    if (at > k - 1) hi = at - 1; else lo = at + 1;
  }}
  wbk_merge_sort_{name}(v, p, tv, tp, k);
}}
"""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (zv, zi) = inputs, outputs
        fail, t = sub["fail"], _c_type(node)
        nd, axis, k = node.inputs[0].type.ndim, self.op.axis, self.op.k
        too_big = c_string_literal(f"{self.op}: k={k} is larger than axis {axis} of x, of "
                                   "shape %s")
        return f"""
{{
  const npy_intp n = PyArray_DIMS({x})[{axis}], k = {k};
  if (k > n) {{
    char text[512];
    PyErr_Format(PyExc_ValueError, {too_big},
                 wbv_shape_text(text, sizeof(text), PyArray_DIMS({x}), {nd}, 0));
    {fail}
  }}
  npy_intp odims[{nd}], outer = 1, inner = 1;
  for (int d = 0; d < {nd}; d++) {{
    odims[d] = d == {axis} ? k : PyArray_DIMS({x})[d];
    if (d < {axis}) outer *= odims[d];
    if (d > {axis}) inner *= odims[d];
  }}
  {alloc_output(zv, str(nd), "odims", str(node.outputs[0].type.dtype), fail)}
  {alloc_output(zi, str(nd), "odims", "int64", fail)}
  PyArrayObject *xc = (PyArrayObject *)PyArray_GETCONTIGUOUS({x});
  if (!xc) {fail}
  /* a heap of k for small k; quickselect over a copy of the line otherwise */
  const int by_heap = k <= {HEAP_K};
  const npy_intp room = by_heap ? k : 2 * n;  /* quickselect: the line and merge room */
  {t} *v = ({t} *)malloc(sizeof({t}) * (size_t)(room > 0 ? room : 1));
  npy_intp *p = (npy_intp *)malloc(sizeof(npy_intp) * (size_t)(room > 0 ? room : 1));
  if (!v || !p) {{ free(v); free(p); Py_DECREF(xc); PyErr_NoMemory(); {fail} }}
  const {t} *xs = (const {t} *)PyArray_DATA(xc);
  {t} *ov = ({t} *)PyArray_DATA({zv});
  npy_int64 *oi = (npy_int64 *)PyArray_DATA({zi});
  if (k > 0)
    for (npy_intp o = 0; o < outer; o++)
      for (npy_intp j = 0; j < inner; j++) {{
        if (by_heap) wbk_select_{name}(xs + o * n * inner + j, inner, n, k, v, p);
        else wbk_quickselect_{name}(xs + o * n * inner + j, inner, n, k, v, p, v + n, p + n);
        for (npy_intp s = 0; s < k; s++) {{
          ov[(o * k + s) * inner + j] = v[s];
          oi[(o * k + s) * inner + j] = (npy_int64)p[s];
        }}
      }}
  free(v); free(p); Py_DECREF(xc);
}}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


def _c_type(node: Any) -> str:
    from workbench.core.link.c.types import c_type_name

    return c_type_name(node.inputs[0].type.dtype)


@register_c_op(Unique)
class UniqueC(_SelectionC):
    """Sorted distinct values (or slices) with index, inverse and counts as asked."""

    def c_support_code_apply(self, node: Any, name: str) -> str:
        t = _c_type(node)
        if _is_float(node):  # NumPy's order: NaN last, NaN against NaN a tie
            cmp = ("a < b ? -1 : a > b ? 1 : a == b ? 0 : "
                   "(a != a) ? ((b != b) ? 0 : 1) : -1")
        else:
            cmp = "a < b ? -1 : a > b ? 1 : 0"
        return f"""
static inline int wbu_cmp_{name}({t} a, {t} b) {{ return {cmp}; }}
/* Lexicographic order of rows r and s of the (P, n, Q) array x: fields (p, q) in order. */
static int wbu_rows_{name}(const {t} *x, npy_intp n, npy_intp P, npy_intp Q, npy_intp r,
                           npy_intp s) {{
  for (npy_intp i = 0; i < P; i++)
    for (npy_intp j = 0; j < Q; j++) {{
      const int c = wbu_cmp_{name}(x[(i * n + r) * Q + j], x[(i * n + s) * Q + j]);
      if (c) return c;
    }}
  return 0;
}}
/* Whether rows r and s differ in some element (!=: a NaN always differs). */
static int wbu_differ_{name}(const {t} *x, npy_intp n, npy_intp P, npy_intp Q, npy_intp r,
                             npy_intp s) {{
  for (npy_intp i = 0; i < P; i++)
    for (npy_intp j = 0; j < Q; j++)
      if (x[(i * n + r) * Q + j] != x[(i * n + s) * Q + j]) return 1;
  return 0;
}}
/* Stable bottom-up merge sort of the positions 0..n-1 of the rows into perm. */
static int wbu_sort_rows_{name}(const {t} *x, npy_intp n, npy_intp P, npy_intp Q,
                                npy_intp *perm) {{
  npy_intp *tmp = (npy_intp *)malloc(sizeof(npy_intp) * (size_t)(n > 0 ? n : 1));
  if (!tmp) return -1;
  for (npy_intp i = 0; i < n; i++) perm[i] = i;
  npy_intp *src = perm, *dst = tmp;
  for (npy_intp width = 1; width < n; width *= 2) {{
    for (npy_intp lo = 0; lo < n; lo += 2 * width) {{
      const npy_intp mid = lo + width < n ? lo + width : n;
      const npy_intp hi = lo + 2 * width < n ? lo + 2 * width : n;
      npy_intp a = lo, b = mid, o = lo;
      while (a < mid && b < hi)
        dst[o++] = wbu_rows_{name}(x, n, P, Q, src[b], src[a]) < 0 ? src[b++] : src[a++];
      while (a < mid) dst[o++] = src[a++];
      while (b < hi) dst[o++] = src[b++];
    }}
    npy_intp *swap = src; src = dst; dst = swap;
  }}
  if (src != perm) memcpy(perm, src, sizeof(npy_intp) * (size_t)n);
  free(tmp);
  return 0;
}}
"""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,) = inputs
        fail, t, op = sub["fail"], _c_type(node), self.op
        nd = node.inputs[0].type.ndim
        rest = iter(outputs[1:])
        zv = outputs[0]
        zidx = next(rest) if op.return_index else None
        zinv = next(rest) if op.return_inverse else None
        zcnt = next(rest) if op.return_counts else None
        dtype = str(node.outputs[0].type.dtype)
        same_nan = ("#define WBU_NEW(r, s) (xs[r] != xs[s] && !(xs[r] != xs[r] && "
                    "xs[s] != xs[s]))" if op.equal_nan else
                    "#define WBU_NEW(r, s) (xs[r] != xs[s])  /* every NaN its own */")
        if op.axis is None:
            setup = f"""
  const npy_intp P = 1, Q = 1, n = PyArray_SIZE({x});
  PyArrayObject *xc = (PyArrayObject *)PyArray_Ravel({x}, NPY_CORDER);
  if (!xc) {fail}
  PyArrayObject *order = (PyArrayObject *)PyArray_ArgSort(xc, 0, NPY_STABLESORT);
  if (!order) {{ Py_DECREF(xc); {fail} }}
  const npy_intp *perm = (const npy_intp *)PyArray_DATA(order);
  const {t} *xs = (const {t} *)PyArray_DATA(xc);
  {same_nan}
  npy_intp vdims[1];
  #define WBU_VALUE_DIMS(count) vdims[0] = (count)
  const int vnd = 1;"""
            inverse_dims = f"PyArray_DIMS({x})"
            inverse_nd = str(nd)
        else:
            axis = op.axis
            setup = f"""
  npy_intp P = 1, Q = 1;
  const npy_intp n = PyArray_DIMS({x})[{axis}];
  for (int d = 0; d < {nd}; d++) {{
    if (d < {axis}) P *= PyArray_DIMS({x})[d];
    if (d > {axis}) Q *= PyArray_DIMS({x})[d];
  }}
  PyArrayObject *xc = (PyArrayObject *)PyArray_GETCONTIGUOUS({x});
  if (!xc) {fail}
  PyArrayObject *order = (PyArrayObject *)PyArray_EMPTY(1, (npy_intp *)&n, NPY_INTP, 0);
  if (!order) {{ Py_DECREF(xc); {fail} }}
  npy_intp *perm = (npy_intp *)PyArray_DATA(order);
  const {t} *xs = (const {t} *)PyArray_DATA(xc);
  if (wbu_sort_rows_{name}(xs, n, P, Q, perm) < 0) {{
    Py_DECREF(xc); Py_DECREF(order); PyErr_NoMemory(); {fail}
  }}
  #define WBU_NEW(r, s) wbu_differ_{name}(xs, n, P, Q, r, s)
  npy_intp vdims[{nd}];
  #define WBU_VALUE_DIMS(count) for (int d = 0; d < {nd}; d++) \\
    vdims[d] = d == {axis} ? (count) : PyArray_DIMS({x})[d]
  const int vnd = {nd};"""
            inverse_dims = "(&n)"
            inverse_nd = "1"
        fill_values = ("for (npy_intp i = 0; i < P; i++) for (npy_intp j = 0; j < Q; j++) "
                       "vs[(i * count + g) * Q + j] = xs[(i * n + r) * Q + j];")
        cleanup = f"{{ Py_DECREF(xc); Py_DECREF(order); {fail} }}"
        outs = [alloc_output(zv, "vnd", "vdims", dtype, cleanup)]
        writes = [fill_values]
        if zidx:
            outs.append(alloc_output(zidx, "1", "(&count)", "int64", cleanup))
            writes.append(f"((npy_int64 *)PyArray_DATA({zidx}))[g] = (npy_int64)r;")
        if zcnt:
            outs.append(alloc_output(zcnt, "1", "(&count)", "int64", cleanup))
        if zinv:
            outs.append(alloc_output(zinv, inverse_nd, inverse_dims, "int64", cleanup))
        per_entry = []
        if zcnt:
            per_entry.append(f"((npy_int64 *)PyArray_DATA({zcnt}))[g]++;")
        if zinv:
            per_entry.append(f"((npy_int64 *)PyArray_DATA({zinv}))[r0] = (npy_int64)g;")
        zero_counts = (f"if (count > 0) memset(PyArray_DATA({zcnt}), 0, sizeof(npy_int64) * "
                       f"(size_t)count);" if zcnt else "")
        body = "\n".join(outs)
        return f"""
{{
{setup}
  npy_intp count = 0;
  for (npy_intp i = 0; i < n; i++)
    if (i == 0 || WBU_NEW(perm[i], perm[i - 1])) count++;
  WBU_VALUE_DIMS(count);
  {body}
  {zero_counts}
  {t} *vs = ({t} *)PyArray_DATA({zv});
  npy_intp g = -1;
  for (npy_intp i = 0; i < n; i++) {{
    const npy_intp r0 = perm[i];
    if (i == 0 || WBU_NEW(r0, perm[i - 1])) {{
      const npy_intp r = r0;
      g++;
      {" ".join(writes)}
    }}
    {" ".join(per_entry)}
  }}
  (void)vs; (void)P; (void)Q;
  Py_DECREF(xc); Py_DECREF(order);
  #undef WBU_NEW
  #undef WBU_VALUE_DIMS
}}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)
