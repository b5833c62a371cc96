"""Imports only go down: the layer order of docs/ARCHITECTURE.md, checked on every import.

The layer table and the named exceptions are read from docs/ARCHITECTURE.md (between
its `layers` and `layer-exceptions` markers), so the page and this test cannot
disagree. Every import of every module of workbench/ counts: module-level and
function-level `import` / `from ... import`, and a dotted module name written as a
string (`importlib.import_module("workbench....")`); only imports under
`if TYPE_CHECKING:` are left out, as they never run.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "workbench"
MAP = ROOT / "docs" / "ARCHITECTURE.md"
MAX_EXCEPTIONS = 2


def _table(name: str) -> list[list[str]]:
    """The rows (cells) of the markdown table between `<!-- name:begin -->` and `:end`."""
    text = MAP.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {name}:begin -->(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"docs/ARCHITECTURE.md has no <!-- {name}:begin/end --> table"
    rows = []
    for line in match.group(1).strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and not set(cells[0]) <= set("-: "):
            rows.append(cells)
    return rows[1:]  # without the header


def _paths(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def layer_table() -> list[tuple[str, list[str]]]:
    """(layer name, path entries), lowest layer first."""
    return [(row[0], _paths(row[1])) for row in _table("layers")]


def named_exceptions() -> set[tuple[str, str]]:
    return {(_paths(row[0])[0], _paths(row[1])[0]) for row in _table("layer-exceptions")}


def module_files() -> dict[str, str]:
    """Dotted module name -> path relative to the repository root, for all of workbench/."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = rel.as_posix()
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(module: str, path: str, modules: dict[str, str], text: str | None = None
               ) -> set[str]:
    """The workbench modules `module` imports anywhere in its text."""
    is_package = path.endswith("__init__.py")
    if text is None:
        text = (ROOT / path).read_text(encoding="utf-8")
    tree = ast.parse(text, filename=path)
    targets: set[str] = set()
    typing_only = {id(inner) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and _is_type_checking(node.test)
                   for stmt in node.body for inner in ast.walk(stmt)}

    def add(name: str) -> None:
        while name and name not in modules:  # `import a.b.c` where c is an attribute
            name = name.rpartition(".")[0]
        if name:
            targets.add(name)

    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                add(sub if sub in modules else source)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "." in node.value and node.value in modules:
            add(node.value)  # importlib.import_module("workbench....") and the like
    targets.discard(module)
    return {t for t in targets if t.startswith("workbench")}


def import_graph() -> tuple[dict[str, str], nx.DiGraph]:
    modules = module_files()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for target in imports_of(module, path, modules):
            graph.add_edge(module, target)
    return modules, graph


def layer_of(path: str, table: list[tuple[str, list[str]]]) -> int | None:
    best: tuple[int, int] | None = None
    for index, (_, entries) in enumerate(table):
        for entry in entries:
            hit = path == entry if entry.endswith(".py") else path.startswith(entry)
            if hit and (best is None or len(entry) > best[1]):
                best = (index, len(entry))
    return None if best is None else best[0]


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, str], nx.DiGraph]:
    return import_graph()


def test_every_module_has_a_layer(graph) -> None:
    modules, _ = graph
    table = layer_table()
    assert len(table) >= 10, "the layer table of docs/ARCHITECTURE.md was not read"
    missing = sorted(p for p in modules.values() if layer_of(p, table) is None)
    assert not missing, (f"modules with no row in the layer table of docs/ARCHITECTURE.md "
                         f"(add them there): {missing}")


def test_imports_only_go_down(graph) -> None:
    modules, g = graph
    table = layer_table()
    allowed = named_exceptions()
    assert len(allowed) <= MAX_EXCEPTIONS, f"at most {MAX_EXCEPTIONS} named exceptions"
    upward, used = [], set()
    for source, target in g.edges():
        a, b = modules[source], modules[target]
        la, lb = layer_of(a, table), layer_of(b, table)
        if la is None or lb is None or lb <= la:
            continue
        if (a, b) in allowed:
            used.add((a, b))
            continue
        upward.append(f"{a} ({table[la][0]}) imports {b} ({table[lb][0]})")
    assert not upward, "imports that go up a layer:\n  " + "\n  ".join(sorted(upward))
    stale = allowed - used
    assert not stale, f"named exceptions that no longer happen (delete their rows): {stale}"


def _package(module: str) -> str:
    """The package of a core module: workbench.core.<name> (a top-level module is its own)."""
    return ".".join(module.split(".")[:3])


def core_components(g: nx.DiGraph, without: set[tuple[str, str]]) -> list[set[str]]:
    core = g.subgraph(m for m in g if m.startswith("workbench.core.")).copy()
    core.remove_edges_from(without)
    return sorted(nx.strongly_connected_components(core), key=len, reverse=True)


def test_import_cycles_stay_inside_one_package(graph) -> None:
    modules, g = graph
    by_path = {path: module for module, path in modules.items()}
    without = {(by_path[a], by_path[b]) for a, b in named_exceptions()}
    crossing = [sorted(Counter(_package(m) for m in scc).items())
                for scc in core_components(g, without)
                if len({_package(m) for m in scc}) > 1]
    assert not crossing, f"import cycles across packages of workbench/core: {crossing}"


def test_the_checker_sees_every_kind_of_import() -> None:
    """Imports hidden in functions, relative imports and module names in strings count;
    imports under `if TYPE_CHECKING:` and plain words in strings do not."""
    modules = module_files()
    text = """
from typing import TYPE_CHECKING
from . import basic
if TYPE_CHECKING:
    from workbench.core.rewrite.trace import RewriteTrace
def later():
    from workbench.core.compile.function import function
    import importlib
    importlib.import_module("workbench.core.link.vm")
    return "workbench"
"""
    found = imports_of("workbench.core.graph.probe", "workbench/core/graph/probe.py", modules,
                       text=text)
    assert found == {"workbench.core.graph.basic", "workbench.core.compile.function",
                     "workbench.core.link.vm"}
    assert layer_of("workbench/core/tensor/shape_feature.py", layer_table()) \
        == layer_of("workbench/core/tensor/basic.py", layer_table())


def test_no_private_name_is_imported_from_another_module() -> None:
    """A name shared across modules is public: `from x import _name` is refused (a private
    submodule such as `widgets._common` is fine; its names are public)."""
    modules = module_files()
    found = []
    for path in modules.values():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not (node.level or (
                    node.module or "").startswith("workbench")):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{node.module}.{alias.name}" not in modules:
                    found.append(f"{path}:{node.lineno} imports {alias.name} from {node.module}")
    assert not found, "private names imported across modules (make them public):\n  " + \
        "\n  ".join(found)
