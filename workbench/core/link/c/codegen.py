"""Generate the C source of one Apply node's extension module.

The module exports, as the capsule `fn` named NODE_CAPSULE, a function
`int fn(PyObject **ins, PyObject **outs, const char *const *labels)` (the calling
convention of runtime.c).
Its body follows seed 002/003: declare and initialise every variable (c_declare,
c_init), extract the inputs (c_extract) and previous outputs (c_extract_out), run
the Op's c_code, pack the outputs back (c_sync), and release everything
(c_code_cleanup, c_cleanup) on every path. `sub["fail"]` jumps to that cleanup.

The source depends only on the node's signature (Op and its props, input and
output Types), never on object identities: nodes of the same kind share one
module, and the module cache keys on the source text. Nor does it hold the node's
printed name (which may come from a graph file): the messages of the C code name
the node through `labels`, strings the runtime passes at each call (node_labels),
as `%s` arguments, never as format text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.link.c.compiler import GENERATED_CODE_FLAGS, PRELUDE_INCLUDE
from workbench.core.link.c.cstring import label_bytes
from workbench.core.link.c.interface import c_op_of, c_optional, c_type_of

__all__ = ["MODULE_HEADERS", "NODE_CAPSULE", "NodeParts", "NodeSource", "NoCCode",
           "module_init", "node_labels", "node_parts", "node_source"]

#: Flags every generated module gets (see compiler.GENERATED_CODE_FLAGS).
BASE_FLAGS: tuple[str, ...] = GENERATED_CODE_FLAGS

#: The name of the capsules holding node functions; it names the calling convention,
#: so that runtime.c refuses a function of another convention (an old module).
NODE_CAPSULE = "workbench.node/2"
#: Labels longer than this are cut (an Op's printed name can be a long formula).
LABEL_LIMIT = 60


class NoCCode(Exception):
    """This node has no C implementation (it runs through `perform`)."""


@dataclass
class NodeSource:
    """The generated module of one node, and what compiling it needs."""

    source: str
    module_name: str
    version: tuple[Any, ...]
    extra_flags: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    lib_dirs: list[str] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)
    #: the c_code fragment alone, for `--show-code` style displays
    body: str = ""

    def build_args(self) -> dict[str, Any]:
        """The keyword arguments of ModuleCache.get_or_build/ensure_built for it."""
        return dict(version=self.version, extra_flags=self.extra_flags,
                    libraries=self.libraries, lib_dirs=self.lib_dirs,
                    include_dirs=self.include_dirs)


def _header_line(h: str) -> str:
    h = h.strip()
    if not (h.startswith("<") or h.startswith('"')):
        h = f"<{h}>"
    return f"#include {h}"


def _version_of(obj: Any) -> tuple[Any, ...] | None:
    v = c_optional(obj, "c_code_cache_version", default=())
    return tuple(v) if v else None


@dataclass
class NodeParts:
    """The pieces of one node's C, before they are assembled into a module: a module of
    its own (`node_source`) or one translation unit holding many kinds (bundle.py)."""

    headers: list[str]
    support: list[str]
    apply_support: str
    function: str
    init_code: list[str]
    version: tuple[Any, ...]
    extra_flags: list[str]
    libraries: list[str]
    lib_dirs: list[str]
    include_dirs: list[str]
    body: str


def node_parts(node: Apply, name: str = "node", fn_name: str = "wb_node_run",
               typed_labels: bool = True) -> NodeParts:
    """The C pieces of `node`, its Op's code generated with node name `name` (what
    `c_support_code_apply` uses to make its symbols unique) in a function `fn_name`.
    NoCCode when its Op or one of its Types has no C.

    With `typed_labels` the inputs' expected Types (their text and static lengths)
    are read from the labels the function is called with (`node_labels`), so nodes
    differing only in static lengths share one kind unless their Op's own code uses
    the lengths; a caller passing labels of its own (Blockwise's loop) asks for
    constants instead."""
    import workbench.core.link.c.ops  # noqa: F401  (registers the library's C)
    from workbench.core.link.c.types import C_TYPES

    names = {str(getattr(v.type, "dtype", "")) for v in (*node.inputs, *node.outputs)}
    without_c = sorted(d for d in names if d in C_TYPES and C_TYPES[d] is None)
    if without_c:
        raise NoCCode(f"{node.op}: no C arithmetic for {', '.join(without_c)}; it runs its "
                      "Python implementation (NumPy's arithmetic in that dtype, rounded "
                      "after every operation)")
    op_c = c_op_of(node.op)
    if op_c is None:  # an Op may say why it runs in Python (`why_no_c_code`)
        raise NoCCode(getattr(node.op, "why_no_c_code", None) or f"{node.op} has no C code")
    supports = getattr(op_c, "c_supports", None)
    if supports is not None and not supports(node):  # the adapter may say why not
        why = getattr(op_c, "why_not_supported", None)
        raise NoCCode((why(node) if why is not None else None)
                      or f"{node.op} has no C code for these types")
    variables = [*node.inputs, *node.outputs]
    type_cs = []
    for var in variables:
        tc = c_type_of(var.type)
        if tc is None:
            raise NoCCode(f"type {var.type} has no C code")
        type_cs.append(tc)
    n_in = len(node.inputs)
    in_names = [f"i{k}" for k in range(n_in)]
    out_names = [f"o{k}" for k in range(len(node.outputs))]
    names = in_names + out_names
    fail = "{ wb_failure = 1; goto wb_cleanup; }"

    def sub_for(k: int) -> dict[str, str]:
        sub = {"fail": fail, "label": f"wb_labels[{k + 1}]", "id": str(k)}
        if typed_labels and k < n_in:
            sub["type_label"] = f"wb_labels[{1 + len(names) + k}]"
            sub["lengths_label"] = f"wb_labels[{1 + len(names) + n_in + k}]"
        return sub

    try:
        decls, inits, extracts, syncs, cleanups = [], [], [], [], []
        for k, (tc, var_name) in enumerate(zip(type_cs, names)):
            sub = sub_for(k)
            decls.append(tc.c_declare(var_name, sub))
            inits.append(tc.c_init(var_name, sub))
            if k < n_in:
                extracts.append(tc.c_extract(var_name, sub))
            else:
                out_extract = c_optional(tc, "c_extract_out", var_name, sub, default=None)
                if out_extract is None:  # a Type without it: extract only real values
                    out_extract = (f"if (py_{var_name} != Py_None) {{\n"
                                   f"{tc.c_extract(var_name, sub)}}}\n")
                extracts.append(out_extract)
                syncs.append(tc.c_sync(var_name, sub))
            cleanups.append(c_optional(tc, "c_cleanup", var_name, sub, default=""))
        op_sub: dict[str, Any] = {"fail": fail, "label": "wb_labels[0]"}
        params = c_optional(op_c, "c_run_time_params", node, default=None)
        if typed_labels and params is not None:  # (see node_labels)
            first = 1 + len(names) + 2 * n_in
            op_sub["params"] = [f"wb_labels[{first + i}]" for i in range(len(params))]
        body = op_c.c_code(node, name, in_names, out_names, op_sub)
        code_cleanup = c_optional(op_c, "c_code_cleanup", node, name, in_names, out_names,
                                  op_sub, default="")
    except MethodNotDefined as exc:
        raise NoCCode(f"{node.op}: {exc}") from exc

    headers: list[str] = []
    support: list[str] = []
    libraries: list[str] = []
    flags: list[str] = list(BASE_FLAGS)
    lib_dirs: list[str] = []
    include_dirs: list[str] = []
    versions: list[Any] = []
    for obj in [*type_cs, op_c]:
        for h in c_optional(obj, "c_headers", default=[]) or []:
            line = _header_line(h)
            if line not in headers:
                headers.append(line)
        code = c_optional(obj, "c_support_code", default="") or ""
        if code and code not in support:
            support.append(code)
        libraries += c_optional(obj, "c_libraries", default=[]) or []
        flags += c_optional(obj, "c_compile_args", default=[]) or []
        lib_dirs += c_optional(obj, "c_lib_dirs", default=[]) or []
        include_dirs += c_optional(obj, "c_header_dirs", default=[]) or []
        versions.append(_version_of(obj))
    init_code = list(c_optional(op_c, "c_init_code", default=[]) or [])
    apply_support = c_optional(op_c, "c_support_code_apply", node, name, default="") or ""
    unversioned = any(v is None for v in versions)

    lines = [f"static int {fn_name}(PyObject **wb_ins, PyObject **wb_outs, "
             "const char *const *wb_labels) {",
             "  int wb_failure = 0;"]
    for k, var_name in enumerate(in_names):
        lines.append(f"  PyObject *py_{var_name} = wb_ins[{k}];")
    for k, var_name in enumerate(out_names):
        lines.append(f"  PyObject *py_{var_name} = wb_outs[{k}];")
        lines.append(f"  if (!py_{var_name}) {{ Py_INCREF(Py_None); py_{var_name} = Py_None; }}")
    lines += decls + inits + extracts
    lines.append("{\n" + body + "\n}")
    lines += syncs
    lines.append("wb_cleanup:")
    lines.append("{\n" + code_cleanup + "\n}")
    lines += reversed(cleanups)
    for k, var_name in enumerate(out_names):
        lines.append(f"  wb_outs[{k}] = py_{var_name};")
    lines.append("  return wb_failure ? -1 : 0;\n}")
    version: tuple[Any, ...] = () if unversioned else ("node", *versions)
    return NodeParts(headers=headers, support=support, apply_support=apply_support,
                     function="\n".join(lines), init_code=init_code, version=version,
                     extra_flags=list(dict.fromkeys(flags)),
                     libraries=list(dict.fromkeys(libraries)), lib_dirs=lib_dirs,
                     include_dirs=include_dirs, body=body)


#: Headers every generated module starts with (the prelude comes precompiled: see
#: compiler.py).
MODULE_HEADERS = (PRELUDE_INCLUDE, "#include <numpy/arrayobject.h>", "#include <math.h>")


def module_init(module_name: str, init_code: list[str], capsules: Sequence[tuple[str, ...]]
                ) -> str:
    """The PyInit function of a generated module: `init_code` statements, then one
    capsule per (attribute, C function) of `capsules`, named NODE_CAPSULE (or per
    (attribute, C pointer, capsule name))."""
    lines = [
        f"static struct PyModuleDef wb_module = {{PyModuleDef_HEAD_INIT, \"{module_name}\", "
        "NULL, -1, NULL};",
        f"PyMODINIT_FUNC PyInit_{module_name}(void) {{",
        "  import_array();",
        *[f"  {stmt}" for stmt in init_code],
        "  PyObject *m = PyModule_Create(&wb_module);",
        "  if (!m) return NULL;",
        "  PyObject *cap;",
    ]
    for attribute, fn_name, *named in capsules:
        name = named[0] if named else NODE_CAPSULE
        lines += [
            f"  cap = PyCapsule_New((void*){fn_name}, \"{name}\", NULL);",
            f"  if (!cap || PyModule_AddObject(m, \"{attribute}\", cap) < 0) {{ Py_XDECREF(cap); "
            "Py_DECREF(m); return NULL; }",
        ]
    lines += ["  return m;", "}"]
    return "\n".join(lines)


def node_labels(node: Apply) -> tuple[bytes, ...]:
    """What the C code of `node` calls itself and its variables in messages (the
    `labels` of its function, UTF-8): [0] the Op, then "input k of <Op>" for each
    input and "output j of <Op>" for each output (`sub["label"]` is one of them);
    then, for each input, the text of its Type (what its checks expect), and for each
    input its static lengths ("?,784"; "" when none is static or it is no tensor):
    data of the checks `node_parts(typed_labels=True)` generates; last, the Op's
    run-time parameters (its adapter's `c_run_time_params`, e.g. Gemm's inplace "1"),
    which its code reads as `sub["params"]` so that nodes differing only in them share
    one kind."""
    from workbench.core.link.c.types import static_lengths_text, type_description

    op_label = str(node.op)
    if len(op_label) > LABEL_LIMIT:
        op_label = op_label[:LABEL_LIMIT - 3] + "..."
    texts = [op_label, *[f"input {k} of {op_label}" for k in range(len(node.inputs))],
             *[f"output {j} of {op_label}" for j in range(len(node.outputs))]]
    types = [type_description(v.type) for v in node.inputs]
    lengths = [static_lengths_text(v.type) for v in node.inputs]
    op_c = c_op_of(node.op)
    params = c_optional(op_c, "c_run_time_params", node, default=None) or []
    return tuple(label_bytes(t) for t in (*texts, *types, *lengths, *params))


def node_source(node: Apply) -> NodeSource:
    """The C module of `node` alone; NoCCode when its Op or one of its Types has no C.
    Its text identifies the node kind (the module cache keys on it)."""
    parts = node_parts(node)
    lines = ["/* generated by workbench for one Apply node */", *MODULE_HEADERS]
    lines += [h for h in parts.headers if h not in lines]
    lines += parts.support
    if parts.apply_support:
        lines.append(parts.apply_support)
    lines.append(parts.function)
    module_name = "wbnode"
    lines.append(module_init(module_name, parts.init_code, [("fn", "wb_node_run")]))
    return NodeSource("\n".join(lines) + "\n", module_name, parts.version,
                      extra_flags=parts.extra_flags, libraries=parts.libraries,
                      lib_dirs=parts.lib_dirs, include_dirs=parts.include_dirs,
                      body=parts.body)
