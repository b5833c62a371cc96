"""The rewrite database: every rewrite registered by name with tags, queried into a pipeline.

`rewrite_db` holds the standard passes in order: merge1, canonicalize,
stabilize, specialize, fusion, inplace, merge2. canonicalize, stabilize and
specialize are equilibria of the node rewriters registered with
`register_canonicalize` / `register_stabilize` / `register_specialize`
(shape rewrites and constant folding run inside canonicalize); fusion and
inplace run their graph rewriters in sequence (and node rewriters in one walk).

After them come the passes tagged `always`, which every query selects (unless it
excludes them by name or tag) because linking needs them, whatever rewrites were
asked for: protect_inputs (an Op may overwrite only the inputs a compiled function
marks mutable) and backend_dtypes (the casting pass, rules/casting.py). Each acts
only on a graph that declares what it needs (`fgraph.mutable_inputs`,
`fgraph.backend`), so a graph rewritten without compiling is left alone.

`rewrite_db.query(include=("fast_run",), exclude=(...))` selects entries whose
tags or name meet `include`, none of whose tags or name is in `exclude`, and
that carry every tag of `require`, and returns one SequentialGraphRewriter.
A `RewriteQuery` is such a query kept as a value: the rewriter of a compile Mode.
Modes register their rewriter by name (`register_mode_rewriter`), so
`rewrite_graph(..., mode="FAST_RUN")` finds it without importing the compile layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from workbench.core.rewrite.engine import (
    EquilibriumGraphRewriter,
    GraphRewriter,
    NodeRewriter,
    SequentialGraphRewriter,
    WalkingGraphRewriter,
)
from workbench.core.rewrite.folding import constant_folding
from workbench.core.rewrite.merge import MergeRewriter
from workbench.core.rewrite.runner import run_rewriter
from workbench.core.rewrite.trace import RewriteTrace

__all__ = [
    "ALWAYS", "CHANGES_DRAWS", "DROPS_CHECKS", "PassDatabase", "RewriteDatabase", "RewriteQuery",
    "apply_rewriter", "mode_rewriter",
    "register_canonicalize", "register_fusion", "register_inplace", "register_mode_rewriter",
    "register_shape", "register_specialize", "register_stabilize", "rewrite_db",
]  # fmt: skip


#: The tag of the passes every query selects unless it excludes them: what linking needs.
ALWAYS = "always"
#: The tag of rewrites that keep a random draw's distribution but change its numbers
#: (random/rewrites.py): never in a default query; DEBUG checks only shapes and dtypes
#: across their steps.
CHANGES_DRAWS = "changes_draws"
#: The tag of rewrites that drop a check the graph makes (an error it raises for inputs
#: outside a domain, e.g. a matrix that is not positive definite), exact only inside
#: that domain: never in a default query, which must never turn an error into a value
#: (rules/linalg.py). A user who knows the domain asks for them by name or this tag.
DROPS_CHECKS = "drops_checks"


def _selected(keys: set[str], include: set[str], exclude: set[str], require: set[str]) -> bool:
    if keys & exclude:
        return False
    return ALWAYS in keys or (bool(keys & include) and require <= keys)


class _Entry:
    __slots__ = ("name", "rewriter", "tags", "position")

    def __init__(self, name: str, rewriter: Any, tags: set[str], position: float) -> None:
        self.name = name
        self.rewriter = rewriter
        self.tags = tags
        self.position = position

    @property
    def keys(self) -> set[str]:
        return self.tags | {self.name}


class RewriteDatabase:
    """Named, tagged rewriters (graph rewriters or sub-databases) in position order."""

    def __init__(self, name: str = "rewrite_db") -> None:
        self.name = name
        self._entries: dict[str, _Entry] = {}

    def register(self, name: str, rewriter: Any, *tags: str, position: float | None = None
                 ) -> Any:
        """Add `rewriter` under `name` with `tags`; `position` orders the pipeline."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"register needs a non-empty name, got {name!r}")
        for tag in tags:
            if not isinstance(tag, str):
                raise TypeError(f"tags must be strings, got {tag!r} (registering {name!r})")
        existing = self._entries.get(name)
        if existing is not None:
            if existing.rewriter is rewriter:
                existing.tags.update(tags)
                return rewriter
            raise ValueError(f"{self.name}: a different rewrite is already registered as "
                             f"{name!r}; choose another name")
        if position is None:
            position = max((e.position for e in self._entries.values()), default=0) + 1
        self._entries[name] = _Entry(name, rewriter, set(tags), position)
        if hasattr(rewriter, "add_tags"):
            rewriter.add_tags(*tags)
        return rewriter

    def remove(self, name: str) -> Any:
        """Unregister `name` (here or in a sub-database) and return its rewriter."""
        entry = self._entries.pop(name, None)
        if entry is not None:
            return entry.rewriter
        for entry in self._entries.values():
            if isinstance(entry.rewriter, RewriteDatabase) and name in entry.rewriter:
                return entry.rewriter.remove(name)
        raise KeyError(f"no rewrite named {name!r} in {self.name}")

    def _ordered(self) -> list[_Entry]:
        return sorted(self._entries.values(), key=lambda e: e.position)

    def __contains__(self, name: str) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __getitem__(self, name: str) -> Any:
        """The rewriter registered under `name`, here or in a sub-database."""
        entry = self._entries.get(name)
        if entry is not None:
            return entry.rewriter
        for entry in self._entries.values():
            if isinstance(entry.rewriter, RewriteDatabase) and name in entry.rewriter:
                return entry.rewriter[name]
        raise KeyError(f"no rewrite named {name!r} in {self.name}; see .names()")

    def names(self, recursive: bool = True) -> list[str]:
        result = []
        for entry in self._ordered():
            result.append(entry.name)
            if recursive and isinstance(entry.rewriter, RewriteDatabase):
                result.extend(entry.rewriter.names())
        return result

    def tags_of(self, name: str) -> set[str]:
        entry = self._entries.get(name)
        if entry is not None:
            return set(entry.tags)
        for entry in self._entries.values():
            if isinstance(entry.rewriter, RewriteDatabase) and name in entry.rewriter:
                return entry.rewriter.tags_of(name)
        raise KeyError(f"no rewrite named {name!r} in {self.name}")

    def all_tags(self) -> set[str]:
        tags: set[str] = set()
        for entry in self._entries.values():
            tags |= entry.tags
            if isinstance(entry.rewriter, RewriteDatabase):
                tags |= entry.rewriter.all_tags()
        return tags

    def query(self, include: Iterable[str] = ("fast_run",), exclude: Iterable[str] = (),
              require: Iterable[str] = ()) -> GraphRewriter:
        """The pipeline of the selected passes, as one SequentialGraphRewriter."""
        inc, exc, req = _as_set(include, "include"), _as_set(exclude, "exclude"), \
            _as_set(require, "require")
        passes: list[GraphRewriter] = []
        for entry in self._ordered():
            keys = entry.keys
            if keys & exc:
                continue
            if isinstance(entry.rewriter, RewriteDatabase):
                sub = entry.rewriter.query(inc, exc, req - keys) if (
                    keys & inc or entry.rewriter.matches(inc, exc)) else None
                if sub is not None:
                    passes.append(sub)
            elif _selected(keys, inc, exc, req):
                passes.append(entry.rewriter)
        return SequentialGraphRewriter(*passes, name=f"query({','.join(sorted(inc))})")

    def matches(self, include: set[str], exclude: set[str]) -> bool:
        return any(_selected(e.keys, include, exclude, set()) for e in self._entries.values())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {', '.join(self._entries)}>"


def _as_set(values: Iterable[str], what: str) -> set[str]:
    if isinstance(values, str):
        return {values}
    result = set(values)
    for value in result:
        if not isinstance(value, str):
            raise TypeError(f"{what} must hold tag or rewrite names (str), got {value!r}")
    return result


class PassDatabase(RewriteDatabase):
    """The rewrites of one pass: queried into an equilibrium, a walk or a sequence.

    kind "equilibrium": node rewriters (and graph rewriters run each round) to a
    fixed point; kind "sequence": graph rewriters in order, node rewriters
    together in one in-to-out walk first.
    """

    def __init__(self, name: str, kind: str = "equilibrium", max_use_ratio: float = 20.0
                 ) -> None:
        super().__init__(name)
        if kind not in ("equilibrium", "sequence"):
            raise ValueError(f"PassDatabase kind must be 'equilibrium' or 'sequence', got {kind!r}")
        self.kind = kind
        self.max_use_ratio = max_use_ratio

    def query(self, include: Iterable[str] = ("fast_run",), exclude: Iterable[str] = (),
              require: Iterable[str] = ()) -> GraphRewriter | None:  # type: ignore[override]
        inc, exc, req = set(include), set(exclude), set(require)
        chosen = [e.rewriter for e in self._ordered() if _selected(e.keys, inc, exc, req)]
        if not chosen:
            return None
        if self.kind == "equilibrium":
            return EquilibriumGraphRewriter(chosen, max_use_ratio=self.max_use_ratio,
                                            name=self.name)
        node_rws = [r for r in chosen if isinstance(r, NodeRewriter)]
        graph_rws = [r for r in chosen if isinstance(r, GraphRewriter)]
        if node_rws:
            graph_rws.insert(0, WalkingGraphRewriter(node_rws, name=f"{self.name}_walk"))
        if len(graph_rws) == 1:
            return _Named(graph_rws[0], self.name)
        # one pass of the trace (a bare sequence would make each rewriter a pass of its own)
        return _Named(SequentialGraphRewriter(*graph_rws, name=self.name), self.name)


class _Named(GraphRewriter):
    """A graph rewriter run as a pass of another name."""

    def __init__(self, inner: GraphRewriter, name: str) -> None:
        self.inner = inner
        self.name = name
        self.tags = inner.tags

    def apply(self, fgraph: Any) -> None:
        self.inner.apply(fgraph)


# -- the global database ------------------------------------------------------------------

rewrite_db = RewriteDatabase("rewrite_db")
canonicalize_db = PassDatabase("canonicalize")
stabilize_db = PassDatabase("stabilize")
specialize_db = PassDatabase("specialize")
fusion_db = PassDatabase("fusion", kind="sequence")
inplace_db = PassDatabase("inplace", kind="sequence")

rewrite_db.register("merge1", MergeRewriter("merge1"), "fast_run", "fast_compile", "merge",
                    position=0)
rewrite_db.register("canonicalize", canonicalize_db, "fast_run", "fast_compile", "canonicalize",
                    position=1)
rewrite_db.register("stabilize", stabilize_db, "fast_run", "stabilize", position=2)
rewrite_db.register("specialize", specialize_db, "fast_run", "specialize", position=3)
rewrite_db.register("fusion", fusion_db, "fast_run", "fusion", position=4)
rewrite_db.register("inplace", inplace_db, "fast_run", "inplace", position=5)
rewrite_db.register("merge2", MergeRewriter("merge2"), "fast_run", "fast_compile", "merge",
                    position=6)

_PASS_TAGS = {
    "canonicalize": ("canonicalize", "fast_run", "fast_compile"),
    "shape": ("shape", "canonicalize", "fast_run", "fast_compile"),
    "stabilize": ("stabilize", "fast_run"),
    "specialize": ("specialize", "fast_run"),
    "fusion": ("fusion", "fast_run"),
    "inplace": ("inplace", "fast_run"),
}
_PASS_DB = {"canonicalize": canonicalize_db, "shape": canonicalize_db, "stabilize": stabilize_db,
            "specialize": specialize_db, "fusion": fusion_db, "inplace": inplace_db}

canonicalize_db.register("constant_folding", constant_folding, *_PASS_TAGS["canonicalize"],
                         position=1000)


def _register_in(pass_name: str) -> Callable[..., Any]:
    def register(rewriter: Any = None, *tags: str, name: str | None = None,
                 position: float | None = None) -> Any:
        if isinstance(rewriter, str):  # @register_x("tag", ...) : a decorator
            tags = (rewriter, *tags)
            rewriter = None
        if rewriter is None:
            def decorate(rw: Any) -> Any:
                return register(rw, *tags, name=name, position=position)
            return decorate
        if not isinstance(rewriter, (NodeRewriter, GraphRewriter)):
            raise TypeError(
                f"register_{pass_name} needs a NodeRewriter (from @node_rewriter) or a "
                f"GraphRewriter, got {rewriter!r}; put @register_{pass_name} above @node_rewriter")
        rw_name = name or rewriter.name or type(rewriter).__name__
        _PASS_DB[pass_name].register(rw_name, rewriter, *_PASS_TAGS[pass_name], *tags,
                                     position=position)
        return rewriter

    register.__name__ = f"register_{pass_name}"
    register.__doc__ = (f"Register a rewrite in the {pass_name} pass (tags: "
                        f"{', '.join(_PASS_TAGS[pass_name])} plus any given); usable as a "
                        "decorator, bare or with tags.")
    return register


register_canonicalize = _register_in("canonicalize")
register_shape = _register_in("shape")
register_stabilize = _register_in("stabilize")
register_specialize = _register_in("specialize")
register_inplace = _register_in("inplace")
_register_fusion = _register_in("fusion")


def register_fusion(graph_rewriter: Any = None, *tags: str, name: str | None = None,
                    position: float | None = None) -> Any:
    """Register a graph rewriter (or node rewriter) in the fusion pass."""
    return _register_fusion(graph_rewriter, *tags, name=name, position=position)


# -- queries: the rewriter of a Mode, and the rewriter of each mode name --------------------


class RewriteQuery:
    """The rewriter of a Mode: a query of the rewrite database, made when first used.

    `rewrite(fgraph)` applies the selected passes and returns the RewriteTrace
    (always recorded: it costs little next to rewriting). With `debug`, a rewrite
    that raises stops rewriting, and `step_checker(fgraph)` (DEBUG mode gives the
    link layer's `StepChecker`) is called after each step to check it numerically.
    """

    def __init__(self, include: tuple[str, ...] = ("fast_run",), exclude: tuple[str, ...] = (),
                 require: tuple[str, ...] = (), debug: bool = False,
                 step_checker: Callable[[Any], Any] | None = None) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.require = tuple(require)
        self.debug = debug
        self.step_checker = step_checker

    def with_tags(self, include: Any = (), exclude: Any = ()) -> RewriteQuery:
        include = (include,) if isinstance(include, str) else tuple(include)
        exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
        return RewriteQuery(tuple(dict.fromkeys(self.include + include)),
                            tuple(dict.fromkeys(self.exclude + exclude)), self.require,
                            self.debug, self.step_checker)

    def query(self) -> Any:
        """The GraphRewriter this query selects now."""
        return rewrite_db.query(self.include, self.exclude, self.require)

    def rewrite(self, fgraph: Any) -> RewriteTrace:
        """Apply the selected passes to `fgraph` in place; return the RewriteTrace."""
        hooks = []
        if self.debug and self.step_checker is not None:
            hooks.append(self.step_checker(fgraph))
        trace = run_rewriter(self.query(), fgraph, strict=self.debug, step_hooks=hooks)
        assert trace is not None
        return trace

    def __repr__(self) -> str:
        extra = f", exclude={self.exclude!r}" if self.exclude else ""
        return f"RewriteQuery(include={self.include!r}{extra}{', debug' if self.debug else ''})"


def apply_rewriter(rewriter: Any, fgraph: Any, what: str = "rewriter") -> RewriteTrace:
    """Apply a mode's `rewriter` (a RewriteQuery, None, a GraphRewriter, an object with
    `rewrite(fgraph)` or a callable) to `fgraph` in place, then the passes every query
    ends with (tagged `always`: what linking needs), all under one RewriteTrace, which is
    returned."""
    if isinstance(rewriter, RewriteQuery):
        return rewriter.rewrite(fgraph)
    passes: list[GraphRewriter] = [rewrite_db.query(include=())]
    if rewriter is not None:
        if not isinstance(rewriter, GraphRewriter):
            if getattr(rewriter, "rewrite", None) is None and not callable(rewriter):
                raise TypeError(f"{what}: rewriter {rewriter!r} is neither callable nor has "
                                ".rewrite(fgraph)")
            rewriter = _OwnRewriter(rewriter)
        passes.insert(0, rewriter)
    trace = run_rewriter(SequentialGraphRewriter(*passes, name="pipeline"), fgraph)
    assert trace is not None
    return trace


class _OwnRewriter(GraphRewriter):
    """A mode's own rewriter (a callable, or an object with `.rewrite(fgraph)`) run as a
    pass of the pipeline."""

    def __init__(self, rewriter: Any) -> None:
        self.rewriter = rewriter
        self.name = getattr(rewriter, "name", None) or "custom"

    def apply(self, fgraph: Any) -> None:
        method = getattr(self.rewriter, "rewrite", None)
        (method if method is not None else self.rewriter)(fgraph)


#: The rewriter of each mode name; compile's `register_mode` adds every mode's.
_mode_rewriters: dict[str, Any] = {
    "FAST_RUN": RewriteQuery(("fast_run",)),
    "FAST_COMPILE": RewriteQuery(("fast_compile",)),
}


def register_mode_rewriter(name: str, rewriter: Any) -> None:
    """Make `rewriter` the one `mode_rewriter(name)` returns."""
    _mode_rewriters[name] = rewriter


def mode_rewriter(mode: Any) -> Any:
    """The rewriter of `mode`: a mode name, a Mode (anything with `.rewriter`), or None
    (FAST_RUN)."""
    if mode is None:
        mode = "FAST_RUN"
    if isinstance(mode, str):
        if mode in _mode_rewriters:
            return _mode_rewriters[mode]
        if mode.upper() in _mode_rewriters:
            return _mode_rewriters[mode.upper()]
        raise ValueError(f"unknown mode {mode!r}; known modes: "
                         f"{', '.join(sorted(_mode_rewriters))}")
    if hasattr(mode, "rewriter"):
        return mode.rewriter
    raise TypeError(f"mode must be a mode name or a Mode, got {mode!r}")
