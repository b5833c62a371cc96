"""(2) Per-call overhead: `((x+1)*2-3)/4` on a float64 scalar and a length-10 vector,
through the checked call path and with `trust_input` (arguments taken as given)."""

from __future__ import annotations

from typing import Any

import numpy as np

from wb_bench.common import (
    SUBJECT,
    Case,
    Context,
    Row,
    check_close,
    pytensor_modes,
    pytensor_module,
)


def _expr(x: Any) -> Any:
    return ((x + 1) * 2 - 3) / 4


def run(ctx: Context) -> list[Row]:
    import workbench.tensor as wt

    import workbench as wb

    pt = pytensor_module(ctx)
    rows: list[Row] = []
    number = 2000 if ctx.quick else 20000
    shapes = {"scalar": (), "vector[10]": (10,)}
    for label, shape in shapes.items():
        value = np.asarray(np.random.default_rng(1).uniform(-1, 1, shape), dtype="float64")
        expected = _expr(value)
        for trusted in (False, True):
            case = Case(f"call overhead {label}" + (" trust_input" if trusted else ""))
            try:
                x = wt.dscalar("x") if shape == () else wt.dvector("x")
                fn = wb.function([x], _expr(x), linker="c", trust_input=trusted)
                check_close(expected, fn(value), case.name)
                case.add(SUBJECT, lambda fn=fn, value=value: fn(value), number=number)
            except Exception as exc:  # noqa: BLE001
                case.fail(SUBJECT, exc)
            if pt is not None:
                import pytensor.tensor as ptt

                px = ptt.dscalar("x") if shape == () else ptt.dvector("x")
                for name, mode in pytensor_modes(ctx):
                    try:
                        pfn = pt.function([px], _expr(px), mode=mode)
                        pfn.trust_input = trusted
                        check_close(expected, pfn(value), f"{case.name} ({name})")
                        case.add(name, lambda pfn=pfn, value=value: pfn(value), number=number)
                    except Exception as exc:  # noqa: BLE001
                        case.fail(name, exc)
            case.add("numpy eager", lambda value=value: _expr(value), number=number,
                     note="the expression on an ndarray")
            rows += case.measure(ctx)
    return rows
