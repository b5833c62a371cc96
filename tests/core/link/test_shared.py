"""Shared variables: constructors, get_value / set_value copying and filtering."""

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core import dtypes
from workbench.core.compile import SharedVariable, function, shared, shared_constructor
from workbench.core.graph import Generic, Type
from workbench.core.link.shared import TensorSharedVariable, shared_constructors


def test_arrays_give_tensor_shared_variables():
    value = np.arange(6.0).reshape(2, 3)
    w = shared(value, name="W")
    assert isinstance(w, TensorSharedVariable)
    assert isinstance(w, SharedVariable) and isinstance(w, wt.TensorVariable)
    assert w.type == wt.TensorType("float64", shape=(None, None))
    assert w.name == "W" and str(w) == "W"
    fixed = shared(value, shape=(2, 3))
    assert fixed.type.shape == (2, 3)
    assert (w * 2).type.ndim == 2  # usable as a tensor


def test_numbers_give_0d_tensors_of_the_default_dtypes():
    f = shared(1.5)
    assert f.type == wt.TensorType(dtypes.default_float_dtype(), shape=())
    i = shared(3)
    assert i.type.dtype == dtypes.default_int_dtype()
    assert shared(np.float32(2)).type.dtype == "float32"


def test_values_are_copied_unless_borrowed():
    value = np.zeros(3)
    s = shared(value)
    value[0] = 1
    assert s.get_value()[0] == 0
    got = s.get_value()
    got[1] = 5
    assert s.get_value()[1] == 0
    assert s.get_value(borrow=True) is s.get_value(borrow=True)

    b = shared(value, borrow=True)
    assert b.get_value(borrow=True) is value

    new = np.ones(3)
    s.set_value(new)
    new[0] = 7
    assert s.get_value()[0] == 1
    s.set_value(new, borrow=True)
    assert s.get_value(borrow=True) is new


def test_set_value_filters_and_names_the_variable():
    w = shared(np.zeros((2, 2)), name="W")
    with pytest.raises(ValueError, match=r"shared variable 'W'.*TensorType\(float64, \(\?, \?\)\)"):
        w.set_value(np.zeros(3))
    with pytest.raises(TypeError, match="shared variable 'W'"):
        w.set_value(np.zeros((2, 2), dtype=np.complex128))
    w.set_value([[1, 2], [3, 4]])  # lossless conversions are allowed
    assert w.get_value().dtype == np.float64
    strict = shared(np.zeros(2), strict=True)
    with pytest.raises(TypeError):
        strict.set_value([1.0, 2.0])
    w.set_value(np.ones((5, 5)))  # a new shape is fine: the static shape is unknown
    assert w.get_value().shape == (5, 5)


def test_other_objects_give_generic_shared_variables():
    value = {"a": [1, 2]}
    g = shared(value, name="g")
    assert type(g) is SharedVariable and isinstance(g.type, Generic)
    value["a"].append(3)
    assert g.get_value() == {"a": [1, 2]}
    got = g.get_value()
    got["b"] = 1
    assert "b" not in g.get_value()
    with pytest.raises(TypeError, match="unexpected keyword"):
        shared(object(), shape=(2,))


def test_symbolic_values_are_refused():
    with pytest.raises(TypeError, match="not a symbolic Variable"):
        shared(wt.dscalar("x"))


def test_registry_tries_newest_constructor_first():
    class Money:
        def __init__(self, cents):
            self.cents = cents

    class MoneyType(Type):
        def filter(self, x, strict=False, allow_downcast=None):
            if not isinstance(x, Money):
                raise TypeError("expected Money")
            return x

    @shared_constructor
    def money_constructor(value, name=None, strict=False, allow_downcast=None, borrow=False):
        if not isinstance(value, Money):
            return None
        return SharedVariable(MoneyType(), value, strict=strict, name=name)

    try:
        m = shared(Money(5), name="wallet")
        assert isinstance(m.type, MoneyType)
        assert isinstance(shared(np.zeros(2)), TensorSharedVariable)  # falls through
        with pytest.raises(TypeError, match="shared variable 'wallet'"):
            m.set_value(3)
    finally:
        shared_constructor(money_constructor, remove=True)
    assert money_constructor not in shared_constructors
    assert isinstance(shared(Money(1)).type, Generic)


def test_clone_shares_the_container():
    s = shared(np.array(1.0), name="s")
    c = s.clone()
    assert isinstance(c, TensorSharedVariable) and c is not s
    assert c.container is s.container and c.name == "s"
    s.set_value(np.array(2.0))
    assert c.get_value() == 2.0


def test_functions_read_the_current_value():
    s = shared(np.arange(3.0))
    f = function([], s * 1)
    before = f()
    s.set_value(np.arange(3.0) + 1)
    after = f()
    assert not np.array_equal(before, after)
