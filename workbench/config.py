"""Settings, each readable from an environment variable at import time.

`workbench.config.linker = "py"` or `WORKBENCH_LINKER=py` (the linker of a function that
names none, nor its mode), `config.mode` or `WORKBENCH_MODE` (the mode of a function that
names none); an argument given to `function` always wins. Dtype-related settings
are kept by `workbench.core.dtypes` and only mirrored here so there is one
place to look for every knob.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from workbench.core import dtypes
from workbench.core.graph import utils as graph_utils
from workbench.core.link import settings as link_settings


class Config:
    """The process-wide settings. Use `config.change(name=value)` for a temporary change."""

    def __init__(self) -> None:
        self._linker = "auto"
        self._mode = "FAST_RUN"
        self.linker = os.environ.get("WORKBENCH_LINKER", "auto")
        self.mode = os.environ.get("WORKBENCH_MODE", "FAST_RUN")
        if "WORKBENCH_FLOATX" in os.environ:
            self.floatX = os.environ["WORKBENCH_FLOATX"]
        if "WORKBENCH_CASTING_MODE" in os.environ:
            self.casting_mode = os.environ["WORKBENCH_CASTING_MODE"] or None

    @property
    def linker(self) -> str:
        """The linker `function` uses when neither it nor its mode names one: 'auto' (the
        fastest available) or a backend's name ('py', 'c', 'gpu', or one registered with
        `register_backend`; an unknown name is refused when a function is compiled)."""
        return self._linker

    @linker.setter
    def linker(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError(f"config.linker must be 'auto' or a linker name, got {value!r}")
        self._linker = value

    @property
    def mode(self) -> str:
        """The mode `function` uses when none is given (FAST_RUN unless set; an unknown
        name is refused when a function is compiled)."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError(f"config.mode must be a mode name, got {value!r}")
        self._mode = value

    @property
    def cache_dir(self) -> Any:
        """The directory of the on-disk caches (kept by workbench.core.link.settings)."""
        return link_settings.cache_dir

    @cache_dir.setter
    def cache_dir(self, value: Any) -> None:
        link_settings.cache_dir = value

    @property
    def device(self) -> Any:
        """The GPU linker's device (kept by workbench.core.link.settings)."""
        return link_settings.device

    @device.setter
    def device(self, value: Any) -> None:
        link_settings.device = value

    @property
    def floatX(self) -> str:  # noqa: N802 (the traditional name)
        """The default float dtype (same as dtypes.default_float_dtype())."""
        return str(dtypes.default_float_dtype())

    @floatX.setter
    def floatX(self, value: str) -> None:  # noqa: N802
        dtypes.set_default_float_dtype(value)

    @property
    def intX(self) -> str:  # noqa: N802
        return str(dtypes.default_int_dtype())

    @intX.setter
    def intX(self, value: str) -> None:  # noqa: N802
        dtypes.set_default_int_dtype(value)

    @property
    def casting_mode(self) -> str | None:
        """None, 'upcast', 'downcast', 'crosscast' or 'cast' (seed 004)."""
        return dtypes.casting_mode()

    @casting_mode.setter
    def casting_mode(self, value: str | None) -> None:
        dtypes.set_casting_mode(value)

    @property
    def blas_threads(self) -> int | None:
        """The most threads a BLAS call or row kernel (softmax, logsumexp) of compiled (C
        linker) code may use, read at every call; None (the default, or
        `WORKBENCH_NUM_THREADS` unset or 0): the BLAS's own setting. Each call may use
        fewer: small products and inputs, and BLAS calls on a busy machine, get one thread
        (see workbench.core.link.c.blas_threads)."""
        from workbench.core.link.c import blas_threads

        return blas_threads.max_threads()

    @blas_threads.setter
    def blas_threads(self, value: int | None) -> None:
        from workbench.core.link.c import blas_threads

        blas_threads.set_max_threads(value)

    @property
    def trace_user_code(self) -> bool:
        """Record the user's file:line on every Variable (for error messages)."""
        return graph_utils.capture_source_locations

    @trace_user_code.setter
    def trace_user_code(self, value: bool) -> None:
        graph_utils.capture_source_locations = bool(value)

    @contextlib.contextmanager
    def change(self, **settings: Any) -> Iterator[Config]:
        """Temporarily change settings: `with config.change(floatX="float32"): ...`."""
        old = {name: getattr(self, name) for name in settings}
        try:
            for name, value in settings.items():
                setattr(self, name, value)
            yield self
        finally:
            for name, value in old.items():
                setattr(self, name, value)

    def __repr__(self) -> str:
        names = ("linker", "mode", "floatX", "intX", "casting_mode", "cache_dir", "device",
                 "blas_threads", "trace_user_code")
        return "Config(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"


config = Config()
