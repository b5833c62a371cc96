"""dprint and pprint on graphs of the test's own Ops (tensor graphs are tested with
the tensor library)."""

import io

from workbench.core.graph import Apply, Constant, FunctionGraph, Op, Type
from workbench.core.printing import dprint, pprint, register_pprint


class Num(Type):
    def filter(self, x, strict=False, allow_downcast=None):
        return float(x)

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return 7


num = Num()


class Scalar:
    """A stand-in scalar op with the attributes pprint reads."""

    def __init__(self, name, symbol=None):
        self.name, self.symbol = name, symbol

    def __str__(self):
        return self.name


class ElemLike(Op):
    __props__ = ("scalar_op",)

    def __init__(self, name, symbol=None):
        self.scalar_op = Scalar(name, symbol)

    def __str__(self):
        return f"Elemwise{{{self.scalar_op.name}}}"

    def make_node(self, *inputs):
        return Apply(self, list(inputs), [num()])


add, mul, neg, exp = ElemLike("add", "+"), ElemLike("mul", "*"), ElemLike("neg", "-"), ElemLike(
    "exp")


class Split(Op):
    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [num(), num()])


def test_dprint_tree_format_with_ids_and_types():
    x, y = num("x"), num("y")
    z = mul(x, add(y, Constant(num, 2.0)))
    text = dprint(z, file="str", print_type=True)
    assert text.splitlines() == [
        "Elemwise{mul} [id A] <Num>",
        " |x [id B] <Num>",
        " |Elemwise{add} [id C] <Num>",
        " | |y [id D] <Num>",
        " | |Constant{2.0} [id E] <Num>",
    ]


def test_dprint_prints_a_shared_node_once():
    x = num("x")
    shared = exp(x)
    z = add(shared, shared)
    lines = dprint(z, file="str").splitlines()
    assert lines == [
        "Elemwise{add} [id A]",
        " |Elemwise{exp} [id B]",
        " | |x [id C]",
        " |Elemwise{exp} [id B]",
    ]


def test_dprint_depth_names_multiple_outputs_and_streams():
    x = num("x")
    a, b = Split()(x)
    z = add(a, b)
    z.name = "z"
    text = dprint(z, file="str")
    assert text.splitlines()[0] == "Elemwise{add} [id A] 'z'"
    assert "Split.0 [id B]" in text and "Split.1 [id B]" in text
    assert dprint(z, file="str", depth=1) == "Elemwise{add} [id A] 'z'"
    stream = io.StringIO()
    dprint([z, a], file=stream)
    assert stream.getvalue().count("[id A]") == 1


def test_dprint_of_a_function_graph_and_user_source():
    x, y = num("x"), num("y")
    z = mul(x, y)
    fg = FunctionGraph([x, y], [z])
    assert dprint(fg, file="str").startswith("Elemwise{mul} [id A]")
    assert f"# {__file__}:" in dprint(z, file="str", print_source=True)


def test_dprint_of_a_very_deep_graph():
    x = num("x")
    out = x
    for _ in range(5000):
        out = exp(out)
    assert len(dprint(out, file="str").splitlines()) == 5001


def test_pprint_writes_infix_with_minimal_parentheses():
    x, y, w = num("x"), num("y"), num("w")
    assert pprint(mul(exp(x), y)) == "exp(x) * y"
    assert pprint(mul(add(x, y), w)) == "(x + y) * w"
    assert pprint(add(x, mul(y, w))) == "x + y * w"
    assert pprint(neg(add(x, y))) == "-(x + y)"
    named = add(x, y)
    named.name = "s"
    assert pprint(mul(named, named)) == "s * s"


def test_pprint_rules_can_be_registered():
    class Dot(Op):
        __props__ = ()

        def make_node(self, a, b):
            return Apply(self, [a, b], [num()])

    register_pprint(Dot, lambda node, args: (f"{args[0][0]} @ {args[1][0]}", 7))
    x, y = num("x"), num("y")
    assert pprint(Dot()(x, y)) == "x @ y"
    assert pprint(Split()(x)[1]) == "Split(x)[1]"


def test_tensor_graphs_print_in_numpy_notation():
    import workbench.tensor as wt

    x, w, i = wt.dmatrix("x"), wt.dmatrix("W"), wt.lscalar("i")
    assert pprint((x @ w).sum(axis=0)) == "sum(x @ W, axis=0)"
    assert pprint(wt.exp(x[::-1, 1:i]).max()) == "max(exp(x[::-1, 1:i]))"
    assert pprint(x.shape[0] * 2) == "x.shape[0] * 2"
    assert pprint(x.T @ (x + w)) == "x.T @ (x + W)"


def test_pprint_ranks_bitwise_above_comparisons_as_python_does():
    """Python binds & tighter than ^, ^ than |, | than comparisons, and chains `a < b < c`;
    the printed text, evaluated by Python on NumPy arrays, gives the graph's values."""
    import numpy as np
    import workbench.tensor as wt

    import workbench as wb

    a, b, c = wt.lvector("a"), wt.lvector("b"), wt.lvector("c")
    cases = {
        "(a <= b) & (c > a)": (a <= b) & (c > a),
        "a & b <= c": (a & b) <= c,
        "a | b ^ c": a | (b ^ c),
        "(a | b) ^ c": (a | b) ^ c,
        "(a < b) == (b < c)": wt.eq(a < b, b < c),
        "(a < b) < c": wt.lt(a < b, c),
        "~(a < b) | (b != c) & (c >= a)": ~(a < b) | (wt.neq(b, c) & (c >= a)),
    }
    values = {"a": np.array([1, 5, 3, 0]), "b": np.array([2, 4, 3, 7]),
              "c": np.array([3, 6, 1, 0])}
    for text, graph in cases.items():
        assert pprint(graph) == text
        got = wb.function([a, b, c], graph)(values["a"], values["b"], values["c"])
        np.testing.assert_array_equal(got, eval(text, {}, dict(values)), err_msg=text)


def test_seed_001_dprint_of_x_times_two():
    import workbench.tensor as wt

    x = wt.dmatrix("x")
    assert dprint(x * 2.0, file="str").splitlines() == [
        "Elemwise{mul} [id A]",
        " |x [id B]",
        " |DimShuffle{x,x} [id C]",
        " | |TensorConstant{2.0} [id D]",
    ]


def test_pprint_writes_mean_negations_and_one_element_constants_as_a_reader_would():
    import numpy as np
    import workbench.tensor as wt

    x = wt.dmatrix("x")
    assert pprint(wt.mean(x ** 2)) == "mean(x ** 2.0)"
    assert pprint(wt.mean(x, axis=0)) == "mean(x, axis=0)"
    fixed = wt.tensor("float64", shape=(3, None), name="f")
    assert pprint(wt.mean(fixed, axis=0)) == "mean(f, axis=0)"
    assert pprint(wt.sum(x, axis=0) / wt.cast(x.shape[1], "float64")) == (
        "sum(x, axis=0) / x.shape[1]")  # not a mean: another axis's length
    assert pprint(wt.neg(wt.neg(x))) == "-(-x)"
    assert pprint(x + wt.constant(np.ones((1, 1)))) == "x + 1.0"
    assert pprint(x + wt.constant([1.0, 2.0])) == "x + [1., 2.]"


def test_pprint_writes_counts_and_reciprocals_as_in_a_textbook():
    """A length cast to float reads as the length; `1 / a * b` reads as `b / a`."""
    import workbench.tensor as wt

    x, a = wt.dmatrix("x"), wt.dscalar("a")
    assert pprint(wt.cast(x.shape[0] * x.shape[1], "float64")) == "x.shape[0] * x.shape[1]"
    assert pprint(wt.cast(a, "float32")) == "Cast{float32}(a)"  # not a count: kept
    assert pprint(1.0 / wt.cast(x.shape[0], "float64") * (2.0 * x)) == "2.0 * x / x.shape[0]"
    assert pprint(x * (1.0 / (a + 1.0))) == "x / (a + 1.0)"
    assert pprint((x + a) * (1.0 / a)) == "(x + a) / a"
    assert pprint(x * (2.0 / a)) == "x * (2.0 / a)"  # only a reciprocal moves


def test_id_letters_never_equal_a_variables_name():
    """An input called X is never confused with a node labelled [id X]."""
    import re

    import workbench.core.tensor as wt

    inputs = [wt.dscalar(chr(ord("A") + k)) for k in range(1, 26, 2)]  # B, D, F, ...
    total = inputs[0]
    for var in inputs[1:]:
        total = total * var
    labels = set(re.findall(r"\[id ([A-Z]+)\]", dprint(total, file="str")))
    assert len(labels) == 2 * len(inputs) - 1  # every input and every mul has its own
    assert not labels & {v.name for v in inputs}
