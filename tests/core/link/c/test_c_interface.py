"""The CLinkerType / COp contracts and the registry that gives workbench's own classes C."""

from __future__ import annotations

import pytest

from workbench.core.graph.op import Op
from workbench.core.graph.type import Type
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.link.c import interface as ci
from workbench.core.link.c.interface import (
    CLinkerType,
    COp,
    COpAdapter,
    CTypeAdapter,
    c_op_of,
    c_optional,
    c_type_of,
    register_c_op,
    register_c_type,
)

TYPE_METHODS = ["c_declare", "c_init", "c_extract", "c_extract_out", "c_cleanup", "c_sync",
                "c_literal", "c_is_simple", "c_code_cache_version", "c_headers", "c_libraries",
                "c_header_dirs", "c_lib_dirs", "c_compile_args", "c_support_code"]
OP_METHODS = ["c_code", "c_support_code", "c_support_code_apply", "c_headers", "c_libraries",
              "c_compile_args", "c_init_code", "c_code_cleanup", "c_code_cache_version"]


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(ci, "_C_TYPES", {})
    monkeypatch.setattr(ci, "_C_OPS", {})


@pytest.mark.parametrize("mixin, names", [(CLinkerType, TYPE_METHODS), (COp, OP_METHODS)])
def test_every_contract_method_is_documented_and_undefined_by_default(mixin, names):
    obj = mixin()
    for name in names:
        method = getattr(obj, name)
        assert method.__doc__, name
        nargs = method.__code__.co_argcount - 1
        with pytest.raises(MethodNotDefined, match=name):
            method(*([None] * nargs))


class DoubleType(Type, CLinkerType):
    """A user Type providing its own C (seed 000's DoubleType)."""

    def filter(self, data, strict=False, allow_downcast=None):
        return float(data)

    def c_declare(self, name, sub):
        return f"double {name};"

    def c_code_cache_version(self):
        return (1,)


class Plain(Type):
    def filter(self, data, strict=False, allow_downcast=None):
        return data


class PlainSub(Plain):
    pass


def test_user_types_answer_for_themselves_and_library_types_through_adapters(clean_registry):
    assert c_type_of(DoubleType()).c_declare("x", {}) == "double x;"
    assert c_type_of(Plain()) is None

    @register_c_type(Plain)
    class PlainC(CTypeAdapter):
        def c_declare(self, name, sub):
            return f"PyObject* {name}; /* {self.tag} */"

    plain = PlainSub()
    plain.tag = "sub"
    adapter = c_type_of(plain)  # subclasses inherit the registration
    assert isinstance(adapter, PlainC) and adapter.type is plain
    assert adapter.c_declare("v", {}) == "PyObject* v; /* sub */"  # attributes forwarded
    assert c_optional(adapter, "c_headers", default=[]) == []
    assert c_optional(DoubleType(), "c_code_cache_version", default=()) == (1,)
    assert ci.registered_c_types() == {Plain: PlainC}


class AddOne(Op):
    __props__ = ()

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] + 1


class MyCOp(Op, COp):
    __props__ = ()

    def c_code(self, node, name, inputs, outputs, sub):
        return f"{outputs[0]} = {inputs[0]} * 2;"


def test_ops_get_c_from_themselves_or_the_registry(clean_registry):
    assert c_op_of(AddOne()) is None
    assert c_op_of(MyCOp()).c_code(None, "n", ["a"], ["b"], {}) == "b = a * 2;"

    class AddOneC(COpAdapter):
        def c_code(self, node, name, inputs, outputs, sub):
            return f"{outputs[0]} = {inputs[0]} + 1;"

    assert register_c_op(AddOne, AddOneC) is AddOneC
    adapter = c_op_of(AddOne())
    assert isinstance(adapter, AddOneC) and adapter.c_code(None, "n", ["a"], ["b"], {}) == \
        "b = a + 1;"
    assert ci.registered_c_ops() == {AddOne: AddOneC}
    with pytest.raises(TypeError, match="class"):
        register_c_op(AddOne(), AddOneC)
    with pytest.raises(TypeError, match="callable"):
        register_c_op(AddOne, 3)
