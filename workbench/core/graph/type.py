"""The Type contract: static information about the values a Variable may hold.

A Type builds Variables (`make_variable` / `__call__`), filters runtime values
(`filter`), relates to other Types (`is_super`, `in_same_class`) and converts
Variables (`filter_variable`). Three optional hooks (`grad_one`, `grad_zero`,
`add_gradients`) let `workbench.grad` differentiate through Variables of a Type
other than tensors and scalars. `Generic`, `NullType` and `DisconnectedType` live
here because every layer needs them, and so do the gradient markers built on the
last two (`grad_undefined`, `grad_not_implemented`, `disconnected_type`,
`grad_dtype`); tensors and scalars define their own Types.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core import dtypes
from workbench.core.graph.basic import Constant, Variable
from workbench.core.graph.utils import MethodNotDefined


class Type:
    """Base class of all Types; subclasses must implement `filter`.

    As in seed 000, a Type compares by identity unless its class declares
    `__props__` (a tuple of attribute names, possibly empty), which generates
    value equality and hashing: `TensorType("float64", (2, None))` equals any
    other TensorType with that dtype and shape.
    """

    __props__: tuple[str, ...] = ()
    variable_type: type[Variable] = Variable
    constant_type: type[Constant] = Constant

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__props__" in cls.__dict__:
            if "__eq__" not in cls.__dict__:
                cls.__eq__ = Type._props_eq  # type: ignore[method-assign]
            if "__hash__" not in cls.__dict__:
                cls.__hash__ = Type._props_hash  # type: ignore[method-assign]

    # -- identity ---------------------------------------------------------------
    def _props(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__props__)

    def _props_eq(self, other: object) -> bool:
        if self is other:
            return True
        return type(self) is type(other) and self._props() == other._props()  # type: ignore[attr-defined]

    def _props_hash(self) -> int:
        return hash((type(self), self._props()))

    def __str__(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return str(self)

    def clone(self, **kwargs: Any) -> Type:
        """A copy of this Type with some `__props__` changed."""
        props = {name: getattr(self, name) for name in self.__props__}
        unknown = set(kwargs) - set(props)
        if unknown:
            raise TypeError(f"{type(self).__name__}.clone got unknown arguments {sorted(unknown)}")
        props.update(kwargs)
        return type(self)(**props)

    # -- values -----------------------------------------------------------------
    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """Return `data` converted to a value of this Type, or raise TypeError.

        With `strict`, `data` must already be such a value (it is returned as is).
        Otherwise lossless conversions are allowed, and lossy ones only with
        `allow_downcast`.
        """
        raise MethodNotDefined(f"{type(self).__name__}.filter")

    def filter_inplace(
        self, value: Any, storage: Any, strict: bool = False, allow_downcast: bool | None = None
    ) -> Any:
        """Like `filter`, possibly reusing the memory of `storage` (the old value)."""
        raise MethodNotDefined(f"{type(self).__name__}.filter_inplace")

    def is_valid_value(self, data: Any, strict: bool = True) -> bool:
        """True if `filter(data, strict=strict)` would succeed."""
        try:
            self.filter(data, strict=strict)
            return True
        except (TypeError, ValueError):
            return False

    def value_validity_msg(self, data: Any) -> str:
        """Why `data` is or is not a valid value of this Type."""
        try:
            self.filter(data, strict=True)
        except (TypeError, ValueError) as exc:
            return str(exc)
        return "value is valid"

    def values_eq(self, a: Any, b: Any) -> bool:
        return bool(a == b)

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        return self.values_eq(a, b)

    def may_share_memory(self, a: Any, b: Any) -> bool:
        return a is b

    def get_shape_info(self, obj: Any) -> Any:
        """What `get_size` needs to report the memory of `obj` (used by the profiler)."""
        return obj

    def get_size(self, shape_info: Any) -> int:
        """Bytes of data taken by a value described by `shape_info`."""
        raise MethodNotDefined(f"{type(self).__name__}.get_size")

    # -- gradients (optional) ----------------------------------------------------
    # `workbench.grad` handles tensors and scalars itself; for any other Type it asks
    # these hooks, and raises a TypeError naming the missing one when one is needed.
    def grad_one(self, var: Variable) -> Variable:
        """The gradient of `var` with respect to itself: a constant one of this Type.

        Needed when a Variable of this Type is the cost of `grad(cost, wrt)` (it
        seeds the backward pass), e.g. ``return self.make_constant(1.0)``.
        """
        raise MethodNotDefined(f"{type(self).__name__}.grad_one")

    def grad_zero(self, var: Variable) -> Variable:
        """A zero gradient for `var` (a constant zero of this Type).

        Needed when `grad` returns zeros for a `wrt` of this Type the cost does not
        depend on (``return_disconnected="zero"``), and by `float_zeros_like`.
        """
        raise MethodNotDefined(f"{type(self).__name__}.grad_zero")

    def add_gradients(self, terms: Sequence[Variable]) -> Variable:
        """The sum of two or more gradient contributions to one Variable of this Type.

        Needed when such a Variable is used several times in the graph being
        differentiated; build the sum with an Op on this Type (e.g. an `Add` Op).
        """
        raise MethodNotDefined(f"{type(self).__name__}.add_gradients")

    # -- relations between Types ------------------------------------------------
    def in_same_class(self, otype: Type) -> bool | None:
        """True if `otype` belongs to the same class of types as self (default: equality)."""
        return self == otype

    def is_super(self, otype: Type) -> bool | None:
        """True if every value of `otype` is a value of self (self >= otype)."""
        return self.in_same_class(otype)

    # -- variables --------------------------------------------------------------
    def make_variable(self, name: str | None = None) -> Variable:
        return self.variable_type(self, None, None, name)

    def __call__(self, name: str | None = None) -> Variable:
        return self.make_variable(name)

    def make_constant(self, value: Any, name: str | None = None) -> Constant:
        return self.constant_type(self, value, name=name)

    def convert_variable(self, var: Variable) -> Variable | None:
        """A Variable compatible with both self and `var.type`, or None if impossible."""
        if self.is_super(var.type):
            return var
        return None

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        """Return `other` as a Variable usable where this Type is expected.

        A narrower Variable is returned unchanged; a compatible but wider one is
        converted (for tensors, through a SpecifyShape node). Raises TypeError
        naming both types otherwise.
        """
        if not isinstance(other, Variable):
            other = self.make_constant(other)
        if other.type == self:
            return other
        if allow_convert:
            converted = self.convert_variable(other)
            if converted is not None:
                return converted
        raise TypeError(
            f"cannot convert variable {other} of type {other.type} to type {self}"
        )


class Generic(Type):
    """Any Python object; used for Op parameters and values no other Type models."""

    __props__ = ()

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        return data

    def is_valid_value(self, data: Any, strict: bool = True) -> bool:
        return True

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        try:
            return bool(a == b)
        except Exception:
            return a is b

    def get_size(self, shape_info: Any) -> int:
        return 0

    def __str__(self) -> str:
        return "Generic"


generic = Generic()


class NullType(Type):
    """The type of an undefined gradient; carries the reason in `why_null`.

    No value can have this type: compiling a graph that needs one is an error.
    """

    __props__ = ("why_null",)

    def __init__(self, why_null: str = "(no explanation given)") -> None:
        self.why_null = why_null

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        raise ValueError(f"no value has a NullType ({self.why_null})")

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        raise ValueError(f"no variable can be converted to a NullType ({self.why_null})")

    def __str__(self) -> str:
        return "NullType"


class DisconnectedType(Type):
    """The type of the gradient of an input that does not influence an output."""

    __props__ = ()

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        raise AssertionError(
            "a DisconnectedType variable was used in a computation; "
            "it only marks that a gradient does not flow"
        )

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        raise AssertionError("no variable can be converted to a DisconnectedType")

    def __str__(self) -> str:
        return "DisconnectedType"



# -- gradient markers: what an Op's gradient returns when there is no ordinary one -------
# They sit next to NullType and DisconnectedType so that the scalar and tensor Ops
# can use them without importing `workbench.core.grad` (which builds on those Ops).


class NullTypeGradError(TypeError):
    """A requested gradient is undefined or not implemented (a NullType reached `wrt`)."""


def disconnected_type() -> Variable:
    """A fresh DisconnectedType variable: "the cost does not depend on this input"."""
    return DisconnectedType()()


def is_disconnected(var: Any) -> bool:
    """True for a DisconnectedType variable, and for None (an output gradient nobody
    gave; an Op's gradient must not return None, `grad` refuses it)."""
    return var is None or isinstance(getattr(var, "type", None), DisconnectedType)


def is_null(var: Any) -> bool:
    """True for a NullType variable (an undefined or unimplemented gradient)."""
    return isinstance(getattr(var, "type", None), NullType)


def grad_undefined(op: Any, x_pos: int, x: Any, comment: str = "") -> Variable:
    """The gradient of `op` wrt its input `x_pos` does not exist (e.g. an integer axis).

    Returns a NullType variable whose `why_null` names the Op, the position and
    `comment`; `grad` raises `NullTypeGradError` only if it reaches a `wrt`.
    """
    why = f"the gradient of {op} with respect to its input {x_pos} ({x}) is undefined"
    return NullType(why + (f": {comment}" if comment else ""))()


def grad_not_implemented(op: Any, x_pos: int, x: Any, comment: str = "") -> Variable:
    """The gradient of `op` wrt its input `x_pos` exists but nobody wrote it yet."""
    why = f"the gradient of {op} with respect to its input {x_pos} ({x}) is not implemented"
    return NullType(why + (f": {comment}" if comment else ""))()


def is_differentiable_dtype(dtype: Any) -> bool:
    """True for float and complex dtypes: the only ones a gradient is taken in."""
    d = dtypes.as_dtype(dtype)
    return d.is_float or d.is_complex


def grad_dtype(x: Any) -> dtypes.Dtype:
    """The dtype of a gradient wrt `x` (a Variable or a dtype): x's own if float or
    complex, else the default float dtype (a gradient is never an integer)."""
    d = getattr(x.type, "dtype", None) if isinstance(x, Variable) else x
    if d is not None and is_differentiable_dtype(d):
        return dtypes.as_dtype(d)
    return dtypes.default_float_dtype()
