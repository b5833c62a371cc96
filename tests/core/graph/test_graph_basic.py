"""The graph core on a tiny Type and Ops of the test's own (no tensors needed)."""

import pytest

from workbench.core.graph import (
    Apply,
    Constant,
    FunctionGraph,
    Op,
    Type,
    ancestors,
    clone_replace,
    graph_inputs,
    io_toposort,
    variables_between,
)


class DoubleType(Type):
    """Seed 000's DoubleType: values are Python floats."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict:
            if isinstance(x, float):
                return x
            raise TypeError("expected a float!")
        if allow_downcast:
            return float(x)
        x_float = float(x)
        if x_float == x:
            return x_float
        raise TypeError(f"The double type cannot accurately represent value {x}")

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (abs(x) + abs(y)) < tolerance

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


double = DoubleType()


class BinOp(Op):
    __props__ = ("name_",)

    def __init__(self, name_, fn):
        self.name_ = name_
        self.fn = fn

    def make_node(self, a, b):
        return Apply(self, [a, b], [double()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.fn(*inputs)


add = BinOp("add", lambda a, b: a + b)
mul = BinOp("mul", lambda a, b: a * b)


def test_variables_point_to_their_apply():
    x, y = double("x"), double("y")
    z = add(x, y)
    assert z.owner.op is add
    assert z.owner.inputs == [x, y]
    assert z.owner.outputs == [z]
    assert z.index == 0
    assert x.owner is None


def test_variables_remember_the_users_line():
    x = double("x")
    z = add(x, x)  # this line
    assert z.tag.source.filename == __file__
    assert z.source.lineno == test_variables_remember_the_users_line.__code__.co_firstlineno + 2


def test_props_give_equality_hash_and_str():
    assert BinOp("add", None) == add
    assert hash(BinOp("add", None)) == hash(add)
    assert BinOp("mul", None) != add
    assert str(add) == "BinOp{name_=add}"


def test_traversal():
    x, y = double("x"), double("y")
    c = Constant(double, 2.0)
    z = mul(add(x, y), c)
    assert set(graph_inputs([z])) == {x, y, c}
    assert z in set(ancestors([z]))
    order = io_toposort([x, y], [z])
    assert [n.op for n in order] == [add, mul]
    assert set(variables_between([x, y], [z])) >= {x, y, z}


def test_toposort_of_a_deep_chain_does_not_recurse():
    x = double("x")
    out = x
    for _ in range(20000):
        out = add(out, x)
    assert len(io_toposort([x], [out])) == 20000


def test_constants_with_equal_values_share_a_signature():
    a, b = Constant(double, 2.0), Constant(double, 2)
    assert a.signature() == b.signature()
    assert a.equals(b)
    assert not a.equals(Constant(double, 3.0))


def test_clone_replace_substitutes_and_leaves_the_original_alone():
    x, y = double("x"), double("y")
    z = add(mul(x, x), y)
    w = clone_replace(z, {y: x})
    assert w.owner.inputs[1] is x
    assert z.owner.inputs[1] is y


def test_function_graph_clients_replace_and_integrity():
    x, y = double("x"), double("y")
    z = add(mul(x, y), x)
    fg = FunctionGraph([x, y], [z])
    fx, fy = fg.inputs
    assert fx is not x  # cloned by default
    assert len(fg.apply_nodes) == 2
    assert len(fg.clients[fx]) == 2
    product = fg.outputs[0].owner.inputs[0]
    fg.replace(product, fy)
    fg.check_integrity()
    assert len(fg.apply_nodes) == 1  # the mul was pruned
    assert fg.clients[fy] == [(fg.outputs[0].owner, 0)]


def test_function_graph_refuses_missing_inputs():
    from workbench.core.graph import MissingInputError

    x, y = double("x"), double("y")
    with pytest.raises(MissingInputError, match="y"):
        FunctionGraph([x], [add(x, y)])


def test_history_reverts_to_a_checkpoint():
    from workbench.core.graph import History

    x, y = double("x"), double("y")
    fg = FunctionGraph([x, y], [add(mul(x, y), x)], features=[History()])
    before = [str(n) for n in fg.toposort()]
    mark = fg.checkpoint()
    fg.replace(fg.outputs[0].owner.inputs[0], fg.inputs[1])
    assert len(fg.apply_nodes) == 1
    fg.revert(mark)
    fg.check_integrity()
    assert [str(n) for n in fg.toposort()] == before


def test_features_receive_callbacks():
    from workbench.core.graph import Feature

    events = []

    class Recorder(Feature):
        def on_import(self, fgraph, node, reason):
            events.append(("import", node.op.name_, reason))

        def on_prune(self, fgraph, node, reason):
            events.append(("prune", node.op.name_, reason))

        def on_change_input(self, fgraph, node, i, old, new, reason):
            events.append(("change", i, reason))

    x, y = double("x"), double("y")
    fg = FunctionGraph([x, y], [add(mul(x, y), x)], features=[Recorder()])
    assert [e[:2] for e in events] == [("import", "mul"), ("import", "add")]
    events.clear()
    fg.replace(fg.outputs[0].owner.inputs[0], fg.inputs[1], reason="test")
    assert ("change", 0, "test") in events
    assert ("prune", "mul", "test") in events


def test_replace_checks_types():
    class OtherType(DoubleType):
        def __eq__(self, other):
            return type(self) is type(other)

        def __hash__(self):
            return 1

        def is_super(self, other):
            return False

    x, y = double("x"), double("y")
    fg = FunctionGraph([x, y], [add(x, y)])
    with pytest.raises(TypeError, match="cannot replace"):
        fg.replace(fg.outputs[0], OtherType()("z"))


def test_replace_validate_reverts_on_failure():
    from workbench.core.graph import Feature, ReplaceValidate

    class RefuseAll(Feature):
        def validate(self, fgraph):
            raise ValueError("no")

    x, y = double("x"), double("y")
    fg = FunctionGraph([x, y], [add(mul(x, y), x)], features=[ReplaceValidate()])
    fg.attach_feature(RefuseAll())
    with pytest.raises(ValueError):
        fg.replace_validate(fg.outputs[0].owner.inputs[0], fg.inputs[1])
    assert len(fg.apply_nodes) == 2
    fg.check_integrity()
