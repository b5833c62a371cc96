"""Where the CLI's graphs come from: an expression, a Python file, a graph file or an example.

Expressions are parsed with Python's `ast` and built by walking the tree against
a whitelist (the tensor library's functions, arithmetic operators, indexing,
a few methods): nothing is ever passed to `eval`, and what Python itself computes
(constant arithmetic, repeated lists) is bounded, as is the nesting depth.
Variables are declared with `--var x=float64[?,3]`; undeclared names are float64
scalars, and an error that involves one says so. A Python file runs only when asked
for with --python.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import operator
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import workbench.tensor as wt
from workbench.cli.errors import UsageError, unknown
from workbench.core.graph.basic import Variable, explicit_graph_inputs
from workbench.examples import GraphSource

__all__ = ["UsageError", "parse_expression", "parse_input_spec", "parse_var_spec", "resolve"]


# -- variable specs ---------------------------------------------------------------------

_SPEC = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z0-9_]+)\s*(?:\[([^\]]*)\])?\s*$")


def parse_var_spec(spec: str) -> Variable:
    """`x=float64[?,3]` -> a TensorType(float64, (?, 3)) variable named x.

    `x=float32` is a scalar, `x=int64[]` too, `x=float64[5]` a vector of length 5.
    """
    match = _SPEC.match(spec)
    if not match:
        raise UsageError(f"bad --var {spec!r}: expected NAME=DTYPE[SHAPE], e.g. x=float64[?,3]")
    name, dtype, dims = match.groups()
    _check_dtype(dtype, f"--var {spec!r}")
    shape: list[int | None] = []
    if dims:
        for part in dims.split(","):
            part = part.strip()
            if part in ("?", "None", ""):
                shape.append(None)
            elif part.isdigit():
                shape.append(int(part))
            else:
                raise UsageError(f"bad --var {spec!r}: dimension {part!r} is not an int or ?")
    try:
        return wt.tensor(dtype, shape=tuple(shape), name=name)
    except TypeError as exc:
        raise UsageError(f"bad --var {spec!r}: {exc}") from None


def parse_input_spec(spec: str) -> tuple[str, str | None, tuple[int, ...] | None, str | None]:
    """`x=float64[1000,100]` -> (name, dtype, shape, None); `x=data.npy` -> (name, .., path)."""
    name, _, value = spec.partition("=")
    if not name or not value:
        raise UsageError(f"bad --input {spec!r}: expected NAME=DTYPE[SHAPE] or NAME=FILE.npy")
    if value.endswith(".npy"):
        return name.strip(), None, None, value
    match = _SPEC.match(f"{name}={value}")
    if not match:
        raise UsageError(f"bad --input {spec!r}: expected NAME=DTYPE[SHAPE], e.g. x=float64[10,3]")
    _, dtype, dims = match.groups()
    _check_dtype(dtype, f"--input {spec!r}")
    shape = []
    for part in (dims or "").split(","):
        part = part.strip()
        if part and not part.isdigit():
            raise UsageError(f"bad --input {spec!r}: dimension {part!r} is not a length; "
                             "random data needs every length, e.g. x=float64[10,3]")
        if part:
            shape.append(int(part))
    return name.strip(), dtype, tuple(shape), None


def _check_dtype(dtype: str, where: str) -> None:
    from workbench.core.dtypes import DTYPES, as_dtype

    try:
        as_dtype(dtype)
    except TypeError:
        raise UsageError(f"bad {where}: {unknown('dtype', dtype, DTYPES)}") from None


# -- expressions ------------------------------------------------------------------------

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.MatMult: operator.matmul,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}
#: Methods of tensor variables an expression may call (and attributes it may read).
_METHODS = {"sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "all",
            "any", "reshape", "flatten", "dimshuffle", "transpose", "astype", "dot", "clip",
            "cumsum", "cumprod", "squeeze", "repeat", "round", "conj"}
_ATTRIBUTES = {"T", "shape", "real", "imag", "ndim"}

#: Bounds on what an expression may make Python compute before any graph exists.
MAX_EXPRESSION_CHARS = 10_000
MAX_DEPTH = 200  # nesting of the parsed expression (deeper graphs: build them in Python)
MAX_CONSTANT_ITEMS = 100_000  # numbers in one (nested) list or tuple
MAX_INT_BITS = 64  # an int constant beyond int64/uint64 cannot become a tensor anyway


def expression_functions() -> dict[str, Callable[..., Any]]:
    """The functions an expression may call: the tensor library's, by name."""
    allowed = {}
    for name in wt.__all__:
        value = getattr(wt, name, None)
        if inspect.isfunction(value) and not name.startswith("_"):
            allowed[name] = value
    return allowed


class ExpressionBuilder(ast.NodeVisitor):
    """Builds a graph from a parsed expression, node by node, refusing anything else."""

    def __init__(self, variables: dict[str, Variable]) -> None:
        self.variables = variables
        self.functions = expression_functions()
        self.undeclared: set[str] = set()  # names taken as float64 scalars

    def build(self, text: str) -> Variable:
        if len(text) > MAX_EXPRESSION_CHARS:
            raise UsageError(f"the expression has {len(text)} characters; the limit is "
                             f"{MAX_EXPRESSION_CHARS} (build bigger graphs with --python)")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise UsageError(f"malformed expression {text[:80]!r}: {exc.msg} "
                             f"(column {exc.offset})") from None
        except (RecursionError, MemoryError):
            raise UsageError(f"the expression is nested too deeply; the limit is {MAX_DEPTH} "
                             "levels (build deeper graphs with --python)") from None
        depth = _depth(tree.body)
        if depth > MAX_DEPTH:
            raise UsageError(f"the expression is nested {depth} levels deep; the limit is "
                             f"{MAX_DEPTH} (build deeper graphs with --python)")
        self._item_counts: dict[int, tuple[Any, int]] = {}
        return self.visit(tree.body)

    def _check_constant(self, node: ast.AST, op: Any, left: Any, right: Any) -> None:
        """Refuse Python arithmetic on constants whose result would be huge, before it
        runs: big int powers and products, long repeated lists and tuples."""
        ints = [isinstance(v, int) and not isinstance(v, bool) for v in (left, right)]
        if all(ints) and op is operator.pow and right > 0 and abs(left) > 1:
            if (abs(left).bit_length() - 1) * right >= MAX_INT_BITS:
                raise self._too_big(node, f"more than {MAX_INT_BITS} bits")
        if op is operator.mul and any(isinstance(v, (list, tuple)) for v in (left, right)):
            sequence, times = (left, right) if isinstance(left, (list, tuple)) else (right, left)
            if isinstance(times, int) and self._items(sequence) * times > MAX_CONSTANT_ITEMS:
                raise self._too_big(node, f"more than {MAX_CONSTANT_ITEMS} items")

    def _checked_value(self, node: ast.AST, value: Any) -> Any:
        """`value` if its size is within the bounds (int bits, items of a sequence)."""
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise self._too_big(node, f"more than {MAX_INT_BITS} bits")
        if isinstance(value, (list, tuple)) and self._items(value) > MAX_CONSTANT_ITEMS:
            raise self._too_big(node, f"more than {MAX_CONSTANT_ITEMS} items")
        return value

    def _too_big(self, node: ast.AST, what: str) -> UsageError:
        text = ast.unparse(node)
        text = text if len(text) <= 60 else text[:57] + "..."
        return UsageError(f"the constant {text!r} would have {what}; expressions are for "
                          "graphs, not for big constants")

    def _items(self, value: Any) -> int:
        """How many numbers a (nested, possibly shared) list or tuple holds."""
        if not isinstance(value, (list, tuple)):
            return 1
        known = self._item_counts.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        count = sum(self._items(v) for v in value)
        self._item_counts[id(value)] = (value, count)
        return count

    def _apply(self, node: ast.AST, function: Callable[..., Any], *args: Any,
               **kwargs: Any) -> Any:
        """`function(*args, **kwargs)` for `node`; its refusal as one UsageError line that
        says which undeclared names (taken as scalars) it involves."""
        try:
            return function(*args, **kwargs)
        except (TypeError, ValueError, IndexError, ArithmeticError) as exc:
            if isinstance(exc, UsageError):
                raise
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if isinstance(exc, OverflowError):
                reason = "the result is too large for a float64"
            raise UsageError(f"cannot build {ast.unparse(node)!r}: {reason}"
                             f"{self._scalar_hint(node)}") from None

    def _scalar_hint(self, node: ast.AST) -> str:
        names = sorted({n.id for n in ast.walk(node)
                        if isinstance(n, ast.Name) and n.id in self.undeclared})
        if not names:
            return ""
        declare = " ".join(f"--var {name}=float64[?,?]" for name in names)
        if len(names) == 1:
            return (f"; {names[0]} was not declared, so it was taken as a float64 scalar: "
                    f"declare it, e.g. {declare}")
        return (f"; {', '.join(names)} were not declared, so they were taken as float64 "
                f"scalars: declare them, e.g. {declare}")

    def generic_visit(self, node: ast.AST) -> Any:
        raise UsageError(f"expressions cannot contain {type(node).__name__} "
                         f"({ast.unparse(node)!r})")

    def visit_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, (bool, int, float)) or node.value is None:
            return self._checked_value(node, node.value)
        raise UsageError(f"unsupported constant {node.value!r} in the expression")

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id not in self.variables:
            if node.id in self.functions:
                raise UsageError(f"{node.id} is a function: call it, e.g. {node.id}(x)")
            self.variables[node.id] = wt.dscalar(node.id)  # undeclared: a float64 scalar
            self.undeclared.add(node.id)
        return self.variables[node.id]

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise UsageError(f"operator {type(node.op).__name__} is not supported")
        left, right = self.visit(node.left), self.visit(node.right)
        self._check_constant(node, op, left, right)
        return self._checked_value(node, self._apply(node, op, left, right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        op = _UNARY.get(type(node.op))
        if op is None:
            raise UsageError(f"operator {type(node.op).__name__} is not supported")
        return self._checked_value(node, self._apply(node, op, self.visit(node.operand)))

    def visit_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise UsageError("chained comparisons are not supported")
        op = _COMPARE.get(type(node.ops[0]))
        if op is None:
            raise UsageError(f"comparison {type(node.ops[0]).__name__} is not supported "
                             "(use eq(a, b) / neq(a, b))")
        return self._apply(node, op, self.visit(node.left), self.visit(node.comparators[0]))

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return self._checked_value(node, tuple(self.visit(e) for e in node.elts))

    def visit_List(self, node: ast.List) -> Any:
        return self._checked_value(node, [self.visit(e) for e in node.elts])

    def visit_Slice(self, node: ast.Slice) -> Any:
        parts = [None if p is None else self.visit(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        return self._apply(node, operator.getitem, self.visit(node.value),
                           self.visit(node.slice))

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if node.attr not in _ATTRIBUTES:
            raise UsageError(f"attribute .{node.attr} is not allowed in expressions "
                             f"(allowed: {', '.join(sorted(_ATTRIBUTES))})")
        return self._apply(node, getattr, self.visit(node.value), node.attr)

    def visit_Call(self, node: ast.Call) -> Any:
        func = node.func  # the callee is checked before any argument is looked at
        if isinstance(func, ast.Name):
            target = self.functions.get(func.id)
            if target is None:
                raise unknown("function", func.id, self.functions,
                              where="`workbench functions` lists them")
        elif isinstance(func, ast.Attribute) and func.attr in _METHODS:
            target = self._apply(func, getattr, self.visit(func.value), func.attr)
        else:
            raise UsageError(f"cannot call {ast.unparse(func)!r} in an expression")
        args = [self.visit(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise UsageError("**kwargs are not supported in expressions")
            kwargs[kw.arg] = self.visit(kw.value)
        return self._apply(node, target, *args, **kwargs)


def _depth(root: ast.AST) -> int:
    """How deeply the parsed expression nests (without recursion: it may be deep)."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def parse_expression(text: str, var_specs: Sequence[str] = ()) -> GraphSource:
    """Build the graph of an expression with the declared variables."""
    variables: dict[str, Variable] = {}
    for spec in var_specs:
        var = parse_var_spec(spec)
        variables[var.name] = var
    try:
        output = ExpressionBuilder(variables).build(text)
    except (TypeError, ValueError, IndexError) as exc:
        if isinstance(exc, UsageError):
            raise
        raise UsageError(f"cannot build {text!r}: {exc}") from None
    if not isinstance(output, Variable):
        output = wt.as_tensor_variable(output)
    declared = list(variables.values())
    used = set(explicit_graph_inputs([output]))
    inputs = [v for v in declared if v in used]
    return GraphSource(inputs=inputs, outputs=[output], name=text)


# -- other sources ------------------------------------------------------------------------


def load_python(spec: str) -> GraphSource:
    """`path.py:name`: the user's own file, imported as a module (so its code RUNS);
    `name` a Variable, a list of Variables, or a function returning them."""
    path_text, _, attribute = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    module_name = f"_workbench_user_{abs(hash(str(path.resolve())))}"
    spec_obj = importlib.util.spec_from_file_location(module_name, path)
    if spec_obj is None or spec_obj.loader is None:
        raise UsageError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec_obj)
    sys.modules[module_name] = module
    spec_obj.loader.exec_module(module)
    if not hasattr(module, attribute):
        raise UsageError(f"{path} has no attribute {attribute!r}")
    value = getattr(module, attribute)
    if callable(value) and not isinstance(value, Variable):
        value = value()
    outputs = [value] if isinstance(value, Variable) else list(value)
    if not outputs or not all(isinstance(v, Variable) for v in outputs):
        raise UsageError(f"{spec} must be a Variable, a list of Variables or a function "
                         "returning them")
    return GraphSource(inputs=explicit_graph_inputs(outputs), outputs=outputs, name=spec)


def load_graph_file(path: str) -> GraphSource:
    from workbench.io import GraphFileError, load

    try:
        loaded = load(path)
    except GraphFileError as exc:
        raise UsageError(f"broken graph file {path}: {exc}") from None
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    return GraphSource(inputs=loaded.inputs, outputs=loaded.outputs, name=Path(path).name)


def resolve(graph: str | None, example: str | None, var_specs: Sequence[str],
            python: str | None = None) -> GraphSource:
    """The graph named on the command line, in any of the four forms. A Python file is
    run only when asked for with --python (never guessed from the positional argument)."""
    if python is not None:
        if graph is not None or example is not None:
            raise UsageError("give one of a GRAPH, --example or --python")
        if not re.match(r"^.+\.py:\w+$", python):
            raise UsageError(f"--python {python!r}: expected FILE.py:NAME")
        return load_python(python)
    if example is not None:
        from workbench.examples import EXAMPLES, get_example

        if graph is not None:
            raise UsageError("give either a GRAPH or --example, not both")
        if example not in EXAMPLES:
            raise unknown("example", example, EXAMPLES)
        return get_example(example)
    if graph is None:
        raise UsageError("no graph given: pass an expression, FILE.json, --example NAME or "
                         "--python FILE.py:NAME")
    if graph.endswith(".json"):
        return load_graph_file(graph)
    if re.match(r"^[^\s:]+\.py:\w+$", graph):
        raise UsageError(f"{graph} names a Python file: running it executes its code, so "
                         f"ask for it with --python {graph}")
    return parse_expression(graph, var_specs)
