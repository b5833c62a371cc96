"""RewriteStepper driven from Python: buttons, slider, list, filters, exclusions, checks."""

from __future__ import annotations

import re

import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import get_mode
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite import EquilibriumGraphRewriter, node_rewriter, rewrite_db
from workbench.examples import get_example
from workbench.widgets import RewriteStepper
from workbench.widgets.inner_graphs import holds_inner_graph
from workbench.widgets.rewrite_stepper import READABLE_VIEW, StepNavigator

REMOVED, INTRODUCED = "#d32f2f", "#2e7d32"


def log1p_graph():
    x = wt.dvector("x")
    return x, wt.log(1 + x) * 2 + wt.exp(x).sum()


def outlined(svg: str, colour: str) -> set[str]:
    """Keys of the node groups drawn with a highlight outline of `colour`."""
    return set(re.findall(r'<g class="node [a-z]+" id="([^"]+)"[^>]*><title>[^<]*</title>'
                          rf'<rect[^>]*stroke="{colour}" stroke-width="3"', svg))


@pytest.fixture
def stepper() -> RewriteStepper:
    return RewriteStepper(log1p_graph()[1])


def test_builds_on_the_first_step_with_classes_and_done_status(stepper):
    trace = stepper.trace
    assert stepper.status.value == "done"
    assert len(trace) >= 4 and stepper.steps == list(trace.steps)
    assert stepper.position == 1 and stepper.current is trace[1]
    assert len(stepper.step_list.options) == len(trace)
    assert stepper.step_list.value == 1
    assert f"data-steps='{len(trace)}'" in stepper.title.value
    for widget, css in [(stepper.next_button, "wb-next"), (stepper.prev_button, "wb-prev"),
                        (stepper.first_button, "wb-first"), (stepper.last_button, "wb-last"),
                        (stepper.slider, "wb-step-slider"), (stepper.step_list, "wb-step-list"),
                        (stepper.before_svg, "wb-before-svg"), (stepper.after_svg, "wb-after-svg"),
                        (stepper.check_button, "wb-check-step"), (stepper.rerun_button, "wb-rerun"),
                        (stepper.pass_filter, "wb-pass-filter")]:
        assert css in widget._dom_classes
    assert "wb-rewrite-stepper" in stepper._dom_classes
    # at the first step there is nowhere to go back to
    assert stepper.prev_button.disabled and stepper.first_button.disabled
    assert not stepper.next_button.disabled


def test_buttons_and_slider_move_through_the_steps(stepper):
    n = len(stepper.trace)
    stepper.next_button.click()
    assert stepper.position == 2 and stepper.current.index == 2
    assert "data-step='2'" in stepper.nav.label.value
    stepper.last_button.click()
    assert stepper.current.index == n and stepper.next_button.disabled
    stepper.prev_button.click()
    assert stepper.current.index == n - 1
    stepper.slider.value = 3  # dragging the slider
    assert stepper.current.index == 3 and stepper.step_list.value == 3
    stepper.step_list.value = 2  # picking a row of the list
    assert stepper.current.index == 2 and stepper.slider.value == 2
    stepper.first_button.click()
    assert stepper.current.index == 1 and stepper.status.value == "done"
    stepper.go(99)  # clamped
    assert stepper.current.index == n


def test_the_drawings_outline_what_the_step_removed_and_introduced(stepper):
    stepper.go_to_step(next(s.index for s in stepper.trace if s.rewrite == "local_log1p"))
    step, d = stepper.current, stepper.diff
    assert d.removed and d.introduced
    # an Apply and its output share a box: the boxes showing a changed node are marked
    assert outlined(stepper.before_svg.value, REMOVED) == d.changed_boxes("before")
    assert outlined(stepper.after_svg.value, INTRODUCED) == d.changed_boxes("after")
    assert d.changed_boxes("after") <= d.introduced
    # the diff of the two graphs is the step's own record
    assert sorted(stepper.trace.node_id(a) for a in d.removed_applies()) == \
        sorted(step.removed_ids)
    assert {a.op.scalar_op.name for a in d.introduced_applies()} == {"log1p"}
    info = stepper.step_info.value
    assert "local_log1p" in info and "stabilize" in info and f'data-step="{step.index}"' in info
    # the rewired input, printed before and after the step
    assert stepper.region_texts() == [("log(1.0 + x)", "log1p(x)")]
    assert "wb-region-before" in stepper.region.value and "log1p(x)" in stepper.region.value


def test_node_count_plot_is_a_png_redrawn_per_step(stepper):
    first = stepper.count_plot.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    stepper.next()
    assert stepper.count_plot.value[:4] == b"\x89PNG" and stepper.count_plot.value != first


def test_filter_by_pass_and_by_rewrite_name(stepper):
    trace = stepper.trace
    assert set(stepper.pass_filter.options) == {"(all)"} | {s.pass_ for s in trace}
    stepper.pass_filter.value = "canonicalize"  # what a person picks in the dropdown
    assert stepper.steps and all(s.pass_ == "canonicalize" for s in stepper.steps)
    assert len(stepper.step_list.options) == len(stepper.steps)
    assert stepper.slider.max == len(stepper.steps)
    stepper.set_filter(rewrite="elemwise_fusion")
    assert [s.rewrite for s in stepper.steps] == ["elemwise_fusion"]
    assert stepper.current.rewrite == "elemwise_fusion" and stepper.slider.disabled
    stepper.set_filter(pass_="canonicalize", rewrite="elemwise_fusion")  # nothing matches
    assert stepper.steps == [] and stepper.current is None
    assert "no rewrite step" in stepper.step_info.value and stepper.check_button.disabled
    stepper.set_filter()
    assert stepper.steps == list(trace.steps)
    with pytest.raises(ValueError, match="no_such_rewrite"):
        stepper.set_filter(rewrite="no_such_rewrite")


def test_filtering_keeps_the_current_step_when_it_passes(stepper):
    fusion = next(s.index for s in stepper.trace if s.pass_ == "fusion")
    stepper.go_to_step(fusion)
    stepper.pass_filter.value = "fusion"
    stepper.pass_filter.value = "(all)"
    assert stepper.current.index == fusion
    with pytest.raises(KeyError, match="not among the steps shown"):
        stepper.set_filter(pass_="fusion")
        stepper.go_to_step(1)


def test_excluding_a_rewrite_and_rerunning(stepper):
    before = stepper.trace
    assert "local_log1p" in before.rewrites_used()
    box = stepper.exclude_boxes["local_log1p"]
    assert "wb-exclude" in box._dom_classes and "wb-exclude-local_log1p" in box._dom_classes
    box.value = True
    stepper.rerun_button.click()
    after = stepper.trace
    assert after is not before and "local_log1p" not in after.rewrites_used()
    assert stepper.excluded == ["local_log1p"] and len(after) == len(before) - 1
    assert "excluded: local_log1p" in stepper.title.value
    final = wb.pprint(stepper.fgraph)
    assert "log1p" not in final and "log(" in final
    # the box stays, so the rewrite can be put back
    assert "local_log1p" in stepper.exclude_boxes and stepper.position == 1
    box.value = False
    stepper.rerun()
    assert "local_log1p" in stepper.trace.rewrites_used()
    with pytest.raises(ValueError, match="no rewrite named"):
        stepper.exclude(["not_a_rewrite"])


def test_check_step_compares_before_and_after_numerically(stepper):
    stepper.go_to_step(next(s.index for s in stepper.trace if s.rewrite == "local_log1p"))
    stepper.check_button.click()
    assert stepper.check_result == "ok" and stepper.status.value == "done"
    assert 'data-ok="true"' in stepper.check_output.value
    assert "same values before and after" in stepper.check_output.value
    stepper.next()
    assert stepper.check_output.value == ""  # a result belongs to one step


@node_rewriter([wt.exp.op])
def local_wrong_exp_to_sqr(fgraph, node):
    """Deliberately wrong: exp(x) is not x**2."""
    return [wt.sqr(node.inputs[0])]


def test_check_step_finds_a_wrong_rewrite():
    rewrite_db.register("test_stepper_wrong", EquilibriumGraphRewriter(
        [local_wrong_exp_to_sqr], name="test_stepper_wrong"), "test_stepper_wrong",
        position=2.5)
    try:
        x = wt.dvector("x")
        stepper = RewriteStepper(wt.exp(x) + 1.0,
                                 mode=get_mode("FAST_RUN").including("test_stepper_wrong"))
        wrong = next(s for s in stepper.trace if s.rewrite == "local_wrong_exp_to_sqr")
        stepper.set_filter(rewrite="local_wrong_exp_to_sqr")
        assert stepper.current is wrong
        assert stepper.check_step() is False
        assert stepper.check_result.startswith("mismatch")
        assert 'data-ok="false"' in stepper.check_output.value
        assert "CHANGED" in stepper.check_output.value
        # it runs inside the registered pass "test_stepper_wrong", not under its own name:
        # excluding it by name cannot work, and the stepper says so
        stepper.exclude("local_wrong_exp_to_sqr")
        assert any(s.rewrite == "local_wrong_exp_to_sqr" for s in stepper.trace)
        assert "could not exclude local_wrong_exp_to_sqr" in stepper.title.value
    finally:
        rewrite_db.remove("test_stepper_wrong")


def test_accepts_functions_graphs_and_examples_without_changing_them():
    x, y = log1p_graph()
    fgraph = FunctionGraph([x], [y])
    text = wb.pprint(fgraph)
    from_fgraph = RewriteStepper(fgraph)
    assert wb.pprint(fgraph) == text  # rewritten on a copy
    assert "local_log1p" in from_fgraph.trace.rewrites_used()
    fn = wb.function([x], y)
    from_function = RewriteStepper(fn, mode="FAST_COMPILE")
    assert from_function.status.value == "done"
    assert "local_log1p" not in from_function.trace.rewrites_used()  # not in FAST_COMPILE
    example = RewriteStepper(get_example("mlp"))
    assert len(example.trace) > 0 and example.position == 1
    # the numeric check uses the shared weights' values and the example's input shapes
    example.go_to_step(next(s.index for s in example.trace if s.rewrite == "elemwise_fusion"))
    assert example.check_step() is True
    assert "x (128, 784)" in example.check_output.value
    assert wb.pprint(y) == "log(1.0 + x) * 2.0 + sum(exp(x))"  # the user's graph is intact


def test_a_mode_without_rewrites_shows_no_step():
    x = wt.dvector("x")
    stepper = RewriteStepper(wt.exp(x), mode=wb.Mode("py", None))
    assert len(stepper.trace) == 0 and stepper.current is None
    assert "no rewrite step" in stepper.step_info.value
    assert "<svg" in stepper.before_svg.value and stepper.next_button.disabled
    assert stepper.count_plot.value[:4] == b"\x89PNG"


def test_bad_input_names_what_was_given():
    with pytest.raises(TypeError, match="RewriteStepper takes .* got int 3"):
        RewriteStepper(3)
    with pytest.raises(TypeError, match="got list"):
        RewriteStepper([1, 2])


def test_step_navigator_on_its_own():
    seen: list[int] = []
    nav = StepNavigator(seen.append, minimum=0, maximum=3)
    nav.next_button.click()
    nav.next_button.click()
    nav.last_button.click()
    nav.prev_button.click()
    nav.first_button.click()
    assert seen == [1, 2, 3, 2, 0]
    nav.set_range(1, 5, 4)
    assert nav.value == 4 and seen[-1] == 4


# -- pictures that show the change -------------------------------------------------------


def _boxes(svg_html: str) -> dict[str, tuple[float, float, float, float]]:
    """node key -> its rect (x, y, width, height), read from a drawing's SVG."""
    from workbench.testing.drawings import svg_layout

    svg = svg_html[svg_html.index("<svg"):svg_html.rindex("</svg>") + 6]
    return {k: (b.left, b.top, b.width, b.height) for k, b in svg_layout(svg).boxes.items()}


@pytest.fixture(scope="module")
def logistic_stepper() -> RewriteStepper:
    return RewriteStepper(get_example("logistic_regression"))


def test_an_unchanged_node_keeps_its_place_in_every_step_of_the_fusion_trace(
        logistic_stepper):
    stepper = logistic_stepper
    stepper.set_filter(pass_="fusion")
    try:
        assert len(stepper.steps) >= 2
        for position in range(1, len(stepper.steps) + 1):
            stepper.go(position)
            before, after = _boxes(stepper.before_svg.value), _boxes(stepper.after_svg.value)
            kept = set(before) & set(after)  # boxes of nodes the step left alone
            assert kept and kept <= stepper.diff.kept
            assert {k: before[k] for k in kept} == {k: after[k] for k in kept}
    finally:
        stepper.set_filter()


def test_the_fusion_step_frames_and_centres_the_change_with_one_removed_count(
        logistic_stepper):
    stepper = logistic_stepper
    fusion = next(s for s in stepper.trace.steps if s.rewrite == "elemwise_fusion")
    stepper.go_to_step(fusion.index)
    assert "Rewriting cost" in stepper.title.value  # the output's name, not a pprint
    text = stepper.headline.value + stepper.step_info.value
    # one count of what was removed (Apply nodes), the same wherever it is said
    assert set(re.findall(r"removed (\d+)", text)) == {str(len(fusion.removed))}
    assert f"removed {len(fusion.removed)}" in stepper.headline.value
    views = []
    for svg, kind in ((stepper.before_svg.value, "removed"),
                      (stepper.after_svg.value, "introduced")):
        frame = re.search(r'class="changed-region" x="([-0-9.]+)" y="([-0-9.]+)" '
                          r'width="([0-9.]+)" height="([0-9.]+)"', svg)
        focus = re.search(r'data-focus="([-0-9.]+) ([-0-9.]+) ([0-9.]+) ([0-9.]+)"', svg)
        view = re.search(r'viewBox="([-0-9.]+) ([-0-9.]+) ([0-9.]+) ([0-9.]+)"', svg)
        fx, fy, fw, fh = map(float, frame.groups())
        vx, vy, vw, vh = map(float, view.groups())
        assert vx <= fx and fx + fw <= vx + vw and vy <= fy and fy + fh <= vy + vh
        # both sides show the same window, centred on all the step changed
        views.append((vx, vy, vw, vh))
        cx, cy, cw, ch = map(float, focus.groups())
        assert abs((vx + vw / 2) - (cx + cw / 2)) < 1 and abs((vy + vh / 2) - (cy + ch / 2)) < 1
        assert f'data-highlight="{kind}"' in svg
    assert views[0] == views[1]
    # the fused node: its caption wraps in the box, its whole formula is its hover text
    composite = next(a for a in stepper.diff.introduced_applies() if "Composite" in str(a.op))
    from workbench.inspector import node_key

    title = re.search(rf'id="{node_key(composite)}"[^>]*><title>([^<]*)</title>',
                      stepper.after_svg.value)
    assert str(composite.op) in title.group(1).replace("&gt;", ">").replace("&lt;", "<")


def test_the_inplace_step_keeps_the_output_named_cost(logistic_stepper):
    step = next(s for s in logistic_stepper.trace.steps if s.rewrite == "inplace")
    logistic_stepper.go_to_step(step.index)
    assert [o.name for o in logistic_stepper.trace.graph_at(step.index).outputs] == ["cost"]
    assert ">→ cost</text>" in logistic_stepper.after_svg.value  # the inplace node makes cost


def test_a_title_falls_back_to_a_short_pprint():
    from workbench.widgets._common import graph_title

    x = wt.dvector("x")
    assert graph_title([wt.log(1 + x)]) == " ".join(wb.pprint(wt.log(1 + x)).split())
    long = wt.exp(x)
    for _ in range(20):
        long = wt.exp(long) + x
    assert len(graph_title([long])) <= 48 and graph_title([long]).endswith("…")


def test_a_step_rewriting_a_loop_body_lists_the_body_steps():
    import numpy as np

    x = wt.dvector("x")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * 0.5 + xt) * 1.0, sequences=x,
                    outputs_info=np.float64(0), name="tiny")
    stepper = RewriteStepper(hs)
    index = next(s.index for s in stepper.trace.steps if s.rewrite == "rewrite_inner_graph")
    stepper.go_to_step(index)
    info = stepper.step_info.value
    assert "inside Scan{tiny, for}" in info and "local_mul_one" in info


def test_a_loop_in_the_drawings_expands_into_its_body_and_collapses_again():
    import numpy as np

    x = wt.dvector("x")
    w = wt.dscalar("w")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * w + xt), sequences=x,
                    outputs_info=np.float64(0), name="rnn")
    stepper = RewriteStepper(hs * 2.0)
    stepper.last()
    closed = set(stepper.diff.before.nodes)
    assert stepper.expand_button.layout.display == ""
    assert stepper.expand_button.description == "expand loop"
    stepper.expand_button.click()
    assert stepper.expand_button.description == "collapse loop"
    opened = set(stepper.diff.before.nodes)
    assert closed < opened
    body = [d for k, d in stepper.diff.before.nodes(data=True) if k in opened - closed]
    assert any(d.get("op_class") == "Elemwise" and "tanh" in str(d["op"]) for d in body)
    # the body's nodes are drawn on both sides, outlined dashed
    assert "data-inner-of" in stepper.before_svg.value
    assert "data-inner-of" in stepper.after_svg.value
    # each side is centred on its opened loop and body, not on the step's change, with
    # text readable (a body too big for the view shown from its top left)
    scan = next(stepper.expanded.__iter__())
    label = next(d["label"] for d in stepper.diff.before.nodes.values() if d["obj"] is scan)
    for side, holder in (("before", stepper.before_svg), ("after", stepper.after_svg)):
        g = getattr(stepper.diff, side)
        key = next(k for k, d in g.nodes(data=True)
                   if d["label"] == label and holds_inner_graph(d["obj"]))
        inside = {k for k, d in g.nodes(data=True) if d.get("inner_of") == key}
        focus = focus_of(stepper.diff.to_svg(side, legend=False, merge=True,
                                             focus={key} | inside))
        assert focus_of(holder.value) == focus
        assert focus != focus_of(stepper.diff.to_svg(side, legend=False, merge=True))
        assert view_box(holder.value) == centred_on(focus, READABLE_VIEW, drawing=view_box(
            stepper.diff.to_svg(side, legend=False, merge=True, focus={key} | inside)))
    stepper.collapse(scan)
    assert set(stepper.diff.before.nodes) == closed
    focus = focus_of(stepper.diff.to_svg("before", legend=False, merge=True))  # the change again
    assert view_box(stepper.before_svg.value) == centred_on(focus)
    assert stepper.expand_button.description == "expand loop"


def focus_of(svg: str) -> tuple[float, ...]:
    """The region an inspector SVG asks a viewer to show (its `data-focus`)."""
    return tuple(float(v) for v in re.search(r'data-focus="([^"]*)"', svg).group(1).split())


def view_box(svg: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.search(r'viewBox="([^"]*)"', svg).group(1).split())


def centred_on(region: tuple[float, ...], most: tuple[float, float] | None = None,
               drawing: tuple[float, ...] | None = None) -> tuple[float, ...]:
    """The viewBox `svg_for_widget` centres on `region` (at least 600x500 of context; at
    most `most`, then from the region's top left with a margin of 20 to the far edges
    of the `drawing`'s viewBox, drawn at its own size for the holder to scroll)."""
    x, y, w, h = region
    view = []
    too_big = False
    for start, size, least, limit in zip((x, y), (w, h), (600.0, 500.0), most or (1e9, 1e9)):
        length = max(size + 40.0, least)
        too_big |= length > limit
        view.append((start - 20.0, limit) if length > limit
                    else (start + size / 2 - length / 2, length))
    (x0, vw), (y0, vh) = view
    if too_big:
        bx, by, bw, bh = drawing
        vw, vh = bx + bw - x0, by + bh - y0
    return tuple(round(v, 1) for v in (x0, y0, vw, vh))
