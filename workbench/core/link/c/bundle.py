"""Node kinds compiled together: one translation unit (a "bundle") for many kinds.

A small generated module costs about 0.07 s of compiler time before any of its own
code (the driver, cc1 loading the precompiled prelude, the assembler, the linker), so
a graph with 36 new node kinds paid that 36 times. Here the missing kinds of a graph
compile as a few bundles, about one per core: each kind's function under a C name of
its own, every support block once (under a guard named by the hash of its text), one
capsule per kind.

The cache still works per kind. A kind's key is the cache key of the module it would
be alone (`codegen.node_source`); an alias under that key names the bundle and the
capsule holding the kind, so a later graph reuses every kind it has seen, whichever
bundle compiled it.

A bundle that does not compile (support code of two kinds clashing, a macro defined
twice with different text) is not an error: its kinds compile one module each, which
also gives a kind with broken C its own error message.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.link.c import blas_lib, compile_progress, tiers
from workbench.core.link.c import compiler as cc
from workbench.core.link.c.cache import ModuleCache
from workbench.core.link.c.codegen import (
    MODULE_HEADERS,
    NodeParts,
    NodeSource,
    module_init,
    node_parts,
)
from workbench.core.link.c.cstring import include_guarded

__all__ = ["BundleSource", "Kind", "KindStats", "bundle_source", "kind_key", "module_file",
           "node_functions", "plan_bundles"]

BUNDLE_MODULE = "wbbundle"
#: Bumped when the layout of bundles changes (it is part of their version).
BUNDLE_FORMAT = 1
#: A failing bundle falls back to one module per kind: bound what that costs.
MAX_KINDS_PER_BUNDLE = 48
#: The compiler's message for a macro defined again with other text (gcc: 'warning: "X"
#: redefined', clang: "'X' macro redefined"): alone each kind was right; together, code
#: after the second definition that expects the first would silently change.
REJECTED_WARNINGS = (r"""warning: ["'][A-Za-z_]\w*["'] (macro )?redefined""",)


#: Flags that only define what C leaves undefined (signed overflow wraps around): a
#: bundle gets them when one of its kinds asks, so kinds differing in them share one.
DEFINING_FLAGS = frozenset({"-fwrapv"})


def _shareable(flag: str) -> bool:
    """Kinds differing in this flag may still share a bundle: linker flags, and
    DEFINING_FLAGS."""
    return flag.startswith(("-Wl,", "-L", "-l")) or flag in DEFINING_FLAGS


@dataclass
class Kind:
    """One node kind: a node of that kind, its one-module source and that module's
    cache key (the kind's identity on disk)."""

    node: Apply
    source: NodeSource
    key: str

    @property
    def tag(self) -> str:
        """The kind's C name suffix in bundles (from its key: the same in every bundle)."""
        return self.key[:20]

    @property
    def group(self) -> tuple[Any, ...]:
        """Kinds with equal groups may share a translation unit: the same compile flags
        and header directories, and both versioned (persisted) or both not."""
        flags = tuple(f for f in self.source.extra_flags if not _shareable(f))
        return (bool(self.source.version), flags, tuple(self.source.include_dirs))

    @property
    def cost(self) -> int:
        """A rough measure of its compile time (the length of its C)."""
        return len(self.source.source)

    @functools.cached_property
    def parts(self) -> NodeParts:
        """Its C pieces under the names it has in bundles."""
        return node_parts(self.node, name=f"n{self.tag}", fn_name=f"wb_node_run_{self.tag}")

    def cost_beside(self, blocks: set[str]) -> int:
        """Its cost in a bundle already holding the support `blocks` (compiled once per
        bundle): its function and the blocks it adds."""
        return len(self.parts.function) + sum(len(b) for b in _blocks(self.parts)
                                              if b not in blocks)


def _blocks(parts: NodeParts) -> list[str]:
    """The support blocks of a kind's C (each compiled once per bundle)."""
    return [b for b in (*parts.support, parts.apply_support) if b]


@dataclass
class BundleSource(NodeSource):
    """The module of a bundle; `capsules[k]` is the attribute holding the function of
    `kinds[k]`."""

    kinds: list[Kind] = field(default_factory=list)
    capsules: list[str] = field(default_factory=list)


@dataclass
class KindStats:
    """Where the node kinds of one `node_functions` call came from."""

    compiled: int = 0
    disk_hits: int = 0
    memory_hits: int = 0
    modules_built: int = 0
    bundle_fallbacks: int = 0


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def bundle_source(kinds: Sequence[Kind], quick: bool = False) -> BundleSource:
    """One module holding the functions of `kinds` (which share a group); `quick`: the
    quick build's source, each kind's capsule a trampoline (tiers.py)."""
    headers = list(MODULE_HEADERS)
    blocks: list[str] = []
    functions: list[str] = []
    init_code: list[str] = []
    capsules: list[tuple[str, str]] = []
    flags: list[str] = []
    libraries: list[str] = []
    lib_dirs: list[str] = []
    include_dirs: list[str] = []
    versions: list[Any] = []
    for kind in kinds:
        fn_name = f"wb_node_run_{kind.tag}"
        parts = kind.parts
        headers += parts.headers
        blocks += _blocks(parts)
        functions.append(parts.function)
        init_code += parts.init_code
        capsules.append((f"fn_{kind.tag}", fn_name))
        flags += parts.extra_flags
        libraries += parts.libraries
        lib_dirs += parts.lib_dirs
        include_dirs += parts.include_dirs
        versions.append(parts.version)
    all_capsules: list[tuple[str, ...]] = list(capsules)
    if quick:
        code, all_capsules = tiers.trampolines([k.tag for k in kinds])
        functions.append(code)
    lines = [f"/* generated by workbench: the functions of {len(kinds)} node kind(s) */",
             *_unique(headers), *[include_guarded(b) for b in _unique(blocks)], *functions,
             module_init(BUNDLE_MODULE, _unique(init_code), all_capsules)]
    version: tuple[Any, ...] = () if not all(versions) else ("bundle", BUNDLE_FORMAT)
    return BundleSource("\n".join(lines) + "\n", BUNDLE_MODULE, version,
                        extra_flags=_unique(flags), libraries=_unique(libraries),
                        lib_dirs=_unique(lib_dirs), include_dirs=_unique(include_dirs),
                        kinds=list(kinds), capsules=[attr for attr, _ in capsules])


def plan_bundles(kinds: Sequence[Kind], workers: int) -> list[list[Kind]]:
    """Split `kinds` into bundles: kinds of one group only, at most
    MAX_KINDS_PER_BUNDLE each, about `workers` bundles in all with balanced costs.
    Deterministic: the same kinds give the same bundles (and so the same cache keys)."""
    groups: dict[tuple[Any, ...], list[Kind]] = {}
    for kind in sorted(kinds, key=lambda k: k.tag):
        groups.setdefault(kind.group, []).append(kind)
    total = sum(k.cost for k in kinds) or 1
    bundles: list[list[Kind]] = []
    for group in groups.values():
        share = round(workers * sum(k.cost for k in group) / total)
        n = max(1, min(len(group), share), math.ceil(len(group) / MAX_KINDS_PER_BUNDLE))
        bins: list[list[Kind]] = [[] for _ in range(n)]
        loads = [0] * n
        held: list[set[str]] = [set() for _ in range(n)]
        for kind in sorted(group, key=lambda k: (-k.cost, k.tag)):
            # the bundle where it ends lightest: support it shares with a bundle's kinds
            # (the row kernels of softmax and log-softmax) is compiled there once
            i = min(range(n), key=lambda b: (len(bins[b]) >= MAX_KINDS_PER_BUNDLE,
                                             loads[b] + kind.cost_beside(held[b]), b))
            bins[i].append(kind)
            loads[i] += kind.cost_beside(held[i])
            held[i].update(_blocks(kind.parts))
        bundles += [sorted(b, key=lambda k: k.tag) for b in bins if b]
    return bundles


def _node_parts() -> tuple[str, str]:
    """The key parts of every node kind: its role and the BLAS library compiled code
    links now (its file, or "none"). A bundle links the BLAS of the WORKBENCH_BLAS
    choice it was built under, so a kind that calls no BLAS itself, keyed alike under
    two choices, loaded another choice's bundle and with it a second OpenBLAS and
    thread pool (two pools on 2 cores: NumPy and compiled calls 37% slower)."""
    try:
        lib = blas_lib.find_blas()
    except (ValueError, blas_lib.BlasNotFoundError):
        lib = None
    return ("node", "none" if lib is None else lib.path)


def kind_key(cache: ModuleCache, src: NodeSource) -> str:
    """The cache key of a node kind: that of its one-module source."""
    return cache.key(_node_parts(), src.source, src.module_name, **src.build_args())


def module_file(cache: ModuleCache, src: NodeSource) -> str | None:
    """The file of the compiled module that holds the kind of `src` (a bundle, or its
    own module), or None when it is not on disk. The -O3 builds still running in the
    background are waited for (tiers.py): the file asked for is theirs."""
    tiers.wait_for_upgrades()
    alias = _alias(cache, kind_key(cache, src))
    if alias is None:
        return None
    path = cache.entry_dir(alias["entry"]) / f"{alias['module']}{cc.extension_suffix()}"
    return str(path) if path.is_file() else None


def _alias(cache: ModuleCache, key: str) -> dict[str, str] | None:
    """The alias of kind `key` on disk when it is sound and names that kind's own
    function (a bundle's `fn_<tag>`, or `fn` of the kind's own module), else None: a
    damaged or swapped alias must never call another kind's function."""
    alias = cache.read_alias(key)
    if alias is None or alias.get("kind") != key:
        return None
    entry, module, capsule = alias.get("entry"), alias.get("module"), alias.get("capsule")
    if not (isinstance(entry, str) and isinstance(module, str) and isinstance(capsule, str)
            and module.isidentifier()):
        return None
    own = (module == BUNDLE_MODULE and capsule == f"fn_{key[:20]}") or \
        (entry == key and capsule == "fn")
    return {"entry": entry, "module": module, "capsule": capsule} if own else None


def _from_alias(cache: ModuleCache, key: str) -> Any:
    """The function of kind `key` through its alias on disk, or None."""
    alias = _alias(cache, key)
    if alias is None:
        return None
    try:
        module = cache.load_entry(alias["entry"], alias["module"])
    except (ValueError, ImportError, OSError):
        return None
    return None if module is None else getattr(module, alias["capsule"], None)


#: Called as `listener(done, total)` when a graph's missing kinds start compiling
#: (done = 0) and each time one of them is compiled: the CLI's progress bar. With GCC
#: each kind counts when the compiler has finished its function (compile_progress.py);
#: otherwise, and for a bundle another process built, its kinds count when it is done.
#: Listeners may be called from the compiling threads.
progress_listeners: list[Callable[[int, int], None]] = []


def _map(fn: Any, items: list[Any], workers: int) -> list[Any]:
    """`fn` over `items`, in parallel threads when there are several; each result is
    the value or the exception raised."""
    def safe(item: Any) -> Any:
        try:
            return fn(item)
        except Exception as exc:  # noqa: BLE001 - the caller decides per item
            return exc

    if len(items) <= 1 or workers <= 1:
        return [safe(item) for item in items]
    # Plain threads, not a ThreadPoolExecutor: the -O3 builds (tiers.py) may call this
    # from a background thread after the main thread has finished, and once the
    # interpreter starts shutting down an executor refuses new work ("cannot schedule
    # new futures after interpreter shutdown"), which lost those builds' cache entries.
    results: list[Any] = [None] * len(items)
    todo = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            results[i] = safe(items[i])

    threads = [threading.Thread(target=work, name="workbench-compile")
               for _ in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def default_workers() -> int:
    """How many compilers run at once: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def node_functions(items: Sequence[tuple[Apply, NodeSource]], cache: ModuleCache,
                   workers: int | None = None) -> tuple[list[Any], KindStats]:
    """The node function capsule of every (node, source) of `items`: from memory, from
    the disk cache through the kinds' aliases, else compiled in bundles (in parallel,
    `workers` compilers: default_workers()). Compile errors propagate, naming the
    failing kind's module."""
    workers = workers or default_workers()
    stats = KindStats()
    keys = [kind_key(cache, src) for _, src in items]
    kinds: dict[str, Kind] = {}
    for key, (node, src) in zip(keys, items):
        kinds.setdefault(key, Kind(node, src, key))
    found = cache.loaded_symbols
    missing: list[Kind] = []
    for key, kind in kinds.items():
        if key in found:
            stats.memory_hits += 1
        elif kind.source.version and (capsule := _from_alias(cache, key)) is not None:
            found[key] = capsule
            stats.disk_hits += 1
        else:
            missing.append(kind)
    if missing:
        _compile_kinds(missing, cache, workers, stats)
    return [found[key] for key in keys], stats


def _compile_kinds(kinds: list[Kind], cache: ModuleCache, workers: int,
                   stats: KindStats) -> None:
    """Compile `kinds` in bundles (one module per kind for a bundle that fails), load
    them into `cache.loaded_symbols` and record their aliases."""
    bundles = [bundle_source(b) for b in plan_bundles(kinds, workers)]
    bundles.sort(key=lambda b: -sum(k.cost for k in b.kinds))  # largest first: less idle
    progress = _Progress(len(kinds))
    progress.advance([])  # the compilers start: a bar shows while they run

    quick = tiers.tiered()

    def build(bundle: BundleSource) -> tuple[Any, bool | str]:
        """(the loaded module, whether it was compiled rather than found on disk, or
        "quick" for a quick build whose -O3 build is still to come)."""
        args = bundle.build_args()
        built: bool | str = True
        # a kind is done when the compiler has emitted its function, or its quick
        # build's trampoline (-O1 inlines the function, called once, into it)
        functions = {f"{prefix}{k.tag}": k.key for k in bundle.kinds
                     for prefix in ("wb_node_run_", "wb_tier_")}

        def finished(function: str) -> None:
            if function in functions:
                progress.advance([functions[function]])

        watch = (compile_progress.reporting_functions(finished) if progress_listeners
                 else contextlib.nullcontext())
        with watch:
            if quick and bundle.version:
                key = cache.key(("bundle",), bundle.source, BUNDLE_MODULE, **args)
                if not cache.entry_dir(key).is_dir():
                    source = bundle_source(bundle.kinds, quick=True).source
                    module = tiers.compile_quick(source, BUNDLE_MODULE, key, args,
                                                 reject_warnings=REJECTED_WARNINGS)
                    progress.advance([k.key for k in bundle.kinds])
                    return module, "quick"
            if bundle.version:  # to disk first, in parallel threads; then load
                key = cache.key(("bundle",), bundle.source, BUNDLE_MODULE, **args)
                built = not cache.entry_dir(key).is_dir()  # (or another process built it)
                cache.ensure_built(("bundle",), bundle.source, BUNDLE_MODULE,
                                   reject_warnings=REJECTED_WARNINGS, **args)
            module = cache.get_or_build(("bundle",), bundle.source, BUNDLE_MODULE,
                                        reject_warnings=REJECTED_WARNINGS, **args)
        progress.advance([k.key for k in bundle.kinds])
        return module, built

    failed: list[Kind] = []
    quick_builds: list[tuple[BundleSource, Any]] = []
    for bundle, result in zip(bundles, _map(build, bundles, workers)):
        if isinstance(result, (cc.CompileError, ImportError)):  # e.g. an undefined symbol
            failed += bundle.kinds
            stats.bundle_fallbacks += 1
            progress.forget([k.key for k in bundle.kinds])  # they compile again, alone
            continue
        if isinstance(result, BaseException):
            raise result
        module, built = result
        stats.modules_built += 1 if built else 0
        if built == "quick":  # in memory only, until the -O3 build takes over
            for kind, attribute in zip(bundle.kinds, bundle.capsules):
                cache.loaded_symbols[kind.key] = getattr(module, attribute)
            quick_builds.append((bundle, module))
            continue
        entry = cache.key(("bundle",), bundle.source, BUNDLE_MODULE, **bundle.build_args())
        for kind, attribute in zip(bundle.kinds, bundle.capsules):
            _record(cache, kind, getattr(module, attribute), entry, BUNDLE_MODULE, attribute)
    if failed:
        def single(kind: Kind) -> Any:
            src = kind.source
            module = cache.get_or_build(_node_parts(), src.source, src.module_name,
                                        **src.build_args())
            progress.advance([kind.key])
            return module

        # each kind alone: a kind with broken C raises its own error here
        for kind, result in zip(failed, _map(single, failed, workers)):
            if isinstance(result, BaseException):
                raise result
            stats.modules_built += 1
            _record(cache, kind, result.fn, kind.key, kind.source.module_name, "fn")
    stats.compiled += len(kinds)
    if quick_builds:
        chosen_by = tiers.flag_environment()
        tiers.in_background(lambda: _optimise(quick_builds, cache, workers, chosen_by))


def _optimise(quick_builds: list[tuple[BundleSource, Any]], cache: ModuleCache,
              workers: int, chosen_by: tuple[str | None, ...]) -> None:
    """The -O3 builds of bundles that run from quick builds (tiers.py): each compiled into
    the cache, its kinds recorded (aliases) and their trampolines pointed at it. A bundle
    that fails keeps running from its quick build (the same C at -O1), and so do all of
    them when the variables that choose the compiler and its flags (`chosen_by`, as when
    the quick builds were made) have changed since: the cache entry would be another
    code path's."""
    if tiers.flag_environment() != chosen_by:
        return
    def build(bundle: BundleSource) -> Any:
        args = bundle.build_args()
        cache.ensure_built(("bundle",), bundle.source, BUNDLE_MODULE,
                           reject_warnings=REJECTED_WARNINGS, **args)
        return cache.get_or_build(("bundle",), bundle.source, BUNDLE_MODULE,
                                  reject_warnings=REJECTED_WARNINGS, **args)

    bundles = [bundle for bundle, _ in quick_builds]
    for (bundle, quick), module in zip(quick_builds, _map(build, bundles, workers)):
        if isinstance(module, BaseException):
            warnings.warn(f"workbench: the -O3 build of {len(bundle.kinds)} node kind(s) "
                          f"failed; they keep running from their -O1 build: {module}",
                          RuntimeWarning, stacklevel=1)
            continue
        entry = cache.key(("bundle",), bundle.source, BUNDLE_MODULE, **bundle.build_args())
        for kind, attribute in zip(bundle.kinds, bundle.capsules):
            capsule = getattr(module, attribute)
            _record(cache, kind, capsule, entry, BUNDLE_MODULE, attribute)
            tiers.upgrade(quick, kind.tag, capsule)


class _Progress:
    """Counts compiled kinds (by key, each once) for `progress_listeners` (thread-safe).
    The kinds of a bundle that failed are forgotten: they count again as each compiles
    alone."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done: set[str] = set()
        self._lock = threading.Lock()

    def advance(self, keys: list[str]) -> None:
        if not progress_listeners:
            return
        with self._lock:
            new = [k for k in keys if k not in self.done]
            if keys and not new:
                return
            self.done.update(new)
            self._tell()

    def forget(self, keys: list[str]) -> None:
        if not progress_listeners:
            return
        with self._lock:
            self.done.difference_update(keys)
            self._tell()

    def _tell(self) -> None:
        for listener in list(progress_listeners):
            listener(min(len(self.done), self.total), self.total)


def _record(cache: ModuleCache, kind: Kind, capsule: Any, entry: str, module: str,
            attribute: str) -> None:
    cache.loaded_symbols[kind.key] = capsule
    if kind.source.version:
        cache.write_alias(kind.key, {"kind": kind.key, "entry": entry, "module": module,
                                     "capsule": attribute})
