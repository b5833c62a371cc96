"""The suite's result as text fitted to a terminal's width.

`text_table` draws a Markdown-style table whose wide columns wrap at word boundaries
so that every line fits `width` columns (the terminal's, `workbench.cli.terminal.columns`);
`format_table` is the suite's table with its headlines above and its legend, footnotes
and notes under it, every paragraph wrapped to the same width.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wb_bench.common import Row

#: a wrapped column is never made narrower than its longest word, or this if less
#: (longer words, like node names, are cut)
MIN_WRAPPED = 16


def wrap(text: str, width: int, indent: str = "", hanging: str = "") -> str:
    """`text` as lines of at most `width` columns, broken at spaces (a word longer
    than a line is cut); `indent` starts the first line, `hanging` the others."""
    return textwrap.fill(text, max(width, len(indent) + 1, len(hanging) + 1),
                         initial_indent=indent, subsequent_indent=hanging,
                         break_on_hyphens=False)


def _cell_lines(text: str, width: int) -> list[str]:
    """`text` in lines of `width`, broken at spaces, and at hyphens only where a word
    is longer than a line ("[back-to-back]" stays whole where it fits)."""
    hyphens = any(len(word) > width for word in text.split())
    return textwrap.wrap(text, width, break_on_hyphens=hyphens) or [""]


def _free_width(texts: Sequence[tuple[str, int]], natural: int, least: int) -> int:
    """The narrowest width (not below `least`) at which each (text, rows) pair wraps
    into at most its rows: a flowing column that narrow adds no lines."""
    width = natural
    while width > least and all(len(_cell_lines(t, width - 1)) <= n for t, n in texts):
        width -= 1
    return width


def _longest_word(text: str) -> int:
    """The widest piece a cell breaks into: words, and parts of hyphenated words."""
    return max((len(w) for w in re.split(r"\s+|(?<=-)", text)), default=0)


def _fit(natural: list[int], stages: list[list[tuple[int, int]]], room: int) -> list[int]:
    """Column widths whose sum is at most `room` where the stages allow: each stage is
    (column, least width) pairs; its widest column above its least gives up a column
    at a time until the widths fit or the stage is spent, then the next stage starts."""
    widths = list(natural)
    for stage in stages:
        while sum(widths) > room:
            shrinkable = [(i, least) for i, least in stage if widths[i] > least]
            if not shrinkable:
                break
            widths[max(shrinkable, key=lambda c: widths[c[0]])[0]] -= 1
    return widths


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int,
               wrapped: Sequence[int] = (), flowing: int | None = None) -> list[str]:
    """The lines of a Markdown-style table (`| a | b |`) at most `width` columns wide
    where the cells allow it. Column `flowing` (the case name, written on the first row
    of its group only) flows into the blank cells of the rows under it before adding
    lines of its own. When the natural widths do not fit, the flowing column narrows
    first as far as that adds no lines, then header cells wrap at spaces, then the
    cells of the columns numbered in `wrapped`, in that order. A cell that wraps
    continues on the next line, the row's other cells blank there."""
    count = len(header)
    natural = [max(len(r[i]) for r in [header, *rows]) for i in range(count)]
    least = {i: max(_longest_word(header[i]), min(
        max((_longest_word(r[i]) for r in rows), default=0), MIN_WRAPPED)) for i in wrapped}
    stages = []
    if flowing is not None:
        starts = [k for k, r in enumerate(rows) if r[flowing]] + [len(rows)]
        groups = [(rows[a][flowing], b - a) for a, b in zip(starts, starts[1:])]
        free = _free_width(groups, natural[flowing], least.get(flowing, natural[flowing]))
        stages.append([(flowing, free)])
    stages.append([(i, max([_longest_word(header[i]), *(len(r[i]) for r in rows)]))
                   for i in range(count) if i not in wrapped])
    stages += [[(i, least[i])] for i in wrapped]
    widths = _fit(natural, stages, width - (3 * count + 1))

    def physical(cells: Sequence[str], skip: int | None = None) -> list[list[str]]:
        wrapped_cells = [[""] if i == skip else _cell_lines(c, widths[i])
                         for i, c in enumerate(cells)]
        height = max(len(c) for c in wrapped_cells)
        return [[c[k] if k < len(c) else "" for c in wrapped_cells] for k in range(height)]

    def draw(line: list[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(line, widths)) + " |"

    out = [draw(line) for line in physical(header)]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    group: list[list[str]] = []
    flow: list[str] = []

    def close_group() -> None:
        while len(group) < len(flow):
            group.append([""] * count)
        for k, line in enumerate(group):
            if flowing is not None:
                line[flowing] = flow[k] if k < len(flow) else ""
            out.append(draw(line))
        group.clear()

    for row in rows:
        if flowing is not None and row[flowing]:
            close_group()
            flow = _cell_lines(row[flowing], widths[flowing])
        group.extend(physical(row, skip=flowing))
    close_group()
    return out


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


HEADER = ("case", "implementation", "median", "cpu per call", "threads run", "ratio",
          "cpu ratio")
#: the header of a terminal too narrow for the first
NARROW_HEADER = ("case", "impl.", *HEADER[2:])
#: what the threads column says when the kernel's per-thread clocks could not tell
TOO_SHORT = "too short"
#: under the table: what its columns mean
LEGEND = (
    "ratio = reference time / workbench time for the same case (above 1: workbench is "
    "faster); cpu ratio: the same of CPU times. median: wall-clock time per call; cpu per "
    "call: this process's CPU time per call, all its threads together (the work done: on "
    "a loaded machine, or for a library using more threads than asked, the fairer "
    "per-core figure; spin-waiting threads inflate it); threads run: the threads of this "
    "process that got CPU time while the implementation ran (back-to-back: the most in "
    "one repeat, its own and any still spinning from the one before; interleaved: those "
    f"seen around its calls in an untimed interleaved round); '{TOO_SHORT}': its calls "
    "ran for less than Linux's 10 ms per-thread clock tick, too briefly to see which "
    "threads ran; '-': not known (no per-thread clocks on this system). [n] after an "
    "implementation: its note, numbered under the table.")


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _threads(value: int | None) -> str:
    if value is None:
        return "-"
    return TOO_SHORT if value == 0 else str(value)


def terminal_width(width: int | None) -> int:
    """`width`, or when None the columns of the terminal (COLUMNS, else the terminal's,
    else workbench's default)."""
    if width is not None:
        return width
    from workbench.cli.terminal import columns

    return columns()


def format_table(rows: list[Row], notes: list[str], headlines: list[str] | None = None,
                 width: int | None = None) -> str:
    """The headlines (in bold, above), the table of `rows` (one per measurement, each
    row's note a numbered footnote under it, its number beside the implementation),
    the legend and the `notes`, every line at most `width` columns where words allow.

    ratio = this row's time / workbench's time for the same case: above 1 means
    workbench is that many times faster; cpu ratio the same of CPU times."""
    width = terminal_width(width)
    footnotes: dict[str, int] = {}
    cells = []
    previous = None
    for row in rows:
        impl = row.impl
        if row.note:
            impl += f" [{footnotes.setdefault(row.note, len(footnotes) + 1)}]"
        cells.append((row.case if row.case != previous else "", impl,
                      format_seconds(row.seconds), format_seconds(row.cpu_seconds),
                      _threads(row.threads_run), _ratio(row.ratio), _ratio(row.cpu_ratio)))
        previous = row.case
    lines = [wrap(f"**{h}**", width) + "\n" for h in headlines or []]
    table = text_table(HEADER, cells, width, wrapped=(0, 1, 4), flowing=0)
    if max(len(line) for line in table) > width:
        table = text_table(NARROW_HEADER, cells, width, wrapped=(0, 1, 4), flowing=0)
    lines += table
    lines.append("")
    for note, number in footnotes.items():
        mark = f"[{number}] "
        lines.append(wrap(note, width, mark, " " * len(mark)))
    if footnotes:
        lines.append("")
    lines.append(wrap(LEGEND, width))
    lines += [wrap(n, width, "- ", "  ") for n in notes]
    return "\n".join(lines)
