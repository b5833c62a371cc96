"""Graph files: a versioned JSON format that saves and loads graphs without running code.

A file lists the graph's Variables (each with its Type; constants with their
data: inline when small, base64 `.npy` when large), its Apply nodes in
topological order (each Op identified by the registered name of its class and
its `__props__`), and which Variables are the inputs and outputs. Loading only
instantiates classes that workbench itself defines (no pickle, no eval, no
import by name), rebuilds every node through `Op.make_node`, and checks each
rebuilt output against the saved Type. A malformed file gives a `GraphFileError`
naming the place in the file (e.g. `nodes[3].inputs[1]`), and nothing else: no
RecursionError for deep nesting (MAX_DEPTH), no TypeError for a value of the wrong
kind, no MemoryError for an array header claiming more data than the file holds.

An Op that holds a graph (an OpFromGraph, a loop) is stored once: later nodes with the
same Op name the first (`same_op_as`), and one held in a prop (an OpFromGraph's gradient
override, itself an OpFromGraph) is stored at its first place with an `inner_op_id` and
named by `same_inner_op` at later ones.

Names in a file are checked before anything uses them: an Op's name is an
identifier (as `add`, `Cast{float64}`), a variable's name and any other text is
printable and at most NAME_LIMIT characters, and Ops and Types take only their own
`__props__`. (No name ever reaches generated C: see link/c/cstring.py. The check is a
second wall, and keeps control characters out of printed graphs.)
"""

from __future__ import annotations

import base64
import contextvars
import importlib
import inspect
import io as _io
import json
import math
import pkgutil
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Constant, Variable, io_toposort
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.graph.op import Op
from workbench.core.graph.type import Type
from workbench.core.printing import outputs_of
from workbench.core.tensor.indexing import IndexMarker

FORMAT = "workbench-graph"
VERSION = 1
#: Arrays with more elements than this are stored as base64 `.npy`, not as JSON lists.
INLINE_LIMIT = 64
#: The longest variable name or text value a file may hold.
NAME_LIMIT = 256
#: What an Op's name may be: a Python identifier, optionally with a {...} of
#: identifier characters and commas after it (e.g. `Cast{float64}`), at most 64 long.
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}(\{[A-Za-z0-9_.,]{0,14}\})?")
#: The deepest nesting of JSON objects and lists a file may hold (saved graphs use
#: about 20; each Composite inside a Composite adds 6).
MAX_DEPTH = 120


#: While one document is encoded (decoded): the inner-graph Ops found in props (an
#: OpFromGraph's gradient overrides), each stored once. The first place holds the Op with
#: ``"inner_op_id": k`` (k counting from 0 in file order); a later one is
#: ``{"same_inner_op": k, "name": ...}`` (the name is checked on loading). (Nodes
#: sharing an Op use ``same_op_as``, see encode_graph.)
_inner_ops: contextvars.ContextVar[Any] = contextvars.ContextVar("inner_ops", default=None)


class GraphFileError(ValueError):
    """A graph file that cannot be loaded; `where` is the place in the file. The
    message is one line."""

    def __init__(self, where: str, message: str) -> None:
        message = " ".join(message.split())
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where


#: What decoding a value of the wrong kind raises (a list where an int belongs, a
#: constructor refusing its props); each becomes a GraphFileError at its place.
_MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
              AssertionError)


@contextmanager
def _refused_at(where: str, what: str = "malformed value") -> Iterator[None]:
    """Turn an exception of decoding into a GraphFileError naming `where`."""
    try:
        yield
    except GraphFileError:
        raise
    except _MALFORMED as exc:
        text = str(exc) if len(str(exc)) <= 160 else str(exc)[:157] + "..."
        raise GraphFileError(where, f"{what} ({type(exc).__name__}: {text})") from None


# -- the classes and functions a file may name ------------------------------------------


_registry: dict[str, Any] | None = None


def _qualified(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def registry() -> dict[str, Any]:
    """Every Op and Type class, marker and dtype-rule function workbench defines, by name.

    Only these can appear in a file: loading never imports a module named by it.
    """
    global _registry
    if _registry is not None:
        return _registry
    found: dict[str, Any] = {}
    import workbench.core as core_package

    for info in pkgutil.walk_packages(core_package.__path__, "workbench.core."):
        if ".link.c" in info.name or ".link.gpu" in info.name:
            continue  # backends add no graph objects
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__ and (
                issubclass(value, (Op, Type)) or _is_prop_class(value)
            ):
                found[_qualified(value)] = value
            elif inspect.isfunction(value) and value.__module__ == module.__name__ and (
                module.__name__.startswith("workbench.core.scalar.")
            ):
                found[_qualified(value)] = value  # dtype rules of scalar ops
            elif isinstance(value, Op) and type(value).__module__ == module.__name__:
                found[_qualified(type(value))] = type(value)  # a declared Op's class
            elif isinstance(value, IndexMarker):
                found[f"{module.__name__}.{value.name}"] = value
    _registry = found
    return found


def _is_prop_class(cls: type) -> bool:
    """Small value classes used inside Op props (e.g. a slice entry of an index)."""
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


# -- encoding -------------------------------------------------------------------------


def _encode_array(array: np.ndarray) -> dict[str, Any]:
    dtype = dtypes.dtype_of(array) if array.dtype.kind != "O" else None
    if dtype is None:
        raise TypeError(f"cannot save an array of dtype {array.dtype}")
    if array.size <= INLINE_LIMIT and dtype != dtypes.bfloat16 and not dtype.is_complex:
        flat = [_encode_float(v) if isinstance(v, float) else v for v in array.ravel().tolist()]
        return {"array": {"dtype": str(dtype), "shape": list(array.shape), "data": flat}}
    buffer = _io.BytesIO()
    stored = array.view(np.uint16) if dtype == dtypes.bfloat16 else array
    # np.ascontiguousarray would make a 0-d array 1-d
    np.save(buffer, np.require(stored, requirements="C"), allow_pickle=False)
    return {"npy": {"dtype": str(dtype), "base64": base64.b64encode(buffer.getvalue()).decode()}}


def _encode_float(value: float) -> Any:
    return value if math.isfinite(value) else {"float": repr(value)}


def encode_value(value: Any) -> Any:
    """A JSON-safe description of an Op/Type prop or constant value."""
    if value is None or isinstance(value, (bool, int)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, dtypes.Dtype):
        return {"dtype": str(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return _encode_float(value)
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, np.generic):
        return {"scalar": _encode_array(np.asarray(value))}
    if isinstance(value, np.random.Generator):  # a random draw's constant state
        return {"generator": encode_value(value.bit_generator.state)}
    if isinstance(value, IndexMarker):
        return {"marker": f"{type(value).__module__}.{value.name}"}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {"record": _qualified(type(value)), "fields": [encode_value(v) for v in value]}
    if isinstance(value, (tuple, list)):
        return {"tuple" if isinstance(value, tuple) else "list": [encode_value(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    if isinstance(value, Op):
        return _encode_prop_op(value)
    if isinstance(value, Type):
        return {"type": _qualified(type(value)),
                "props": {p: encode_value(getattr(value, p)) for p in type(value).__props__}}
    if inspect.isfunction(value) and _qualified(value) in registry():
        return {"function": _qualified(value)}
    if inspect.ismethod(value) and value.__name__ == "_rule":
        return {"own_rule": True}  # the dtype rule an Op derives from its own props
    raise TypeError(f"cannot save a value of type {type(value).__name__}: {value!r}")


def _encode_prop_op(op: Op) -> dict[str, Any]:
    """An Op held in a prop: an inner-graph Op is stored once per document (_inner_ops)."""
    memo = _inner_ops.get()
    if memo is None or not isinstance(op, InnerGraphOp):
        return encode_op(op)
    if op in memo:  # (its name too, for a person reading the file)
        return {"same_inner_op": memo[op], "name": checked_text(str(op), "name")}
    memo[op] = k = len(memo)  # numbered before the graphs inside it
    encoded = encode_op(op)
    encoded["inner_op_id"] = k
    return encoded


def encode_op(op: Op) -> dict[str, Any]:
    from workbench.core.scalar.composite import Composite

    if isinstance(op, Composite):  # its prop is a compiled program: save the scalar graph
        return {"op": _qualified(Composite), "graph": encode_graph(op.inputs, op.outputs)}
    if isinstance(op, InnerGraphOp):  # its props, and the graph it holds
        return {"op": _qualified(type(op)),
                "props": {k: encode_value(v) for k, v in op.inner_graph_props().items()},
                "graph": encode_graph(op.inner_inputs, op.inner_outputs)}
    props = op.__props__ or ()
    encoded = {"op": _qualified(type(op)),
               "props": {p: encode_value(getattr(op, p)) for p in props}}
    name = vars(op).get("name")
    if isinstance(name, str) and "name" not in props and _accepts_name(type(op)):
        encoded["name"] = name  # e.g. the shared scalar op `int_div` (prints in dprint)
    return encoded


def _accepts_name(cls: type) -> bool:
    try:
        return "name" in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def encode_graph(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> dict[str, Any]:
    """The document of the graph from `inputs` to `outputs`."""
    ids: dict[Variable, int] = {}
    variables: list[dict[str, Any]] = []

    def add(var: Variable, kind: str) -> int:
        if var in ids:
            return ids[var]
        ids[var] = len(variables)
        entry: dict[str, Any] = {"id": ids[var], "kind": kind, "type": encode_value(var.type)}
        if var.name is not None:
            entry["name"] = var.name
        if kind == "constant":
            entry["data"] = encode_value(np.asarray(var.data) if isinstance(
                var.data, (np.ndarray, np.generic)) else var.data)
        variables.append(entry)
        return ids[var]

    for var in inputs:
        add(var, "input")
    nodes = []
    # an inner graph is stored once: a later node with an equal inner-graph Op names the
    # node that holds it ({"same_op_as": k})
    inner_graph_holders: dict[Op, int] = {}
    for node in io_toposort(inputs, outputs):
        in_ids = []
        for var in node.inputs:
            if var not in ids:
                if isinstance(var, Constant):
                    add(var, "constant")
                else:
                    raise ValueError(f"{var} is needed by {node.op} but is not an input")
            in_ids.append(ids[var])
        out_ids = [add(out, "computed") for out in node.outputs]
        op_spec: dict[str, Any] | None = None
        if isinstance(node.op, InnerGraphOp):
            holder = inner_graph_holders.setdefault(node.op, len(nodes))
            if holder != len(nodes):
                op_spec = {"same_op_as": holder}
        nodes.append({"op": op_spec or encode_op(node.op), "inputs": in_ids,
                      "outputs": out_ids})
    out_refs = []
    for var in outputs:
        if var not in ids:
            add(var, "constant" if isinstance(var, Constant) else "input")
        out_refs.append(ids[var])
    return {"variables": variables, "nodes": nodes,
            "inputs": [ids[v] for v in inputs], "outputs": out_refs}


def to_document(graph: Any, inputs: Sequence[Variable] | None = None) -> dict[str, Any]:
    """The JSON document of a graph (Variable(s), FunctionGraph or compiled Function).

    `inputs` defaults to the graph's own inputs (those of a FunctionGraph, else
    the non-constant roots the outputs depend on).
    """
    outputs, fgraph = outputs_of(graph)
    if inputs is not None:
        inputs = list(inputs)
    elif fgraph is not None:
        inputs = list(fgraph.inputs)
    else:
        from workbench.core.graph.basic import explicit_graph_inputs

        inputs = explicit_graph_inputs(outputs)
    document = {"format": FORMAT, "version": VERSION}
    token = _inner_ops.set({})
    try:
        document.update(encode_graph(inputs, outputs))
    finally:
        _inner_ops.reset(token)
    return document


def save(graph: Any, path: str | Path, inputs: Sequence[Variable] | None = None) -> None:
    """Write `graph` to `path` as a workbench graph file (JSON)."""
    text = json.dumps(to_document(graph, inputs), indent=1)
    Path(path).write_text(text, encoding="utf-8")


# -- decoding -------------------------------------------------------------------------


def _shown(value: Any) -> str:
    """A value from a file as a message shows it: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def checked_text(value: Any, where: str) -> str:
    """`value` if it is text a file may hold (printable, at most NAME_LIMIT characters),
    else a GraphFileError."""
    if not isinstance(value, str):
        raise GraphFileError(where, f"expected text, got {type(value).__name__}")
    if len(value) > NAME_LIMIT:
        raise GraphFileError(where, f"text of {len(value)} characters (at most {NAME_LIMIT})")
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise GraphFileError(where, f"text with the unprintable character {bad!r}: "
                                    f"{_shown(value)}")
    return value


def checked_name(value: Any, where: str) -> str | None:
    """A variable name from a file: None or checked_text."""
    return None if value is None else checked_text(value, where)


def checked_op_name(value: Any, where: str) -> str:
    """An Op name from a file: it must match OP_NAME."""
    if not isinstance(value, str) or not OP_NAME.fullmatch(value):
        raise GraphFileError(where, f"an Op name must be an identifier such as 'add' or "
                                    f"'Cast{{float64}}', got {_shown(value)}")
    return value


def _checked_props(cls: type, spec: Any, where: str) -> dict[str, Any]:
    """The `props` of an Op or Type spec: a mapping from the class's own `__props__`."""
    props = spec.get("props", {})
    if not isinstance(props, dict):
        raise GraphFileError(f"{where}.props", f"expected an object, got {type(props).__name__}")
    allowed = getattr(cls, "__props__", None) or ()
    for key in props:
        if key not in allowed:
            raise GraphFileError(f"{where}.props", f"{cls.__name__} has no prop "
                                                   f"{_shown(key)} (its props: "
                                                   f"{', '.join(allowed) or 'none'})")
    return props


def _decode_array(spec: Any, where: str) -> np.ndarray:
    try:
        if "array" in spec:
            body = spec["array"]
            dtype = dtypes.as_dtype(body["dtype"])
            data = [float(v["float"]) if isinstance(v, dict) else v for v in body["data"]]
            return np.array(data, dtype=dtype.numpy).reshape(body["shape"])
        body = spec["npy"]
        dtype = dtypes.as_dtype(body["dtype"])
        raw = _read_npy(base64.b64decode(body["base64"], validate=True), where)
        return raw.view(dtype.numpy) if dtype == dtypes.bfloat16 else raw.astype(dtype.numpy)
    except GraphFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GraphFileError(where, f"bad array data ({exc})") from None


def _read_npy(data: bytes, where: str) -> np.ndarray:
    """The array of `.npy` bytes, its header checked against the data before anything
    is allocated (a header may claim any shape)."""
    from numpy.lib import format as npy

    stream = _io.BytesIO(data)
    version = npy.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise GraphFileError(where, f".npy version {version} (expected 1.0 or 2.0)")
    read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, fortran_order, dtype = read_header(stream)
    if dtype.hasobject:
        raise GraphFileError(where, "a .npy of Python objects (never loaded)")
    if any(length < 0 for length in shape):
        raise GraphFileError(where, f"the .npy header claims the shape {shape}")
    count = math.prod(shape)
    claimed, held = count * dtype.itemsize, len(data) - stream.tell()
    if claimed != held:
        raise GraphFileError(where, f"the .npy header claims shape {shape} of {dtype} "
                                    f"({claimed} bytes) but the data holds {held} bytes")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell())
    return array.reshape(shape, order="F" if fortran_order else "C").copy()


#: The bit generators a file's numpy.random.Generator may use.
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


def _decode_generator(spec: Any, where: str) -> np.random.Generator:
    """A numpy.random.Generator in the saved state of one of BIT_GENERATORS."""
    state = _decode_value(spec, where)
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in BIT_GENERATORS:
        raise GraphFileError(where, f"unknown bit generator {_shown(name)} (known: "
                                    f"{', '.join(BIT_GENERATORS)})")
    bits = getattr(np.random, name)()
    try:
        bits.state = state
    except (TypeError, ValueError, KeyError) as exc:
        raise GraphFileError(where, f"not a valid {name} state: {exc}") from None
    return np.random.Generator(bits)


def decode_value(spec: Any, where: str) -> Any:
    """The value a JSON description stands for (the inverse of `encode_value`)."""
    with _refused_at(where):
        return _decode_value(spec, where)


def _decode_value(spec: Any, where: str) -> Any:
    if isinstance(spec, str):
        return checked_text(spec, where)
    if spec is None or isinstance(spec, (bool, int, float)):
        return spec
    if isinstance(spec, list):
        raise GraphFileError(where, "a bare list is not a valid value (lists are tagged)")
    if not isinstance(spec, dict) or len(spec) < 1:
        raise GraphFileError(where, f"unexpected value {spec!r}")
    known = registry()
    tag = next(iter(spec))
    if tag == "dtype":
        try:
            return dtypes.as_dtype(spec["dtype"])
        except TypeError as exc:
            raise GraphFileError(where, str(exc)) from None
    if tag == "float":
        return float(spec["float"])
    if tag == "ellipsis":
        return Ellipsis
    if tag in ("array", "npy"):
        return _decode_array(spec, where)
    if tag == "scalar":
        return _decode_array(spec["scalar"], where)[()]
    if tag == "generator":
        return _decode_generator(spec["generator"], f"{where}.generator")
    if tag in ("tuple", "list"):
        items = [decode_value(v, f"{where}[{i}]") for i, v in enumerate(spec[tag])]
        return tuple(items) if tag == "tuple" else items
    if tag == "dict":
        return {decode_value(k, where): decode_value(v, f"{where}[{k!r}]")
                for k, v in spec["dict"]}
    if tag in ("marker", "function", "record"):
        name = spec[tag]
        if not isinstance(name, str) or name not in known:
            raise GraphFileError(where, f"unknown {tag} {_shown(name)}")
        if tag == "record":
            return known[name](*[decode_value(v, where) for v in spec["fields"]])
        return known[name]
    if tag == "op":
        return _decode_prop_op(spec, where)
    if tag == "same_inner_op":
        op = _earlier_inner_op(spec["same_inner_op"], f"{where}.same_inner_op")
        if "name" in spec and spec["name"] != str(op):
            raise GraphFileError(f"{where}.name", f"names {_shown(spec['name'])} but Op "
                                                  f"{spec['same_inner_op']} is {_shown(str(op))}")
        return op
    if tag == "type":
        cls = known.get(spec["type"]) if isinstance(spec["type"], str) else None
        if not (inspect.isclass(cls) and issubclass(cls, Type)):
            raise GraphFileError(where, f"unknown Type {_shown(spec['type'])}")
        props = {k: decode_value(v, f"{where}.{k}")
                 for k, v in _checked_props(cls, spec, where).items()}
        try:
            return cls(**props)
        except (TypeError, ValueError) as exc:
            raise GraphFileError(where, f"bad type {spec['type']} {props}: {exc}") from None
    raise GraphFileError(where, f"unknown value tag {_shown(tag)}")


def _decode_prop_op(spec: dict[str, Any], where: str) -> Op:
    """An Op held in a prop; one with an ``inner_op_id`` is kept for later references."""
    memo = _inner_ops.get()
    if memo is None or "inner_op_id" not in spec:
        return decode_op(spec, where)
    k = spec["inner_op_id"]
    if k != len(memo) or isinstance(k, bool):
        raise GraphFileError(f"{where}.inner_op_id", f"expected {len(memo)} (ids count up in "
                                                     f"file order), got {_shown(k)}")
    memo.append(None)  # reserved: the graphs inside it may hold later ones
    memo[k] = decode_op(spec, where)
    return memo[k]


def _earlier_inner_op(k: Any, where: str) -> Op:
    memo = _inner_ops.get() or []
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(memo) \
            or memo[k] is None:
        raise GraphFileError(where, f"expected the inner_op_id of an Op stored earlier, got "
                                    f"{_shown(k)}")
    return memo[k]


def decode_op(spec: dict[str, Any], where: str) -> Op:
    from workbench.core.scalar.composite import Composite

    if not isinstance(spec, dict):
        raise GraphFileError(where, f"an Op is an object, got {type(spec).__name__}")
    name = spec.get("op")
    cls = registry().get(name) if isinstance(name, str) else None
    if cls is None or not (inspect.isclass(cls) and issubclass(cls, Op)):
        raise GraphFileError(where, f"unknown Op {_shown(name)}")
    if cls is Composite:
        inputs, outputs = decode_graph(spec.get("graph"), f"{where}.graph")
        with _refused_at(where, "cannot build Composite"):
            return Composite(inputs, outputs)
    if issubclass(cls, InnerGraphOp):
        return _decode_inner_graph_op(cls, spec, where)
    props = {}
    for key, value in _checked_props(cls, spec, where).items():
        if isinstance(value, dict) and value.get("own_rule"):
            continue  # rebuilt by the constructor from the other props
        props[key] = decode_value(value, f"{where}.props.{key}")
    if "name" in spec and _accepts_name(cls):
        props["name"] = checked_op_name(spec["name"], f"{where}.name")
    with _refused_at(where, f"cannot build {cls.__name__}({props})"):
        return cls(**props)


def _decode_inner_graph_op(cls: type[InnerGraphOp], spec: dict[str, Any], where: str
                           ) -> Op:
    inputs, outputs = decode_graph(spec.get("graph"), f"{where}.graph")
    saved = spec.get("props", {})
    if not isinstance(saved, dict) or not all(isinstance(k, str) for k in saved):
        raise GraphFileError(f"{where}.props", "expected an object of props")
    props = {checked_text(k, f"{where}.props"): decode_value(v, f"{where}.props.{k}")
             for k, v in saved.items()}
    with _refused_at(where, f"cannot build {cls.__name__} from its inner graph"):
        return cls.from_inner_graph(inputs, outputs, **props)


def _op_of_node(spec: Any, earlier: list[Op], where: str) -> Op:
    """The Op a node's spec describes, or names by `same_op_as` (an earlier node's)."""
    if isinstance(spec, dict) and "same_op_as" in spec:
        k = spec["same_op_as"]
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(earlier):
            raise GraphFileError(f"{where}.same_op_as", f"expected the index of an earlier "
                                                        f"node, got {_shown(k)}")
        return earlier[k]
    return decode_op(spec, where)


def decode_graph(document: dict[str, Any], where: str = ""
                 ) -> tuple[list[Variable], list[Variable]]:
    """Rebuild (inputs, outputs) from a graph document."""
    prefix = f"{where}." if where else ""
    if not isinstance(document, dict):
        raise GraphFileError(where, f"a graph is an object, got {type(document).__name__}")
    for section in ("variables", "nodes", "inputs", "outputs"):
        if section not in document:
            raise GraphFileError(where, f"missing section '{section}'")
        if not isinstance(document[section], list):
            raise GraphFileError(f"{prefix}{section}", f"expected a list, got "
                                                       f"{type(document[section]).__name__}")
    var_specs, node_specs = document["variables"], document["nodes"]
    input_ids, output_ids = document["inputs"], document["outputs"]
    variables: dict[int, Variable] = {}
    declared: dict[int, dict[str, Any]] = {}
    for i, spec in enumerate(var_specs):
        place = f"{prefix}variables[{i}]"
        if not isinstance(spec, dict) or "id" not in spec or "type" not in spec:
            raise GraphFileError(place, "a variable needs an id and a type")
        var_id = _checked_id(spec["id"], f"{place}.id")
        if var_id in declared:
            raise GraphFileError(f"{place}.id", f"variable {var_id} is declared twice")
        declared[var_id] = spec
        vtype = decode_value(spec["type"], f"{place}.type")
        if not isinstance(vtype, Type):
            raise GraphFileError(f"{place}.type", "not a Type")
        kind = spec.get("kind")
        name = checked_name(spec.get("name"), f"{place}.name")
        if kind == "input":
            with _refused_at(place, f"cannot make an input of {vtype}"):
                variables[var_id] = vtype(name)
        elif kind == "constant":
            data = decode_value(spec.get("data"), f"{place}.data")
            with _refused_at(f"{place}.data", f"does not fit {vtype}"):
                variables[var_id] = vtype.make_constant(data, name=name)
        elif kind != "computed":
            raise GraphFileError(f"{place}.kind", f"unknown variable kind {_shown(kind)}")

    def lookup(ref: Any, place: str) -> Variable:
        ref = _checked_id(ref, place)
        if ref not in variables:
            if ref in declared:
                raise GraphFileError(place, f"variable {ref} is used before the node computing it")
            raise GraphFileError(place, f"dangling reference to variable {ref!r}")
        return variables[ref]

    node_ops: list[Op] = []
    for n, spec in enumerate(node_specs):
        place = f"{prefix}nodes[{n}]"
        if not isinstance(spec, dict):
            raise GraphFileError(place, f"a node is an object, got {type(spec).__name__}")
        op = _op_of_node(spec.get("op", {}), node_ops, f"{place}.op")
        node_ops.append(op)
        in_ids, out_ids = spec.get("inputs", []), spec.get("outputs", [])
        for key, ids in (("inputs", in_ids), ("outputs", out_ids)):
            if not isinstance(ids, list):
                raise GraphFileError(f"{place}.{key}", f"expected a list of variable ids, "
                                                       f"got {type(ids).__name__}")
        inputs = [lookup(ref, f"{place}.inputs[{k}]") for k, ref in enumerate(in_ids)]
        try:
            node: Apply = op.make_node(*inputs)
        except Exception as exc:
            raise GraphFileError(place, f"{op} refused its inputs: {exc}") from None
        if len(out_ids) != len(node.outputs):
            raise GraphFileError(place, f"{op} has {len(node.outputs)} outputs, the file "
                                        f"lists {len(out_ids)}")
        for k, (ref, out) in enumerate(zip(out_ids, node.outputs)):
            saved = declared.get(_checked_id(ref, f"{place}.outputs[{k}]"))
            if saved is None:
                raise GraphFileError(f"{place}.outputs[{k}]", f"dangling reference {ref!r}")
            saved_type = decode_value(saved["type"], f"{place}.outputs[{k}].type")
            if saved_type != out.type:
                raise GraphFileError(f"{place}.outputs[{k}]",
                                     f"rebuilt type {out.type} differs from saved {saved_type}")
            out.name = checked_name(saved.get("name"), f"{place}.outputs[{k}].name")
            variables[ref] = out
    inputs = [lookup(ref, f"{prefix}inputs[{k}]") for k, ref in enumerate(input_ids)]
    outputs = [lookup(ref, f"{prefix}outputs[{k}]") for k, ref in enumerate(output_ids)]
    return inputs, outputs


def _checked_id(value: Any, where: str) -> int:
    """A variable id from a file: an int."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise GraphFileError(where, f"a variable id is an integer, got {_shown(value)}")
    return value


def _check_depth(document: Any) -> None:
    """A GraphFileError if `document` nests objects and lists deeper than MAX_DEPTH
    (decoding is recursive: this keeps it far from Python's recursion limit)."""
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise GraphFileError("", f"objects and lists nested more than {MAX_DEPTH} deep")
        if isinstance(value, dict):
            pending.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            pending.extend((v, depth + 1) for v in value)


@dataclass
class LoadedGraph:
    """A graph read from a file: its input and output Variables."""

    inputs: list[Variable]
    outputs: list[Variable]

    def __iter__(self):  # allows `inputs, outputs = load(path)`
        return iter((self.inputs, self.outputs))


def from_document(document: Any) -> LoadedGraph:
    if not isinstance(document, dict):
        raise GraphFileError("", "a graph file holds a JSON object")
    if document.get("format") != FORMAT:
        raise GraphFileError("format", f"not a workbench graph file (format "
                                       f"{document.get('format')!r})")
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION or version < 1:
        raise GraphFileError("version", f"unsupported version {version!r} (this workbench "
                                        f"reads versions 1 to {VERSION})")
    _check_depth(document)
    token = _inner_ops.set([])
    try:
        inputs, outputs = decode_graph(document)
    except RecursionError:  # (a second wall: MAX_DEPTH keeps decoding far from it)
        raise GraphFileError("", "the graph nests too deeply to be rebuilt") from None
    except MemoryError:
        raise GraphFileError("", "the graph asks for more memory than there is") from None
    finally:
        _inner_ops.reset(token)
    return LoadedGraph(inputs, outputs)


def load(path: str | Path) -> LoadedGraph:
    """Read a graph file; never executes code from it. A file that is not a graph
    file gives a GraphFileError, and nothing else."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"graph file not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise GraphFileError(f"byte {exc.start}", "not UTF-8 text (a graph file is JSON)"
                             ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphFileError(f"line {exc.lineno} column {exc.colno}",
                             f"not valid JSON (truncated?): {exc.msg}") from None
    except RecursionError:
        raise GraphFileError("", f"objects and lists nested more than {MAX_DEPTH} deep"
                             ) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise GraphFileError("", f"not valid JSON: {exc}") from None
    return from_document(document)
