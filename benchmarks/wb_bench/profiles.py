"""Per-node times of workbench's functions from the project's own profiler.

`add_profile(ctx, case, fn, *args)` profiles a compiled Function with
`workbench.profile` (a twin compiled with profile=True: the same graph and linker, every
node timed, and for BLAS nodes the thread count the C linker chose for each call), and
keeps a summary in `ctx.profiles`. Like the suite's timings it profiles the final -O3
code: workbench's background builds are waited for first (a profile taken beside them
timed the -O1 build with the compiler on the pinned CPU: 9.5 ms per MLP step against
1.9 ms measured); `format_profiles` gives one Markdown table per case,
printed under the suite's table.
"""

from __future__ import annotations

from typing import Any

from wb_bench.common import Context, finish_background_builds
from wb_bench.table import format_seconds, terminal_width, text_table, wrap

#: nodes listed per profile (the rest are summed in one line)
TOP = 10


def add_profile(ctx: Context, case: str, fn: Any, *args: Any) -> None:
    """Profile `fn` on `args` (calls: 5 quick, 20 full, after one warm-up) into
    `ctx.profiles`; a failure becomes a note, never an abort."""
    import workbench as wb

    calls = 5 if ctx.quick else 20
    try:
        finish_background_builds()  # fn's -O3 build: the twin then links it directly
        stats = wb.profile(fn, *args, calls=calls)
        if background_builds():  # the twin compiled kinds of its own: profile the -O3
            finish_background_builds()
            stats = wb.profile(fn, *args, calls=calls)
    except Exception as exc:  # noqa: BLE001 - a profile is extra information
        ctx.note(f"profile of {case}: failed ({type(exc).__name__}: {exc})")
        return
    nodes = [{"node": row.node, "op_class": row.op_class, "backend": row.backend,
              "per_call": row.per_call, "threads": row.threads}
             for row in sorted(stats.by_node(), key=lambda r: r.time, reverse=True)]
    summary = stats.summary()
    groups = [{"op_class": g.name, "nodes": g.nodes, "fraction": g.fraction}
              for g in stats.by_op_class()]
    ctx.profiles.append({"case": case, "calls": stats.calls, "per_call": summary["per_call"],
                         "nodes_per_call": summary["thunk_time"] / max(stats.calls, 1),
                         "nodes": nodes, "by_op_class": groups})


def background_builds() -> int:
    """How many of workbench's background -O3 builds are still running."""
    from workbench.core.link.c import tiers

    return tiers.pending_upgrades()


def _short(text: str, width: int = 70) -> str:
    text = text.replace("|", "/")
    return text if len(text) <= width else text[: width - 3] + "..."


def format_profiles(profiles: list[dict[str, Any]], width: int | None = None) -> str:
    """One Markdown table per profile: its costliest nodes, their backend, time per
    call, share of the nodes' time and the BLAS threads the C linker gave them; the
    node column wraps so that every line fits `width` columns (default: the terminal's)."""
    width = terminal_width(width)
    parts = []
    for prof in profiles:
        total = sum(n["per_call"] for n in prof["nodes"]) or 1.0
        summary = (f"profile=True twin, {prof['calls']} calls after one warm-up: "
                   f"{format_seconds(prof['per_call'])} per call, of which the nodes "
                   f"{format_seconds(prof['nodes_per_call'])}; by Op class: "
                   + ", ".join(f"{g['op_class']} {100 * g['fraction']:.1f}% "
                               f"({g['nodes']} nodes)" for g in prof["by_op_class"][:6]))
        cells = [(_short(node["node"]), node["backend"],
                  format_seconds(node["per_call"]), f"{100 * node['per_call'] / total:.1f}%",
                  str(node["threads"] or "-")) for node in prof["nodes"][:TOP]]
        rest = prof["nodes"][TOP:]
        if rest:
            left = sum(n["per_call"] for n in rest)
            cells.append((f"({len(rest)} more nodes)", "", format_seconds(left),
                          f"{100 * left / total:.1f}%", ""))
        header = ("node", "backend", "per call", "share", "BLAS threads")
        lines = [wrap(f"### workbench c per node: {prof['case']}", width), "",
                 wrap(summary, width), "", *text_table(header, cells, width, wrapped=(0,))]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
