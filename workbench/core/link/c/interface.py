"""The C contract of Types (CLinkerType, seed 002) and Ops (COp), and a registry.

A user-defined Type or Op takes part in the C linker by inheriting the mixin and
overriding its methods. Workbench's own Types and Ops stay backend-free: their C
lives in `workbench/core/link/c/` in adapter classes registered per class with
`register_c_type(TensorType, TensorTypeC)` / `register_c_op(Elemwise, ElemwiseC)`.
The code generator asks `c_type_of(t)` / `c_op_of(op)` for the object that answers.

Conventions shared by every method that returns code: the text is a C fragment
templated with `%(name)s`-style keys already filled in by the method from `name`
and `sub`; `sub` is a dict of special strings, most importantly `sub["fail"]`, the
C statement that jumps to the error exit after a Python exception has been set, and
`sub["label"]`, a C expression (a `const char *`, given at run time) naming the node
or the variable in messages: pass it as a `%s` argument,
`PyErr_Format(PyExc_ValueError, "%s: bad length %ld", <label>, n)`. Never paste names
or other text from Python into the C; `c_string_literal` (cstring.py) writes a literal.
Every method raises MethodNotDefined by default; the generator treats optional ones
(headers, support code, cleanup...) as empty: see `c_optional`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from workbench.core.graph.utils import MethodNotDefined

__all__ = [
    "CLinkerObject", "CLinkerType", "COp", "COpAdapter", "CTypeAdapter", "c_op_of",
    "c_optional", "c_type_of", "register_c_op", "register_c_type", "registered_c_ops",
    "registered_c_types",
]  # fmt: skip


def _undefined(obj: Any, method: str) -> MethodNotDefined:
    return MethodNotDefined(f"{type(obj).__name__}.{method}")


class CLinkerObject:
    """What Types and Ops share: the compile-time requirements of their C code."""

    def c_headers(self) -> list[str]:
        """Header names to #include, e.g. ["<math.h>", "numpy/arrayobject.h"] (a name
        without <> or quotes is wrapped in <>)."""
        raise _undefined(self, "c_headers")

    def c_header_dirs(self) -> list[str]:
        """Extra directories to search for headers (-I)."""
        raise _undefined(self, "c_header_dirs")

    def c_libraries(self) -> list[str]:
        """Libraries to link, without the lib prefix: ["m"] gives -lm."""
        raise _undefined(self, "c_libraries")

    def c_lib_dirs(self) -> list[str]:
        """Extra directories to search for libraries (-L)."""
        raise _undefined(self, "c_lib_dirs")

    def c_compile_args(self) -> list[str]:
        """Extra compiler flags this code needs (e.g. ["-fopenmp"]). Flags that change
        floating-point semantics (-ffast-math) are not welcome."""
        raise _undefined(self, "c_compile_args")

    def c_support_code(self) -> str:
        """C text placed once at file scope (helper functions, structs), shared by every
        user of this class in a module, so it must not depend on instance details that
        vary between instances (or must be named uniquely)."""
        raise _undefined(self, "c_support_code")

    def c_code_cache_version(self) -> tuple[int, ...]:
        """A tuple of integers versioning the generated C; bump it whenever the C changes.
        An empty tuple means unversioned: modules using it are compiled for this process
        only and never stored in the on-disk cache."""
        raise _undefined(self, "c_code_cache_version")


class CLinkerType(CLinkerObject):
    """The C side of a Type: how a value travels between its PyObject and C variables.

    In the templates, `py_%(name)s` is the `PyObject *` holding the value and the
    variables declared by c_declare are the C view of it.
    """

    def c_declare(self, name: str, sub: dict[str, str]) -> str:
        """Required. C declarations of the variables that c_extract fills, named after
        `name` to avoid collisions, e.g. "PyArrayObject* %(name)s;"."""
        raise _undefined(self, "c_declare")

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        """Required. C that initialises the declared variables to an empty state, e.g.
        "%(name)s = NULL;" (runs before c_extract; must not fail)."""
        raise _undefined(self, "c_init")

    def c_extract(self, name: str, sub: dict[str, str]) -> str:
        """Required. C that sets the declared variables from `py_%(name)s`, checking the
        value (kind, dtype, rank, static shape): on a mismatch it sets a Python exception
        naming the input and runs `sub["fail"]`."""
        raise _undefined(self, "c_extract")

    def c_extract_out(self, name: str, sub: dict[str, str]) -> str:
        """Optional. Like c_extract, but for an output slot: `py_%(name)s` may be Py_None,
        meaning no storage yet, in which case the variables stay as c_init left them."""
        raise _undefined(self, "c_extract_out")

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        """Optional. C that releases what c_extract acquired (references, buffers); it
        must not decref `py_%(name)s` itself."""
        raise _undefined(self, "c_cleanup")

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Required. C that packs the C variables back into `py_%(name)s` after an Op
        wrote them, adjusting reference counts when it replaces the object."""
        raise _undefined(self, "c_sync")

    def c_literal(self, data: Any) -> str:
        """Optional. A C expression for the constant `data` of this Type (for inlining
        constants), e.g. "1.5" for a double."""
        raise _undefined(self, "c_literal")

    def c_is_simple(self) -> bool:
        """Optional. True for builtin C types or small structs that may be passed by value
        on the stack."""
        raise _undefined(self, "c_is_simple")


class COp(CLinkerObject):
    """The C side of an Op: the code computing one Apply node.

    `inputs` and `outputs` are the C names of the node's variables (as declared by
    their Types' c_declare); `name` is unique per node in the module.
    """

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        """Required. C computing the outputs of `node` from the inputs. An output variable
        may hold storage from a previous call (reuse it if it fits) or be empty; on error
        set a Python exception and run `sub["fail"]`."""
        raise _undefined(self, "c_code")

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """Optional. File-scope C specific to this node (e.g. a specialised kernel); names
        in it must include `name` to stay unique."""
        raise _undefined(self, "c_support_code_apply")

    def c_init_code(self) -> list[str]:
        """Optional. C statements run once when the module is imported (e.g.
        "import_array();" for the NumPy C API)."""
        raise _undefined(self, "c_init_code")

    def c_code_cleanup(self, node: Any, name: str, inputs: list[str], outputs: list[str],
                       sub: dict[str, str]) -> str:
        """Optional. C run after c_code on every path (success or failure) to release what
        c_code acquired."""
        raise _undefined(self, "c_code_cleanup")


def c_optional(obj: Any, method: str, *args: Any, default: Any = None) -> Any:
    """`obj.method(*args)`, or `default` when obj lacks it or it raises MethodNotDefined."""
    fn = getattr(obj, method, None)
    if fn is None:
        return default
    try:
        return fn(*args)
    except MethodNotDefined:
        return default


# --------------------------------------------------------------------------- registry


class CTypeAdapter(CLinkerType):
    """Base of the C implementation of a Type class that does not define its own C.

    Built around one Type instance (`self.type`); attributes it does not define are
    read from that instance, so templates can use e.g. `self.dtype`.
    """

    def __init__(self, type_: Any) -> None:
        self.type = type_

    def __getattr__(self, attr: str) -> Any:
        if attr == "type":
            raise AttributeError(attr)
        return getattr(self.type, attr)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.type!r})"


class COpAdapter(COp):
    """Base of the C implementation of an Op class that does not define its own C.

    Built around one Op instance (`self.op`); attributes it does not define (its
    props) are read from that instance.
    """

    def __init__(self, op: Any) -> None:
        self.op = op

    def __getattr__(self, attr: str) -> Any:
        if attr == "op":
            raise AttributeError(attr)
        return getattr(self.op, attr)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.op!r})"


_C_TYPES: dict[type, Callable[[Any], CLinkerType]] = {}
_C_OPS: dict[type, Callable[[Any], COp]] = {}

_T = TypeVar("_T")


def _register(table: dict[type, Any], kind: str, cls: type, impl: Any) -> Any:
    if not isinstance(cls, type):
        raise TypeError(f"register_c_{kind} needs a class as first argument, got {cls!r}")

    def add(impl_: _T) -> _T:
        if not callable(impl_):
            raise TypeError(f"the C implementation of {cls.__name__} must be callable "
                            f"(a {kind} adapter class taking the instance), got {impl_!r}")
        table[cls] = impl_
        return impl_

    return add if impl is None else add(impl)


def register_c_type(type_class: type, impl: Callable[[Any], CLinkerType] | None = None) -> Any:
    """Give instances of `type_class` (and its subclasses) C code: `impl(type_instance)`
    returns the CLinkerType answering for it (usually a CTypeAdapter subclass). Without
    `impl`, returns a class decorator. Registering a class again replaces its entry."""
    return _register(_C_TYPES, "type", type_class, impl)


def register_c_op(op_class: type, impl: Callable[[Any], COp] | None = None) -> Any:
    """Give instances of `op_class` (and its subclasses) C code: `impl(op_instance)`
    returns the COp answering for it (usually a COpAdapter subclass). Without `impl`,
    returns a class decorator."""
    return _register(_C_OPS, "op", op_class, impl)


def _lookup(table: dict[type, Any], obj: Any, mixin: type, key_method: str) -> Any:
    # The nearest class in the MRO wins: a registered subclass beats its base, and a
    # user class defining the key method itself beats a registration of its base.
    for klass in type(obj).__mro__:
        if klass is mixin or klass is CLinkerObject:
            continue
        if klass in table:
            return table[klass](obj)
        if key_method in klass.__dict__:
            return obj
    return None


def c_type_of(type_: Any) -> CLinkerType | None:
    """The object providing C for a Type instance: the Type itself when its class
    defines c_declare, else its registered adapter; None when it has no C code."""
    return _lookup(_C_TYPES, type_, CLinkerType, "c_declare")


def c_op_of(op: Any) -> COp | None:
    """The object providing C for an Op instance: the Op itself when its class defines
    c_code, else its registered adapter; None when it has no C code (it then runs
    through `perform`)."""
    return _lookup(_C_OPS, op, COp, "c_code")


def registered_c_types() -> dict[type, Callable[[Any], CLinkerType]]:
    """A copy of the Type registry (class -> adapter factory)."""
    return dict(_C_TYPES)


def registered_c_ops() -> dict[type, Callable[[Any], COp]]:
    """A copy of the Op registry (class -> adapter factory)."""
    return dict(_C_OPS)
