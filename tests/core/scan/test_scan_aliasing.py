"""A loop keeping only its last rows (`scan_keep_last_row`) stores each recurrent output
in a ring of rows and writes a step's outputs one after another: an output that is
another output's previous value (`lambda a, b: (a + b, a)`) must not be overwritten
before it is copied. Checked on every linker, in DEBUG and FAST_COMPILE (no rings),
against NumPy loops."""

import numpy as np
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import available_linkers

LINKERS = [name for name in ("py", "c", "gpu") if name in available_linkers()]


def everywhere(inputs, outputs, *values):
    """The outputs of `outputs` on each linker (FAST_RUN) and in DEBUG and FAST_COMPILE."""
    results = {linker: wb.function(inputs, outputs, linker=linker)(*values)
               for linker in LINKERS}
    for mode in ("DEBUG", "FAST_COMPILE"):
        results[mode] = wb.function(inputs, outputs, mode=mode)(*values)
    return results


def assert_all(results, expected):
    for where, got in results.items():
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=where)


def fibonacci(a, b, n):
    for _ in range(n):
        a, b = a + b, a
    return a, b


def test_an_output_that_is_another_outputs_previous_value():
    a0, b0 = wt.dscalar("a0"), wt.dscalar("b0")
    (a, b), _ = wb.scan(lambda a, b: (a + b, a), outputs_info=[a0, b0], n_steps=5)
    assert_all(everywhere([a0, b0], [a[-1], b[-1]], 1.0, 0.0), fibonacci(1.0, 0.0, 5))


def test_swapping_two_states():
    a0, b0 = wt.dvector("a0"), wt.dvector("b0")
    (a, b), _ = wb.scan(lambda a, b: (b, a), outputs_info=[a0, b0], n_steps=5)
    one, two = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert_all(everywhere([a0, b0], [a[-1], b[-1]], one, two), (two, one))


def test_a_nit_sot_returning_the_previous_accumulator():
    x, h0 = wt.dmatrix("x"), wt.dvector("h0")
    (acc, prev), _ = wb.scan(lambda r, a: (a + r, a), sequences=x, outputs_info=[h0, None])
    xv, hv = np.arange(8.0).reshape(4, 2), np.array([0.5, -1.0])
    sums = hv + np.cumsum(xv, axis=0)
    expected = (sums[-1], np.vstack([hv, sums[:-1]]))
    assert_all(everywhere([x, h0], [acc[-1], prev], xv, hv), expected)


def test_a_nit_sot_returning_a_view_of_the_previous_state():
    h0 = wt.dvector("h0")
    (h, y), _ = wb.scan(lambda h: (h + 1.0, h[::-1]), outputs_info=[h0, None], n_steps=3)
    hv = np.array([1.0, 2.0, 3.0])
    expected = (hv + 3, np.array([(hv + k)[::-1] for k in range(3)]))
    assert_all(everywhere([h0], [h[-1], y], hv), expected)


def test_reduce_with_two_coupled_states():
    x, h0 = wt.dvector("x"), wt.dscalar("h0")
    (r1, r2), _ = wb.reduce(lambda r, a, b: (a + b * r, a), sequences=x,
                            outputs_info=[h0, h0 * 0])
    xv = np.array([1.0, -2.0, 0.5, 3.0])
    a, b = 2.0, 0.0
    for r in xv:
        a, b = a + b * r, a
    assert_all(everywhere([x, h0], [r1, r2], xv, 2.0), (a, b))


def test_shared_updates_reading_each_other():
    modes = [{"linker": linker} for linker in LINKERS] + [{"mode": "DEBUG"},
                                                          {"mode": "FAST_COMPILE"}]
    for mode in modes:
        a = wb.shared(np.float64(1.0), name="a")
        b = wb.shared(np.float64(0.0), name="b")
        _, updates = wb.scan(lambda a=a, b=b: {a: a + b, b: a}, n_steps=5)
        wb.function([], [], updates=updates, **mode)()
        assert (a.get_value(), b.get_value()) == fibonacci(1.0, 0.0, 5), mode


def test_a_hessian_vector_product_through_a_mit_sot_loop():
    m, w, v, x0 = wt.dmatrix("m"), wt.dvector("w"), wt.dvector("v"), wt.dmatrix("x0")
    ys, _ = wb.scan(lambda r, a, b, w_: wt.tanh(r * w_ + a * b) + wt.sin(b) * 0.1,
                    sequences=m, outputs_info=dict(initial=x0, taps=[-2, -1]),
                    non_sequences=w, go_backwards=True)
    gradient = wb.grad((ys**2).sum(), w)
    hvp = wb.grad((gradient * v).sum(), w)
    rng = np.random.default_rng(3)
    mv, wv, vv, x0v = (rng.normal(size=(5, 3)), rng.normal(size=3), rng.normal(size=3),
                       rng.normal(size=(2, 3)))
    results = everywhere([m, w, x0, v], [hvp], mv, wv, x0v, vv)
    reference = results["FAST_COMPILE"][0]
    assert_all(results, [reference])
    g = wb.function([m, w, x0], gradient, mode="FAST_COMPILE")
    eps = 1e-6  # the product against central differences of the gradient
    fd = (g(mv, wv + eps * vv, x0v) - g(mv, wv - eps * vv, x0v)) / (2 * eps)
    np.testing.assert_allclose(reference, fd, rtol=1e-6, atol=1e-8)
