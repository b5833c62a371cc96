"""Array utilities beyond the catalogue: static shapes, the graphs they compose, the
PyTensor alias, and bad input. Values, gradients, graph files and every linker are
covered by the catalogue (workbench/testing/cases_arrays.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt


def static(*shape: int) -> wt.TensorVariable:
    return wt.TensorType("float64", shape)("s")


def test_static_shapes_follow_from_static_inputs() -> None:
    assert wt.diag(static(3), 1).type.shape == (4, 4)
    assert wt.diagonal(static(3, 5), 1).type.shape == (3,)
    assert wt.diagonal(static(2, 3, 4), 5, 1, 2).type.shape == (2, 0)
    assert wt.tri(3, 4).type.shape == (3, 4)
    assert wt.tril(static(2, 3)).type.shape == (2, 3)
    assert wt.flip(static(2, 3)).type.shape == (2, 3)
    assert wt.roll(static(2, 3), 1, axis=1).type.shape == (2, 3)
    assert wt.linspace(0.0, 1.0, 5).type.shape == (5,)
    assert wt.cross(static(4, 3), static(3)).type.shape == (4, 3)


def test_the_functions_compose_existing_ops() -> None:
    x = wt.dmatrix("x")
    assert wb.pprint(wt.flip(x, 0)) == "x[::-1]"
    assert type(wt.tril(x).owner.op).__name__ == "Elemwise"
    assert type(wt.diagonal(x).owner.op).__name__ == "AdvancedSubtensor"
    assert type(wt.roll(x, 1, axis=0).owner.op).__name__ == "Join"


def test_as_tensor_is_as_tensor_variable() -> None:
    assert wt.as_tensor is wt.as_tensor_variable
    assert wt.as_tensor([1.0, 2.0]).type == wt.TensorType("float64", (2,))


def test_isclose_matches_numpy_on_specials_and_dtypes() -> None:
    a = np.array([np.inf, -np.inf, np.nan, 1.0, 0.0, 1e-9], np.float32)
    b = np.array([np.inf, np.inf, np.nan, 1.0 + 1e-6, 1e-9, 0.0], np.float32)
    x, y = wt.fvector("x"), wt.fvector("y")
    f = wb.function([x, y], [wt.isclose(x, y), wt.isclose(x, y, equal_nan=True),
                             wt.allclose(x, x)])
    close, close_nan, same = f(a, b)
    np.testing.assert_array_equal(close, np.isclose(a, b))
    np.testing.assert_array_equal(close_nan, np.isclose(a, b, equal_nan=True))
    assert not same  # NaN is not close to itself unless equal_nan


def test_round_halves_to_even_at_every_decimal() -> None:
    x = wt.dvector("x")
    values = np.array([0.5, 1.5, 2.5, -0.5, 0.25, 0.35, 125.0, 135.0])
    f = wb.function([x], [wt.round(x), wt.round(x, 1), wt.round(x, -1)])
    for got, decimals in zip(f(values), (0, 1, -1)):
        np.testing.assert_array_equal(got, np.round(values, decimals))


def test_put_along_axis_set_and_inc() -> None:
    a, i = wt.dmatrix("a"), wt.lmatrix("i")
    f = wb.function([a, i], [wt.put_along_axis(a, i, 7.0, 1),
                             wt.put_along_axis(a, i, 1.0, 1, inc=True)])
    put, inc = f(np.zeros((2, 3)), np.array([[0, 0], [2, 1]]))
    np.testing.assert_array_equal(put, [[7, 0, 0], [0, 7, 7]])
    np.testing.assert_array_equal(inc, [[2, 0, 0], [0, 1, 1]])


def _numpy_put(arr: np.ndarray, indices: np.ndarray, values: object, axis: int | None
               ) -> np.ndarray:
    out = arr.copy()
    np.put_along_axis(out, indices, values, axis)
    return out


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_round_to_many_decimals_is_bitwise_numpys(linker: str) -> None:
    """NumPy scales by 10**|decimals| built by repeated multiplication, which differs by an
    ulp from pow from 10**23 on (round(0.35, 300) and round(1e300, -300) were an ulp off)."""
    x, y = wt.dvector("x"), wt.fvector("y")
    values = np.array([0.35, 0.1, 2.675, 123.456, 1e300, 1e-300, 5e-324, 12345.678])
    decimals = (23, 30, 200, 300, 308, -23, -200, -300, -308)
    f = wb.function([x, y], [wt.round(v, d) for d in decimals for v in (x, y)], linker=linker)
    got = f(values, values.astype(np.float32))
    with np.errstate(all="ignore"):
        want = [np.round(v, d) for d in decimals for v in (values, values.astype(np.float32))]
    for g, w, d in zip(got, want, np.repeat(decimals, 2)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w, err_msg=f"decimals={d}")


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_round_of_booleans_and_decimals_past_float_range_as_numpy(linker: str) -> None:
    """Booleans round to float16 (NumPy's rint; they came back boolean); 10**decimals
    past float64's range gives NaN as in NumPy (Python's OverflowError was raised)."""
    flags, x, n = wt.TensorType("bool", (None,))("flags"), wt.dvector("x"), wt.lvector("n")
    f = wb.function([flags, x, n], [wt.round(flags), wt.round(x, 400), wt.round(x, -310),
                                    wt.round(n, -400)], linker=linker)
    b, v, i = np.array([True, False]), np.array([1.5, -2.25]), np.array([15, 0])
    with np.errstate(all="ignore"):
        want = [np.round(b), np.round(v, 400), np.round(v, -310), np.round(i, -400)]
    for got, expected in zip(f(b, v, i), want):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(TypeError, match="boolean x with decimals=1"):
        wt.round(flags, 1)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_put_along_axis_keeps_the_shape_and_casts_values_as_numpy(linker: str) -> None:
    """axis=None writes into arr.flat and keeps arr's shape; values are cast to arr's
    dtype (float64 into float32, floats truncated into integers), as NumPy does."""
    a, f32, i32 = wt.dmatrix("a"), wt.fmatrix("f32"), wt.imatrix("i32")
    flat, i, v = wt.lvector("flat"), wt.lmatrix("i"), wt.dmatrix("v")
    f = wb.function([a, f32, i32, flat, i, v],
                    [wt.put_along_axis(a, flat, 9.0, None),
                     wt.put_along_axis(a, flat, 1.0, None, inc=True),
                     wt.put_along_axis(f32, i, v, 1), wt.put_along_axis(i32, i, v, -1),
                     wt.put_along_axis(i32, i, v, 1, inc=True)], linker=linker)
    values = np.arange(6.0).reshape(2, 3)
    ints = np.array([[-1, 2, 3], [4, -5, 6]], np.int32)
    positions, at, new = np.array([0, 4, -1]), np.array([[0], [2]]), np.array([[1.5], [-2.7]])
    got = f(values, values.astype(np.float32), ints, positions, at, new)
    added = values.copy()
    np.add.at(added.reshape(-1), positions, 1.0)
    ints_added = ints.copy()
    np.add.at(ints_added, (np.arange(2)[:, None], at), new)
    want = [_numpy_put(values, positions, 9.0, None), added,
            _numpy_put(values.astype(np.float32), at, new, 1), _numpy_put(ints, at, new, -1),
            ints_added]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_put_along_axis_refuses_what_numpy_refuses() -> None:
    with pytest.raises(OverflowError, match="put_along_axis: cannot write values 300 into "
                                            "arr of dtype int8"):
        wt.put_along_axis(wt.bmatrix("a"), wt.lmatrix("i"), 300, 1)
    with pytest.raises(IndexError, match="indices must have an integer dtype"):
        wt.put_along_axis(wt.dmatrix("a"), wt.TensorType("bool", (None, None))("i"), 1.0, 1)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_take_reads_boolean_indices_as_0_and_1_as_numpy(linker: str) -> None:
    a, mask, s = wt.dmatrix("a"), wt.TensorType("bool", (None, None))("mask"), wt.dscalar("s")
    f = wb.function([a, mask, s], [wt.take(a, mask), wt.take(a, mask, axis=1, mode="wrap"),
                                   wt.take(s, mask[1:, 0]),
                                   wt.take(s, mask[0], axis=-1, mode="clip")],
                    linker=linker)
    values, flags = np.arange(6.0).reshape(2, 3), np.array([[True, False], [False, True]])
    got = f(values, flags, 5.0)
    want = [np.take(values, flags), np.take(values, flags, axis=1, mode="wrap"),
            np.take(np.array(5.0), flags[1:, 0]),
            np.take(np.array(5.0), flags[0], axis=-1, mode="clip")]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_roll_by_a_symbolic_shift_of_any_sign() -> None:
    x, s = wt.dvector("x"), wt.lscalar("s")
    f = wb.function([x, s], wt.roll(x, s))
    for shift in (-7, -1, 0, 3, 12):
        np.testing.assert_array_equal(f(np.arange(5.0), shift), np.roll(np.arange(5.0), shift))


@pytest.mark.parametrize(("build", "error", "message"), [
    (lambda: wt.diagonal(wt.dvector("x")), ValueError, "at least 2 dimensions"),
    (lambda: wt.diagonal(wt.dmatrix("x"), 0, 1, -1), ValueError, "cannot be the same"),
    (lambda: wt.diagonal(wt.dmatrix("x"), 0.5), TypeError, "offset must be a Python int"),
    (lambda: wt.diag(wt.dtensor3("x")), ValueError, "1-d .* or 2-d"),
    (lambda: wt.tril(wt.dscalar("x")), ValueError, "at least 1 dimension"),
    (lambda: wt.triu(wt.dmatrix("x"), wt.dscalar("k")), TypeError, "k must be an int"),
    (lambda: wt.tri(2.5), TypeError, "N must be an int or a 0-d integer tensor"),
    (lambda: wt.take(wt.dvector("a"), wt.dvector("i")), TypeError, "integer dtype"),
    (lambda: wt.take(wt.dvector("a"), [0], mode="nearest"), ValueError, "mode must be one of"),
    (lambda: wt.take_along_axis(wt.dmatrix("a"), wt.lvector("i"), 1), ValueError,
     "same number of dimensions"),
    (lambda: wt.take_along_axis(wt.dmatrix("a"), wt.lmatrix("i"), None), ValueError,
     "indices must be 1-d"),
    (lambda: wt.roll(wt.dmatrix("a"), (1, 2, 3), (0, 1)), ValueError, "same length"),
    (lambda: wt.roll(wt.dmatrix("a"), 1.5, 0), TypeError, "shift must be an int"),
    (lambda: wt.round(wt.zvector("z")), TypeError, "complex inputs"),
    (lambda: wt.round(wt.dvector("x"), 1.0), TypeError, "decimals must be a Python int"),
    (lambda: wt.linspace(0, 1, -2), ValueError, "num must be a non-negative"),
    (lambda: wt.meshgrid(wt.dvector("x"), indexing="yx"), ValueError, "indexing must be"),
    (lambda: wt.diff(wt.dvector("x"), -1), ValueError, "non-negative int"),
    (lambda: wt.diff(wt.dmatrix("x"), prepend=wt.dvector("p")), ValueError,
     "prepend must be a scalar"),
    (lambda: wt.cross(static(4), static(3)), ValueError, "dimension must be 2 or 3"),
    (lambda: wt.cross(wt.dscalar("a"), static(3)), ValueError, "at least 1 dimension"),
    (lambda: wt.interp(wt.dvector("x"), wt.dmatrix("xp"), wt.dvector("fp")), ValueError,
     "xp must be 1-d"),
    (lambda: wt.interp(1.0, [0.0, 1.0], [0.0, 1.0], period=0), ValueError,
     "period must be a non-zero value"),
    (lambda: wt.interp(1.0, [0.0, 1.0], [0.0, 1.0], period="2"), TypeError,
     "period must be a Python number"),
])
def test_bad_input_names_the_argument(build, error, message) -> None:
    with pytest.raises(error, match=message):
        build()


def test_take_refuses_out_of_range_indices_when_run() -> None:
    a, i = wt.dvector("a"), wt.lvector("i")
    with pytest.raises(IndexError):
        wb.function([a, i], wt.take(a, i), linker="py")(np.ones(3), np.array([3]))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.filterwarnings("ignore:.*2-dimensional vectors are deprecated")
def test_cross_of_lengths_known_only_when_run(linker: str) -> None:
    """2- and 3-vectors whose length is known only when run (a SpecifyShape (?, 3)
    refused the 2-vectors): mixed 2 and 3 as NumPy; two 2-vectors are refused then,
    since the graph's result holds 3 components (static lengths of 2 give NumPy's z)."""
    a, b = wt.dmatrix("a"), wt.dmatrix("b")
    f = wb.function([a, b], wt.cross(a, b), linker=linker)
    g = wb.function([a, b], wt.cross(wt.specify_shape(a, (None, 2)),
                                     wt.specify_shape(b, (None, 2))), linker=linker)
    h = wb.function([a, b], wt.cross(a, wt.specify_shape(b, (None, 2))), linker=linker)
    rng = np.random.default_rng(0)
    for n_a, n_b in ((3, 3), (2, 3), (3, 2)):
        x, y = rng.normal(size=(4, n_a)), rng.normal(size=(4, n_b))
        with pytest.warns(DeprecationWarning) if 2 in (n_a, n_b) else warnings_off():
            want = np.cross(x, y)
        np.testing.assert_allclose(f(x, y), want, rtol=1e-15)
    x, y = rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    with pytest.warns(DeprecationWarning):
        want = np.cross(x, y)
    np.testing.assert_allclose(g(x, y), want, rtol=1e-15)  # static 2s: NumPy's z
    for refusing in (f, h):
        with pytest.raises(ValueError, match="both hold 2-vectors, known only when run"):
            refusing(x, y)
    with pytest.raises(ValueError, match=r"dimension must be 2 or 3\), for a"):
        f(np.ones((2, 4)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"dimension must be 2 or 3\), for b"):
        f(np.ones((2, 3)), np.ones((2, 1)))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_cross_takes_numpys_axis_arguments(linker: str) -> None:
    a, b, c = wt.dtensor3("a"), wt.dmatrix("b"), wt.lmatrix("c")
    f = wb.function([a, b, c], [wt.cross(a, b, axisa=1, axisb=0, axisc=-2),
                                wt.cross(b, c, axis=0), wt.cross(c, b, axisa=0, axisb=0)],
                    linker=linker)
    rng = np.random.default_rng(1)
    x, y, z = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), rng.integers(-5, 5, (3, 4))
    want = [np.cross(x, y, axisa=1, axisb=0, axisc=-2), np.cross(y, z, axis=0),
            np.cross(z, y, axisa=0, axisb=0)]
    for got, expected in zip(f(x, y, z), want):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-15)


def warnings_off() -> Any:
    import contextlib

    return contextlib.nullcontext()


def test_cross_of_2_vectors_warns_and_computes_as_numpy() -> None:
    """NumPy 2 deprecates 2-vectors but computes them: the z component of two, or a
    3-vector when one side is a 3-vector (its 2-vector's third component 0)."""
    a, b, c = static(4, 2), static(2), static(3)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        z = wt.cross(a, b)
    with pytest.warns(DeprecationWarning):
        mixed = wt.cross(b, c)
    assert z.type.shape == (4,) and mixed.type.shape == (3,)
    values = [np.arange(8.0).reshape(4, 2), np.array([3.0, -1.0]), np.array([1.0, 2.0, 5.0])]
    got_z, got_mixed = wb.function([a, b, c], [z, mixed])(*values)
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(got_z, np.cross(values[0], values[1]))
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(got_mixed, np.cross(values[1], values[2]))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_linspace_and_logspace_of_complex_endpoints(linker: str) -> None:
    a, b = wt.zscalar("a"), wt.zmatrix("b")
    f = wb.function([a, b], [wt.linspace(a, b, 4, endpoint=False, axis=1),
                             wt.logspace(a, b, 3)], linker=linker)
    start, stop = np.array(1j), np.array([[2.0 + 0j], [1 - 1j]])
    for got, want in zip(f(start, stop), [np.linspace(start, stop, 4, endpoint=False, axis=1),
                                          np.logspace(start, stop, 3)]):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize(("start", "stop", "base", "axis"), [
    (0.0, 3.0, [2.0, 10.0], 0),
    ([0.0, 1.0], 2.0, [2.0, 10.0], -1),
    ([[0.0], [1.0]], 3.0, [2.0, 3.0, 10.0], 1),
    (1.0, 2.0, [[2.0], [3.0]], 0),
    (1.0, 2.0, [2, 4], -1),
])
def test_logspace_broadcasts_an_array_base_as_numpy(linker: str, start: Any, stop: Any,
                                                     base: Any, axis: int) -> None:
    base = np.array(base)
    b = wt.TensorType(str(base.dtype), (None,) * base.ndim)("b")
    f = wb.function([b], wt.logspace(start, stop, 5, base=b, axis=axis), linker=linker)
    got, want = f(base), np.logspace(start, stop, 5, base=base, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_interp_with_period_wraps_unsorted_knots() -> None:
    x, xp, fp = wt.dvector("x"), wt.dvector("xp"), wt.dvector("fp")
    f = wb.function([x, xp, fp], wt.interp(x, xp, fp, period=360))
    points = np.array([-180.0, -5.0, 0.0, 5.0, 175.0, 181.0, 360.0, 725.0])
    knots, values = np.array([190.0, -190.0, 350.0, -350.0]), np.array([5.0, 10.0, 3.0, 4.0])
    np.testing.assert_allclose(f(points, knots, values),
                               np.interp(points, knots, values, period=360), rtol=1e-15)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_interp_of_complex_values_interpolates_both_parts(linker: str) -> None:
    """A complex fp gives complex128 (it lost its imaginary part), with complex left and
    right, periodic knots, and infinite parts kept where NumPy keeps them."""
    x, xp, fp = wt.dvector("x"), wt.dvector("xp"), wt.zvector("fp")
    f = wb.function([x, xp, fp], [wt.interp(x, xp, fp), wt.interp(x, xp, fp, 5j, 2 - 1j),
                                  wt.interp(x, xp, fp, period=2.5)], linker=linker)
    points, knots = np.array([-1.0, 0.0, 0.5, 1.0, 1.5, 3.0, np.nan]), np.array([0.0, 1, 2])
    for values in (np.array([1 + 1j, 2 - 1j, 3j]), np.array([0, np.inf + 1j, 2 - 2j])):
        got = f(points, knots, values)
        want = [np.interp(points, knots, values), np.interp(points, knots, values, 5j, 2 - 1j),
                np.interp(points, knots, values, period=2.5)]
        for g, w in zip(got, want):
            assert g.dtype == np.complex128
            np.testing.assert_allclose(g, w, rtol=1e-15)


def test_interp_of_complex_values_is_differentiable_in_x_and_xp() -> None:
    fp = np.array([1 + 1j, 2 - 1j, 3j, -1 + 0.5j])

    def parts(x: wt.TensorVariable, xp: wt.TensorVariable) -> wt.TensorVariable:
        y = wt.interp(x, xp, fp)
        return wt.sum(wt.real(y) * 2.0 + wt.imag(y) * 3.0)

    wb.verify_grad(parts, [np.array([-0.7, 0.3, 1.2, 2.4, 3.5]), np.array([0.0, 1, 2, 3])],
                   rng=np.random.default_rng(0))


def test_interp_refuses_what_numpy_refuses() -> None:
    x, xp = wt.dvector("x"), wt.dvector("xp")
    with pytest.raises(TypeError, match="left must be a real number when fp is real"):
        wt.interp(x, xp, wt.dvector("fp"), left=1j)
    periodic = wt.interp(x, xp, wt.dvector("fp"), left=1j, period=3.0)  # ignored, as NumPy
    assert periodic.type.dtype == "float64"
    with pytest.raises(TypeError, match="xp must be real"):
        wt.interp(x, wt.zvector("xp"), wt.zvector("fp"))
    with pytest.raises(ValueError, match="not of the same length"):
        wt.interp(x, wt.TensorType("float64", (3,))("xp"), wt.TensorType("float64", (2,))())
    with pytest.raises(ValueError, match="xp is empty"):
        wt.interp(x, np.zeros(0), np.zeros(0))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_interp_refuses_empty_or_mismatched_knots_when_run(linker: str) -> None:
    x, xp, fp = wt.dvector("x"), wt.dvector("xp"), wt.dvector("fp")
    f = wb.function([x, xp, fp], wt.interp(x, xp, fp), linker=linker)
    with pytest.raises(ValueError, match="array of sample points xp is empty"):
        f(np.ones(2), np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match="fp and xp are not of the same length"):
        f(np.ones(2), np.arange(3.0), np.arange(2.0))
    np.testing.assert_array_equal(f(np.ones(2), np.arange(3.0), np.arange(3.0)), [1.0, 1.0])


def test_argwhere_of_a_scalar_has_no_columns() -> None:
    x = wt.dscalar("x")
    f = wb.function([x], wt.argwhere(x))
    assert f(2.0).shape == (1, 0) and f(0.0).shape == (0, 0)


def test_methods_users_type_by_habit() -> None:
    x = wt.dmatrix("x")
    values = np.array([[3.0, -1.25, 2.0], [0.0, 5.5, -4.0]])
    f = wb.function([x], [x.sort(), x.argsort(axis=0), x.diagonal(1), x.take([2, 0], axis=1),
                          *x.nonzero(), x.round(1), x[0].sort().searchsorted(x)])
    got = f(values)
    want = [np.sort(values), np.argsort(values, axis=0, kind="stable"), values.diagonal(1),
            values.take([2, 0], axis=1), *values.nonzero(), values.round(1),
            np.sort(values[0]).searchsorted(values)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_an_index_out_of_range_names_the_axis_on_every_linker(linker: str) -> None:
    """NumPy's message, naming x's axis: the gpu linker passed on torch's, which counts the
    index array's dimensions ("for dimension 0" for take along axis 1)."""
    a, i = wt.dmatrix("a"), wt.lvector("i")
    f = wb.function([a, i], wt.take(a, i, axis=1), linker=linker)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 4"):
        f(np.ones((3, 4)), np.array([0, 5]))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_python_numbers_are_weak_in_isclose_and_linspace(linker: str) -> None:
    """NEP 50, as NumPy 2: isclose(float32 x, 0.1) compares in float32 (0.1 rounded to
    float32 is close to itself; in float64 it was not), linspace(float32 x, 0.7) is
    float32 (it was float64); a NumPy float64 scalar stays strong."""
    x = wt.fvector("x")
    value = np.array([0.1, 0.5], np.float32)
    outs = [wt.isclose(x, 0.1, rtol=0, atol=0), wt.isclose(x, np.float64(0.1), rtol=0, atol=0),
            wt.allclose(x[:1], 0.1, rtol=0, atol=0), wt.linspace(x[0], 0.7, 4),
            wt.linspace(x[0], 2, 3, endpoint=False)]
    got = wb.function([x], outs, linker=linker)(value)
    want = [np.isclose(value, 0.1, rtol=0, atol=0),
            np.isclose(value, np.float64(0.1), rtol=0, atol=0),
            np.allclose(value[:1], 0.1, rtol=0, atol=0), np.linspace(value[0], 0.7, 4),
            np.linspace(value[0], 2, 3, endpoint=False)]
    for g, w in zip(got, want):
        assert g.dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
