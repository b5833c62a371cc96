"""Text views of a graph: `dprint` (the tree, one node per line) and `pprint` (a formula),
and `fit_lines`, which wraps them (or any text) to a terminal's width.

`dprint` labels every Apply output and input with an id (`[id A]`), indents
children under `|`, and prints a node reached a second time without its
children, so shared subgraphs are visible as shared. `pprint` writes the graph
as an infix expression such as `exp(x) * y`: a rule registered with
`register_pprint` writes a node, else the Op's own `pprint_text(args)` if it has
one (so an Op below this layer needs no import of it), else the Op's name as a call.
"""

from __future__ import annotations

import math
import sys
import textwrap
from collections.abc import Callable
from typing import Any, TextIO

from workbench.core.graph.basic import Apply, Constant, Variable, ancestors, short_data_repr
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.inner_graph import InnerGraphOp


def _id_label(n: int) -> str:
    """0 -> A, 25 -> Z, 26 -> BA ... (base 26 with letters, like a spreadsheet without gaps)."""
    letters = ""
    while True:
        letters = chr(ord("A") + n % 26) + letters
        n //= 26
        if n == 0:
            return letters


class IdLabels:
    """Assigns `[id X]` labels in the order nodes are first printed.

    The inspector reuses this so a node has the same label in `dprint`, in
    `to_networkx` and in drawings.
    """

    def __init__(self) -> None:
        self._labels: dict[Any, str] = {}
        self._avoid: set[str] = set()
        self._next = 0

    def avoid_names_of(self, outputs: list[Variable]) -> None:
        """Never hand out a label equal to the name of a variable of this graph, so
        `[id X]` cannot be confused with an input called `X`."""
        self._avoid.update(var.name for var in ancestors(outputs) if var.name is not None)

    def __call__(self, obj: Any) -> str:
        key = obj.owner if isinstance(obj, Variable) and obj.owner is not None else obj
        label = self._labels.get(key)
        if label is None:
            label = _id_label(self._next)
            self._next += 1
            while label in self._avoid:
                label = _id_label(self._next)
                self._next += 1
            self._labels[key] = label
        return label

    def known(self, obj: Any) -> bool:
        key = obj.owner if isinstance(obj, Variable) and obj.owner is not None else obj
        return key in self._labels


def outputs_of(graph: Any) -> tuple[list[Variable], FunctionGraph | None]:
    """The outputs to print for a Variable, a list of them, a FunctionGraph or a Function."""
    maker = getattr(graph, "maker", None)
    if maker is not None and hasattr(maker, "fgraph"):
        graph = maker.fgraph
    if isinstance(graph, FunctionGraph):
        return list(graph.outputs), graph
    if isinstance(graph, Variable):
        return [graph], None
    if isinstance(graph, Apply):
        return list(graph.outputs), None
    if isinstance(graph, (list, tuple)):
        outputs: list[Variable] = []
        for item in graph:
            outputs.extend(outputs_of(item)[0])
        return outputs, None
    raise TypeError(
        "dprint expects a Variable, a list of Variables, a FunctionGraph or a compiled "
        f"Function, got {type(graph).__name__}"
    )


def _variable_text(var: Variable) -> str:
    """How a graph input or constant appears in dprint."""
    if isinstance(var, Constant):
        if var.name is not None:
            return var.name
        return f"{type(var).__name__}{{{short_data_repr(var.data)}}}"
    if var.name is not None:
        return var.name
    return f"<{var.type}>"


def _node_text(var: Variable) -> str:
    node = var.owner
    assert node is not None
    text = str(node.op)
    if len(node.outputs) > 1:
        text += f".{var.index}"
    return text


def dprint(
    graph: Any,
    print_type: bool = False,
    depth: int | None = None,
    file: TextIO | str | None = None,
    print_source: bool = False,
    ids: IdLabels | None = None,
) -> str | Any:
    """Print the graph as an indented tree (seed 001's format).

    `graph` is a Variable, a list of Variables, a FunctionGraph or a compiled
    Function. `print_type` appends each Variable's Type; `depth` limits how deep
    the tree goes; `print_source` appends the user's file:line that built each
    node. `file` is a stream (default stdout) or the string "str" to return the
    text instead of printing it. Returns the text when file="str", else `graph`.
    """
    outputs, fgraph = outputs_of(graph)
    labels = ids if ids is not None else IdLabels()
    labels.avoid_names_of(outputs)
    lines: list[str] = []
    expanded: set[Apply] = set()

    def describe(var: Variable) -> str:
        if var.owner is not None:
            text = f"{_node_text(var)} [id {labels(var)}]"
            if var.name is not None:
                text += f" '{var.name}'"
        else:
            text = f"{_variable_text(var)} [id {labels(var)}]"
        if print_type:
            text += f" <{var.type}>"
        if print_source:
            source = getattr(var.tag, "source", None)
            if source is not None:
                text += f"  # {source.filename}:{source.lineno}"
        return text

    # An explicit stack keeps deep graphs (thousands of nodes) from hitting the
    # recursion limit. Each entry: (variable or a ready line, prefix for its own
    # line, depth). The inner graph of an inner-graph Op (a loop's body) follows
    # the node's inputs, its lines marked " >". A compiled function's update (output
    # index -> the input it replaces: a shared variable, a random generator's state)
    # is named beside that output.
    updated = {k: fgraph.inputs[i] for k, i in
               (getattr(fgraph, "update_mapping", None) or {}).items()} if fgraph else {}
    for k, out in enumerate(outputs):
        first = len(lines)
        stack: list[tuple[Variable | str, str, int]] = [(out, "", 0)]
        while stack:
            var, prefix, level = stack.pop()
            if isinstance(var, str):
                lines.append(prefix + var)
                continue
            lines.append(prefix + describe(var))
            node = var.owner
            if node is None or node in expanded:
                continue
            expanded.add(node)
            if depth is not None and level + 1 >= depth:
                continue
            if isinstance(node.op, InnerGraphOp):
                inner_prefix = prefix + " >"
                for inner_out in reversed(node.op.inner_outputs):
                    stack.append((inner_out, inner_prefix, level + 1))
                stack.append((f"{node.op.inner_graph_title} of [id {labels(var)}]:",
                              inner_prefix, level + 1))
            child_prefix = prefix + " |"
            for child in reversed(node.inputs):
                stack.append((child, child_prefix, level + 1))
        if k in updated:
            lines[first] += f" -> update of {describe(updated[k])}"

    text = "\n".join(lines)
    if file == "str":
        return text
    stream = file if file is not None else sys.stdout
    stream.write(text + "\n")
    return graph


def fit_lines(text: str, width: int, hanging: int | None = None) -> str:
    """`text` with each line longer than `width` wrapped at spaces (a word longer than
    a line is cut). Continuation lines start at column `hanging`, by default two past
    the line's own indent, dprint's tree bars included (" | | |"), or near the left
    edge when that indent is over half the width: printed graphs, formulas and prose
    stay readable in a narrow terminal."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = len(line) - len(line.lstrip(" |"))
        lead = line[:indent] if hanging is None else ""
        step = indent + 2 if hanging is None else hanging
        if step > width // 2:  # too deep to keep: continue near the left edge
            lead, step = "", 4
        lines += textwrap.wrap(line, width, subsequent_indent=lead.ljust(step),
                               break_on_hyphens=False) or [line]
    return "\n".join(lines)


# -- pprint ------------------------------------------------------------------------

# Binding strength of infix operators (higher binds tighter), as in Python: comparisons
# below | below ^ below & (so `(a < b) & c` keeps its parentheses), then shifts (5, the
# default for other symbols), arithmetic, unary minus and invert, power.
_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_PRECEDENCE = {
    "or": 0, **dict.fromkeys(_COMPARISONS, 1), "|": 2, "^": 3, "&": 4,
    "+": 6, "-": 6, "*": 7, "/": 7, "//": 7, "%": 7,
    "neg": 8, "~": 8, "**": 9,
}
_ATOM = 100

PprintRule = Callable[[Apply, list[tuple[str, int]]], tuple[str, int]]
_rules: list[tuple[Callable[[Apply], bool], PprintRule]] = []


def register_pprint(predicate: Callable[[Apply], bool] | type, rule: PprintRule) -> None:
    """Teach pprint how to write a node: `rule(node, [(text, precedence), ...])`.

    `predicate` is an Op class or a function of the node. Rules registered later
    are tried first.
    """
    if isinstance(predicate, type):
        op_class = predicate

        def predicate(node: Apply) -> bool:
            return isinstance(node.op, op_class)

    _rules.insert(0, (predicate, rule))


def _wrap(text: str, precedence: int, needed: int) -> str:
    return f"({text})" if precedence < needed else text


def _scalar_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int] | None:
    scalar_op = getattr(node.op, "scalar_op", None)
    if scalar_op is None or getattr(node.op, "axis", "n/a") != "n/a":  # not a reduction
        return None
    symbol = getattr(scalar_op, "symbol", None)
    name = getattr(scalar_op, "name", None) or str(scalar_op)
    if symbol is not None and len(args) == 2:
        prec = getattr(scalar_op, "precedence", None) or _PRECEDENCE.get(symbol, 5)
        (left, lp), (right, rp) = args
        if symbol == "**":  # right-associative
            return f"{_wrap(left, lp, prec + 1)} ** {_wrap(right, rp, prec)}", prec
        if symbol in _COMPARISONS:  # `a < b < c` would chain: parenthesize both sides
            return f"{_wrap(left, lp, prec + 1)} {symbol} {_wrap(right, rp, prec + 1)}", prec
        return f"{_wrap(left, lp, prec)} {symbol} {_wrap(right, rp, prec + 1)}", prec
    if symbol is not None and len(args) == 1:
        prec = _PRECEDENCE["neg"]
        (text, p), = args
        return f"{symbol}{_wrap(text, p, prec + 1)}", prec  # -(-x), never --x
    return f"{name}({', '.join(t for t, _ in args)})", _ATOM


def _dimshuffle_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int] | None:
    new_order = getattr(node.op, "new_order", None)
    if new_order is None:
        return None
    kept = [d for d in new_order if d != "x"]
    (text, prec), = args[:1]
    if kept == sorted(kept):  # only broadcast dimensions added or dropped: invisible
        return text, prec
    if len(kept) == len(new_order) and kept == list(range(len(kept)))[::-1]:
        return f"{_wrap(text, prec, _ATOM)}.T", _ATOM
    order = ",".join(str(d) for d in new_order)
    return f"dimshuffle({text}, {order})", _ATOM


def pprint(graph: Any, file: TextIO | str | None = "str") -> str:
    """The graph as an infix formula, e.g. `exp(x) * y`; one line per output.

    Named intermediate variables print by name, so a large graph stays readable
    when the user names its parts. Returns the text (and writes it to `file` if
    a stream is given).
    """
    outputs, _ = outputs_of(graph)
    memo: dict[Variable, tuple[str, int]] = {}

    def leaf(var: Variable) -> tuple[str, int]:
        if isinstance(var, Constant) and var.name is None:
            data = var.data
            if getattr(data, "size", None) == 1:  # broadcast against the rest: a number
                return repr(data.reshape(-1)[0].item()), _ATOM
            return short_data_repr(data, limit=40), _ATOM
        return _variable_text(var), _ATOM

    def as_argument(var: Variable) -> tuple[str, int]:
        if var.owner is not None and var.name is not None:
            return var.name, _ATOM
        return memo[var]

    for out in outputs:
        # Post-order with an explicit stack: deep graphs must not recurse.
        stack = [out]
        while stack:
            var = stack[-1]
            if var in memo:
                stack.pop()
                continue
            node = var.owner
            if node is None:
                memo[var] = leaf(var)
                stack.pop()
                continue
            missing = [c for c in node.inputs if c not in memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            memo[var] = _format_node(node, var, [as_argument(c) for c in node.inputs])

    text = "\n".join(memo[o][0] for o in outputs)
    if file not in ("str", None):
        file.write(text + "\n")  # type: ignore[union-attr]
    return text


def _format_node(node: Apply, var: Variable, args: list[tuple[str, int]]) -> tuple[str, int]:
    _install_tensor_rules()
    for predicate, rule in _rules:
        if predicate(node):
            text, precedence = rule(node, args)
            if len(node.outputs) > 1:  # a rule writes the call; the output is picked here
                return f"{_wrap(text, precedence, _ATOM)}[{var.index}]", _ATOM
            return text, precedence
    own_text = getattr(node.op, "pprint_text", None)
    if callable(own_text):  # the Op writes itself (as the linalg Ops do): a call
        text = own_text([t for t, _ in args])
        return (f"{text}[{var.index}]" if len(node.outputs) > 1 else text), _ATOM
    for rule in (_dimshuffle_rule, _scalar_rule):
        result = rule(node, args)
        if result is not None:
            if len(node.outputs) > 1:
                return f"{result[0]}[{var.index}]", _ATOM
            return result
    op_text = str(node.op)
    call = f"{op_text}({', '.join(t for t, _ in args)})"
    if len(node.outputs) > 1:
        call += f"[{var.index}]"
    return call, _ATOM


# -- the tensor library's notation ---------------------------------------------------

_tensor_rules_installed = False


def _install_tensor_rules() -> None:
    """Register how tensor Ops read in a formula (`sum(x, axis=0)`, `x @ W`, `x[1:]`).

    Installed on first use so that this module does not import the tensor
    library (which imports the graph core that imports this module's users).
    """
    global _tensor_rules_installed
    if _tensor_rules_installed:
        return
    _tensor_rules_installed = True
    try:
        from workbench.core.scalar import math as smath
        from workbench.core.scalar.basic import Cast
        from workbench.core.scalar.declared import computes_like
        from workbench.core.tensor import linalg, reduction, subtensor
        from workbench.core.tensor.shape import Shape, Shape_i
    except ImportError:  # the graph core used on its own
        return

    def reduction_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        op = node.op
        name = type(op).__name__.lower()
        axis = getattr(op, "axis", None)
        initial = "" if op.initial is None else f", initial={op.initial}"
        if axis is None:
            return f"{name}({args[0][0]}{initial})", _ATOM
        if isinstance(axis, tuple) and len(axis) == 1:
            axis = axis[0]
        return f"{name}({args[0][0]}, axis={axis}{initial})", _ATOM

    def matmul_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        prec = _PRECEDENCE["*"]
        (left, lp), (right, rp) = args
        return f"{_wrap(left, lp, prec)} @ {_wrap(right, rp, prec + 1)}", prec

    def shape_i_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        return f"{_wrap(args[0][0], args[0][1], _ATOM)}.shape[{node.op.i}]", _ATOM

    def shape_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        return f"{_wrap(args[0][0], args[0][1], _ATOM)}.shape", _ATOM

    def index_text(idx_list: Any, scalar_args: list[str]) -> str:
        remaining = iter(scalar_args)

        def part(value: Any) -> str:
            if value is None:
                return ""
            if value is subtensor.SYMBOLIC:
                return next(remaining)
            return str(value)

        entries = []
        for entry in idx_list:
            if isinstance(entry, subtensor.SliceEntry):
                parts = [part(p) for p in entry]
                entries.append(":".join(parts if entry.step is not None else parts[:2]))
            else:
                entries.append(part(entry))
        return ", ".join(entries)

    def subtensor_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        (x, xp), *rest = args
        inner = index_text(node.op.idx_list, [t for t, _ in rest])
        return f"{_wrap(x, xp, _ATOM)}[{inner}]", _ATOM

    def is_count(count: Variable, x: Variable, axes: tuple[int, ...]) -> bool:
        """Whether `count` is how mean() counts the elements of x over `axes`: a
        product (cast to float) of their static lengths and `x.shape[a]`."""
        static, symbolic = 1, []  # the product of the constants; the axes read
        stack = [count]
        while stack:
            var = stack.pop()
            node = var.owner
            if isinstance(var, Constant) and getattr(var.data, "size", 0) == 1:
                static *= int(var.data.reshape(-1)[0])
            elif node is not None and isinstance(node.op, Shape_i) and node.inputs[0] is x:
                symbolic.append(node.op.i)
            elif node is not None and (getattr(node.op, "new_order", None) is not None or any(
                    computes_like(getattr(node.op, "scalar_op", None), c)
                    for c in (Cast, smath.Mul))):
                stack.extend(node.inputs)  # a cast, a product or a broadcast DimShuffle
            else:
                return False
        known = [x.type.shape[a] for a in axes if x.type.shape[a] is not None]
        return sorted(symbolic) == sorted(a for a in axes if x.type.shape[a] is None) and (
            static == math.prod(known))

    def is_mean(node: Apply) -> bool:
        if not computes_like(getattr(node.op, "scalar_op", None), smath.TrueDiv) or len(
                node.inputs) != 2:
            return False
        total, count = node.inputs
        if total.owner is None or not isinstance(total.owner.op, reduction.Sum):
            return False
        x = total.owner.inputs[0]
        axis = total.owner.op.axis
        axes = tuple(range(x.type.ndim)) if axis is None else tuple(axis)
        return is_count(count, x, axes)

    def mean_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        total = args[0][0]
        return (f"mean{total[3:]}" if total.startswith("sum(") else f"{total} / {args[1][0]}",
                _ATOM)

    def scalar_op_is(var: Variable, library_class: type) -> bool:
        """Whether `var` is computed by an Elemwise of the library's `library_class`."""
        node = var.owner
        return node is not None and computes_like(getattr(node.op, "scalar_op", None),
                                                  library_class)

    def beneath_broadcast(var: Variable) -> Variable:
        """`var` without the DimShuffles that only add broadcast dimensions."""
        while var.owner is not None and getattr(var.owner.op, "new_order", None) is not None:
            var = var.owner.inputs[0]
        return var

    def is_shape_count(var: Variable) -> bool:
        """Whether `var` is a length read from a shape (`x.shape[0]`), or a product of
        such lengths and integer constants: a count a reader sees as a number."""
        var = beneath_broadcast(var)
        node = var.owner
        if isinstance(var, Constant):
            return getattr(var.data, "size", 0) == 1 and var.data.dtype.kind in "iu"
        if node is None:
            return False
        if isinstance(node.op, Shape_i):
            return True
        return scalar_op_is(var, smath.Mul) and all(is_shape_count(i) for i in node.inputs)

    def is_cast_of_a_count(node: Apply) -> bool:
        return scalar_op_is(node.outputs[0], Cast) and is_shape_count(node.inputs[0])

    def cast_of_a_count_rule(node: Apply, args: list[tuple[str, int]]) -> tuple[str, int]:
        return args[0]  # `n` as a float reads as `n`: the cast is the machine's concern

    def reciprocal_of(var: Variable) -> Variable | None:
        """`a` when `var` is `1 / a` (possibly broadcast), else None."""
        var = beneath_broadcast(var)
        if not scalar_op_is(var, smath.TrueDiv):
            return None
        one, denominator = var.owner.inputs
        one = beneath_broadcast(one)
        if isinstance(one, Constant) and getattr(one.data, "size", 0) == 1 and (
                one.data.reshape(-1)[0] == 1):
            return denominator
        return None

    def is_product_with_a_reciprocal(node: Apply) -> bool:
        return (scalar_op_is(node.outputs[0], smath.Mul) and len(node.inputs) == 2
                and any(reciprocal_of(i) is not None for i in node.inputs))

    def product_with_a_reciprocal_rule(node: Apply,
                                       args: list[tuple[str, int]]) -> tuple[str, int]:
        """`1 / a * b` and `b * (1 / a)` read as `b / a`, which is what they compute."""
        k = 0 if reciprocal_of(node.inputs[0]) is not None else 1
        (other, other_prec), (reciprocal, _) = args[1 - k], args[k]
        prec = _PRECEDENCE["/"]
        one, slash, below = reciprocal.partition(" / ")  # `1.0 / a`, a already wrapped
        if not slash or "(" in one:  # a named reciprocal: keep the product
            left, right = (reciprocal, other) if k == 0 else (other, reciprocal)
            return f"{left} * {right}", _PRECEDENCE["*"]
        return f"{_wrap(other, other_prec, prec)} / {below}", prec

    register_pprint(reduction.CAReduce, reduction_rule)
    register_pprint(is_mean, mean_rule)
    register_pprint(is_cast_of_a_count, cast_of_a_count_rule)
    register_pprint(is_product_with_a_reciprocal, product_with_a_reciprocal_rule)
    for op_class in (linalg.Dot, linalg.MatMul):
        register_pprint(op_class, matmul_rule)
    register_pprint(Shape_i, shape_i_rule)
    register_pprint(Shape, shape_rule)
    register_pprint(subtensor.Subtensor, subtensor_rule)
