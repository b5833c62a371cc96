"""Catalogue cases of loops (`scan`): sequences, recurrent outputs with one or two taps,
outputs not fed back, non-sequences, going backwards, a while-loop, a zero-length loop.

Each NumPy reference is the plain Python loop the scan stands for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]


def _scan() -> Any:
    from workbench.core.scan import scan

    return scan


def _wt() -> Any:
    import workbench.core.tensor as wt

    return wt


def _cumsum() -> Case:
    def build(x: Any, s0: Any) -> Any:
        return _scan()(lambda xt, s: s + xt, sequences=x, outputs_info=s0)[0]

    return Case("cumulative_sum", build, lambda x, s0: s0 + np.cumsum(x, axis=0),
                (Arg((5, 3)), Arg((3,))))


def _rnn() -> Case:
    def build(x: Any, h0: Any, w: Any, u: Any) -> Any:
        wt = _wt()
        step = lambda xt, h, w_, u_: wt.tanh(wt.dot(xt, w_) + wt.dot(h, u_))  # noqa: E731
        return _scan()(step, sequences=x, outputs_info=h0, non_sequences=[w, u])[0]

    def reference(x: Any, h0: Any, w: Any, u: Any) -> Any:
        h, out = h0, []
        for xt in x:
            h = np.tanh(xt @ w + h @ u)
            out.append(h)
        return np.array(out, dtype=x.dtype)

    return Case("rnn", build, reference,
                (Arg((4, 2, 3)), Arg((2, 3)), Arg((3, 3), low=-0.5, high=0.5),
                 Arg((3, 3), low=-0.5, high=0.5)))


def _two_taps_and_a_mapped_output() -> Case:
    def build(x: Any, start: Any) -> Any:
        outs, _ = _scan()(lambda xt, a, b: (a * 0.5 + b * xt, b * xt),
                          sequences=x, outputs_info=[dict(initial=start, taps=[-2, -1]), None])
        return outs

    def reference(x: Any, start: Any) -> Any:
        rows, mapped = [start[0], start[1]], []
        for xt in x:
            mapped.append(rows[-1] * xt)
            rows.append(rows[-2] * 0.5 + rows[-1] * xt)
        return [np.array(rows[2:], dtype=x.dtype), np.array(mapped, dtype=x.dtype)]

    return Case("two_taps_and_a_mapped_output", build, reference, (Arg((5,)), Arg((2,))))


def _backwards_with_sequence_taps() -> Case:
    def build(x: Any) -> Any:
        return _scan()(lambda before, now: now - before, sequences=dict(input=x, taps=[-1, 0]),
                       go_backwards=True)[0]

    def reference(x: Any) -> Any:
        return (x[1:] - x[:-1])[::-1]

    return Case("backwards_with_sequence_taps", build, reference, (Arg((6, 2)),))


def _while_loop() -> Case:
    def build(a: Any) -> Any:
        from workbench.core.scan import until

        wt = _wt()
        return _scan()(lambda y: (y * 1.5, until(wt.abs(y * 1.5).sum() > 20.0)), outputs_info=a,
                       n_steps=50)[0]

    def reference(a: Any) -> Any:
        y, out = a, []
        for _ in range(50):
            y = y * 1.5
            out.append(y)
            if np.abs(y).sum() > 20.0:
                break
        return np.array(out, dtype=a.dtype)

    return Case("while_loop", build, reference, (Arg((3,), low=0.5, high=2.0),),
                grad="the number of steps depends on the values (checked in tests/core/scan)")


def _zero_steps() -> Case:
    def build(x0: Any) -> Any:
        return _scan()(lambda h: h * 2.0, outputs_info=x0, n_steps=0)[0]

    return Case("zero_steps", build, lambda x0: np.zeros((0, *x0.shape), dtype=x0.dtype),
                (Arg((3,)),), grad="a loop of no step has a zero gradient (tested apart)")


CASES: list[Case] = [
    _cumsum(),
    _rnn(),
    _two_taps_and_a_mapped_output(),
    _backwards_with_sequence_taps(),
    _while_loop(),
    _zero_steps(),
]
