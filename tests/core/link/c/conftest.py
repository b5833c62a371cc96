"""Fixtures of the C linker's tests: the code paths generated code takes with and
without AVX-512, both run on a machine that has it (WORKBENCH_C_AVX512=off forces the
other), the one without on every machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workbench.core.link.c import tiers
from workbench.core.link.c.compiler import AVX512_ENV, has_compiler, targets_avx512


@pytest.fixture(params=["avx512", "no_avx512"])
def isa(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Compile the test's functions for AVX-512 ("avx512": skipped on a CPU without it)
    or without it ("no_avx512", by WORKBENCH_C_AVX512=off: every machine)."""
    if not has_compiler():
        pytest.skip("needs a C compiler")
    if request.param == "avx512":
        monkeypatch.setenv(AVX512_ENV, "auto")
        if not targets_avx512():
            pytest.skip("this CPU has no AVX-512F (or the C compiler cannot target it): "
                        "the AVX-512 code path cannot run here")
    else:
        monkeypatch.setenv(AVX512_ENV, "off")
        assert not targets_avx512()
    yield request.param
    # the -O3 builds a test started in the background finish under its code path before
    # the variable is set back (a build under another path would not reach its kinds)
    tiers.wait_for_upgrades()
