"""Audit: do the C kinds of the whole catalogue compile as one bundle?

A bundle (workbench/core/link/c/bundle.py) whose kinds' support code clashes (a block
defined twice, a macro redefined) silently falls back to a module per kind: correct,
but a slower cold compile. Kinds only clash through their support blocks (their
functions have names of their own), so this takes one kind per op class and set of
support blocks from every catalogue case in every float dtype (inner graphs too),
compiles them all into one translation unit, and when that fails, shrinks the set to a
minimal failing one and prints the compiler's message. Then it runs them through
`bundle.node_functions(..., workers=1)` and prints its `bundle_fallbacks`.

    PYTHONPATH=. python3 benchmarks/audit_bundles.py [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
import warnings
from typing import Any

import workbench as wb
from workbench.core.link.c import bundle, codegen
from workbench.core.link.c.cache import ModuleCache
from workbench.core.link.c.linker import _inner_nodes
from workbench.testing.catalog import all_cases


def catalogue_kinds(cache: ModuleCache) -> tuple[list[bundle.Kind], dict[str, set[str]]]:
    """One kind per (op class, support blocks) of the catalogue, and the op classes
    each family contributed."""
    picked: dict[tuple[str, frozenset[str]], bundle.Kind] = {}
    families: dict[str, set[str]] = {}
    for case in all_cases():
        for dtype in case.float_dtypes:
            try:
                inputs, out, _ = case.graph(dtype)
                outs = list(out) if isinstance(out, (list, tuple)) else [out]
                f = wb.function(inputs, outs, linker="py", on_unused_input="ignore")
            except Exception as exc:  # noqa: BLE001 - an audit reports and goes on
                print(f"skipped {case.family}.{case.name}[{dtype}]: {exc}")
                continue
            order = f.maker.fgraph.toposort()
            for node in order + _inner_nodes(order):
                try:
                    src = codegen.node_source(node)
                except codegen.NoCCode:
                    continue
                parts = codegen.node_parts(node)
                blocks = frozenset(hashlib.sha256(b.encode()).hexdigest()
                                   for b in (*parts.support, parts.apply_support) if b)
                key = (type(node.op).__name__, blocks)
                if key not in picked:
                    picked[key] = bundle.Kind(node, src, bundle.kind_key(cache, src))
                    families.setdefault(case.family, set()).add(key[0])
    unique = {kind.key: kind for kind in picked.values()}  # (Max is CAReduce{maximum})
    return list(unique.values()), families


def compile_error(kinds: list[bundle.Kind], cache: ModuleCache) -> Exception | None:
    """The error of compiling `kinds` as one bundle, or None."""
    source = bundle.bundle_source(kinds)
    try:
        cache.get_or_build(("audit",), source.source, bundle.BUNDLE_MODULE,
                           reject_warnings=bundle.REJECTED_WARNINGS, **source.build_args())
    except Exception as exc:  # noqa: BLE001 - the error is the result
        return exc
    return None


def minimal_failing(kinds: list[bundle.Kind], cache: ModuleCache) -> list[bundle.Kind]:
    """A subset of failing `kinds` that still fails and fails without any one of them."""
    current, i = list(kinds), 0
    while i < len(current):
        trial = current[:i] + current[i + 1:]
        if len(trial) >= 2 and compile_error(trial, cache) is not None:
            current = trial
        else:
            i += 1
    return current


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=None, help="module cache (default: a new one)")
    cache = ModuleCache(parser.parse_args().cache or tempfile.mkdtemp(prefix="wbaudit"))
    warnings.simplefilter("ignore")
    kinds, families = catalogue_kinds(cache)
    print(f"{len(kinds)} kinds; op classes by family:")
    for family, names in sorted(families.items()):
        print(f"  {family}: {', '.join(sorted(names))}")
    groups: dict[Any, list[bundle.Kind]] = {}
    for kind in kinds:
        groups.setdefault(kind.group, []).append(kind)
    for group, members in groups.items():
        start = time.perf_counter()
        error = compile_error(members, cache)
        print(f"group {group}: {len(members)} kinds in one bundle: "
              f"{'compiles' if error is None else 'FAILS'} "
              f"({time.perf_counter() - start:.1f} s)")
        if error is not None:
            clash = minimal_failing(members, cache)
            print("clashing kinds:", ", ".join(str(k.node.op) for k in clash))
            print(str(compile_error(clash, cache))[:4000])
    _, stats = bundle.node_functions([(k.node, k.source) for k in kinds], cache, workers=1)
    print(f"node_functions(workers=1): {stats.compiled} kinds, {stats.modules_built} "
          f"modules, bundle_fallbacks={stats.bundle_fallbacks}")


if __name__ == "__main__":
    main()
