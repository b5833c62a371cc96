// GraphCanvas: draws the layout data Python sends (model "graph") as SVG and lets a
// person pan (drag), zoom (wheel, around the pointer), select (click; synced back
// as "selected") and read details (hover). Python owns layout, labels and values;
// this file only draws and handles the pointer. No dependencies, no network.

const SVG_NS = "http://www.w3.org/2000/svg";
const MAX_FIT_SCALE = 1.5;   // "fit" never blows a small graph up further than this
const FIT_MARGIN = 8;        // px kept free around the graph when fitting
const MIN_ZOOM = 0.2, MAX_ZOOM = 8;
const CLICK_SLOP = 4;        // px a pointer may move and still count as a click

function make(tag, attrs, parent) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) element.setAttribute(name, value);
  if (parent) parent.appendChild(element);
  return element;
}

function formatZoom(zoom) {
  return String(Number(zoom.toFixed(3)));
}

function render({ model, el }) {
  el.classList.add("wb-graph-canvas");
  const holder = document.createElement("div");
  holder.className = "wb-svg-holder";
  el.appendChild(holder);
  const root = make("svg", { class: "wb-graph-svgroot", width: "100%", height: "100%" }, holder);
  const defs = make("defs", {}, root);
  const marker = make("marker", {
    id: "wb-arrow-" + Math.random().toString(36).slice(2), viewBox: "0 0 10 10", refX: "10",
    refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse",
  }, defs);
  make("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#555" }, marker);
  const viewport = make("g", { class: "wb-viewport" }, root);
  const tooltip = document.createElement("div");
  tooltip.className = "wb-tooltip";
  el.appendChild(tooltip);
  const hbar = document.createElement("div");
  hbar.className = "wb-scrollbar wb-hbar";
  const vbar = document.createElement("div");
  vbar.className = "wb-scrollbar wb-vbar";
  holder.append(hbar, vbar);
  const hint = document.createElement("div");
  hint.className = "wb-hint";
  hint.textContent = "drag to move · wheel to zoom · double-click to fit · click a node to select it";
  el.appendChild(hint);

  const state = { base: 1, zoom: model.get("zoom") || 1, tx: 0, ty: 0, fitted: false };
  let nodesByKey = new Map();   // drawn box key -> its data
  let boxOf = new Map();        // any graph node key -> the box that shows it
  let saveTimer = null;

  const scale = () => state.base * state.zoom;
  const data = () => model.get("graph") || { nodes: [], edges: [], width: 0, height: 0 };

  function applyTransform() {
    viewport.setAttribute("transform",
      `translate(${state.tx.toFixed(2)},${state.ty.toFixed(2)}) scale(${scale()})`);
    holder.dataset.zoom = formatZoom(state.zoom);
    holder.dataset.scale = scale().toFixed(4);
    updateScrollbars();
  }

  function updateScrollbars() {
    const { width, height } = data();
    const vw = holder.clientWidth, vh = holder.clientHeight;
    const gw = width * scale(), gh = height * scale();
    for (const [bar, view, size, offset, horizontal] of
      [[hbar, vw, gw, state.tx, true], [vbar, vh, gh, state.ty, false]]) {
      if (size <= view + 1 || view <= 0) { bar.style.display = "none"; continue; }
      const length = Math.max(24, view * view / size);
      const start = Math.min(Math.max(-offset / (size - view), 0), 1) * (view - length);
      bar.style.display = "block";
      if (horizontal) { bar.style.left = `${start}px`; bar.style.width = `${length}px`; }
      else { bar.style.top = `${start}px`; bar.style.height = `${length}px`; }
    }
  }

  function clampPan() {
    // keep at least a corner of the graph in view
    const { width, height } = data();
    const vw = holder.clientWidth, vh = holder.clientHeight, keep = 60;
    state.tx = Math.min(Math.max(state.tx, keep - width * scale()), vw - keep);
    state.ty = Math.min(Math.max(state.ty, keep - height * scale()), vh - keep);
  }

  function focusRegion() {
    // [left, top, right, bottom] of the focused node and of the nodes of its opened inner
    // graph (an expanded loop and its body), or null
    const focus = model.get("focus");
    if (!focus) return null;
    const boxes = data().nodes.filter((node) =>
      node.members.includes(focus) || node.inner_of === focus);
    if (!boxes.length) return null;
    return [Math.min(...boxes.map((n) => n.x - n.w / 2)), Math.min(...boxes.map((n) => n.y - n.h / 2)),
      Math.max(...boxes.map((n) => n.x + n.w / 2)), Math.max(...boxes.map((n) => n.y + n.h / 2))];
  }

  function centred(view, start, size, s) {
    // the translation putting [start, start + size] in the middle of the view, or its
    // start at the margin when it is longer than the view
    return size * s <= view - 2 * FIT_MARGIN ? (view - size * s) / 2 - start * s
      : FIT_MARGIN - start * s;
  }

  function fit() {
    const { width, height } = data();
    const vw = holder.clientWidth, vh = holder.clientHeight;
    if (!vw || !vh || !width || !height) return;
    const fitScale = Math.min((vw - 2 * FIT_MARGIN) / width, (vh - 2 * FIT_MARGIN) / height,
      MAX_FIT_SCALE);
    const minFont = data().min_font_px || 11;
    // never shrink the smallest text below min_font_px: scroll instead
    state.base = Math.max(fitScale, minFont / (data().font_size || 12));
    state.zoom = 1;
    const s = scale();
    const region = focusRegion();
    if (region && (width * s > vw || height * s > vh)) {
      // too big for the view: the opened loop and its body in the middle of it
      state.tx = centred(vw, region[0], region[2] - region[0], s);
      state.ty = centred(vh, region[1], region[3] - region[1], s);
    } else {
      state.tx = (vw - width * s) / 2;
      state.ty = height * s <= vh ? (vh - height * s) / 2 : FIT_MARGIN;
    }
    state.fitted = true;
    applyTransform();
  }

  function zoomAt(zoom, px, py) {
    zoom = Math.min(Math.max(zoom, MIN_ZOOM), MAX_ZOOM);
    const s = scale();
    const gx = (px - state.tx) / s, gy = (py - state.ty) / s;
    state.zoom = zoom;
    state.tx = px - gx * scale();
    state.ty = py - gy * scale();
    clampPan();
    applyTransform();
  }

  function centreOf(key) {
    const node = boxOf.get(key);
    if (!node) return null;
    return [state.tx + node.x * scale(), state.ty + node.y * scale()];
  }

  function reveal(key) {
    // pan just enough to bring a node fully into view
    const node = boxOf.get(key);
    if (!node) return;
    const s = scale(), vw = holder.clientWidth, vh = holder.clientHeight, pad = 20;
    const left = state.tx + (node.x - node.w / 2) * s, right = state.tx + (node.x + node.w / 2) * s;
    const top = state.ty + (node.y - node.h / 2) * s, bottom = state.ty + (node.y + node.h / 2) * s;
    if (left < pad) state.tx += pad - left; else if (right > vw - pad) state.tx -= right - vw + pad;
    if (top < pad) state.ty += pad - top; else if (bottom > vh - pad) state.ty -= bottom - vh + pad;
    applyTransform();
  }

  function focusKey() {
    // what the view keeps in sight: the clicked node, else the node a host outlines
    // as "selected" (e.g. the GradExplorer's current step)
    const highlight = model.get("highlight") || {};
    return model.get("selected") || Object.keys(highlight).find((k) => highlight[k] === "selected");
  }

  function outline(node) {
    // [stroke, stroke width, fill]: a host's highlight fills the box (removed, introduced)
    // and outlines it; the clicked node is outlined in the "selected" colour
    const highlights = data().highlights || {};
    const style = (data().styles || {})[node.kind] || { fill: "#eee", stroke: "#333" };
    const highlight = model.get("highlight") || {};
    const kind = node.members.map((key) => highlight[key]).find((k) => k);
    const look = highlights[kind] || {};
    const fill = look.fill || style.fill;
    if (node.members.includes(model.get("selected"))) {
      return [(highlights.selected || {}).stroke || "#ff9800", 3, fill];
    }
    if (kind) return [look.stroke || "#ff9800", 3, fill];
    return [style.stroke, 1, fill];
  }

  function paintOutlines() {
    for (const group of viewport.querySelectorAll("g.node")) {
      const node = nodesByKey.get(group.id);
      const [stroke, width, fill] = outline(node);
      const rect = group.querySelector("rect");
      rect.setAttribute("stroke", stroke);
      rect.setAttribute("stroke-width", String(width));
      rect.setAttribute("fill", fill);
      group.classList.toggle("wb-selected", node.members.includes(model.get("selected")));
    }
  }

  function draw() {
    viewport.replaceChildren();
    const graph = data();
    nodesByKey = new Map(graph.nodes.map((node) => [node.key, node]));
    boxOf = new Map(graph.nodes.flatMap((node) => node.members.map((key) => [key, node])));
    const fontSize = graph.font_size || 12, lineHeight = graph.line_height || 15;
    for (const frame of graph.frames || []) {
      // an expanded inner graph (a loop's body), behind everything else
      const group = make("g", { class: "inner-graph", "data-of": frame.of }, viewport);
      make("rect", {
        x: frame.left, y: frame.top, width: frame.width, height: frame.height, rx: 8,
        fill: "#f3f6fa", stroke: "#7a8ca3", "stroke-width": "1.5", "stroke-dasharray": "8 4",
      }, group);
      const title = make("text", {
        x: frame.left + 6, y: frame.top + 11 + fontSize * 0.35, fill: "#4a5a70",
        "font-size": fontSize,
      }, group);
      title.textContent = frame.title;
    }
    const edges = make("g", { class: "edges" }, viewport);
    for (const edge of graph.edges) {
      const line = make("polyline", {
        class: edge.feeds ? "edge feeds" : "edge",
        points: edge.points.map((p) => p.join(",")).join(" "), fill: "none",
        stroke: "#555", "stroke-width": "1.3", "marker-end": `url(#${marker.id})`,
        "data-source": edge.source, "data-target": edge.target,
      }, edges);
      if (edge.feeds) line.setAttribute("stroke-dasharray", "5 3");
    }
    const styles = graph.styles || {};
    for (const node of graph.nodes) {
      const style = styles[node.kind] || { fill: "#eee", stroke: "#333" };
      const group = make("g", {
        class: `node ${node.kind}`, id: node.key, "data-label": node.letter,
      }, viewport);
      const rect = make("rect", {
        x: node.x - node.w / 2, y: node.y - node.h / 2, width: node.w, height: node.h,
        rx: node.rounded ? 9 : 2, fill: style.fill, stroke: style.stroke, "stroke-width": "1",
      }, group);
      if (node.inner) rect.setAttribute("stroke-dasharray", "4 2");  // inside a loop body
      const top = node.y - (node.lines.length * lineHeight) / 2;
      node.lines.forEach((line, i) => {
        // baseline: the middle of the line plus about a third of the font's height
        const text = make("text", {
          x: node.x, y: top + (i + 0.5) * lineHeight + fontSize * 0.35, "text-anchor": "middle",
          "font-size": fontSize, class: `wb-${line.role}`,
        }, group);
        text.textContent = line.text;
      });
    }
    paintOutlines();
  }

  function showTooltip(node, event) {
    tooltip.textContent = node.hover;
    tooltip.style.display = "block";
    const box = el.getBoundingClientRect();
    let left = event.clientX - box.left + 14, top = event.clientY - box.top + 14;
    const width = tooltip.offsetWidth, height = tooltip.offsetHeight;
    if (left + width > box.width) left = Math.max(0, event.clientX - box.left - width - 14);
    if (top + height > box.height) top = Math.max(0, event.clientY - box.top - height - 14);
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${top}px`;
  }

  function saveZoom() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => {
      model.set("zoom", state.zoom);
      model.save_changes();
    }, 150);
  }

  // -- pointer: drag pans, a click without moving selects --------------------------------
  let drag = null;
  holder.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    const group = event.target.closest && event.target.closest("g.node");
    drag = { x: event.clientX, y: event.clientY, tx: state.tx, ty: state.ty, moved: false,
      key: group ? group.id : null, id: event.pointerId };
    holder.setPointerCapture(event.pointerId);
    tooltip.style.display = "none";  // out of the way of what the click selects
    event.preventDefault();
  });
  holder.addEventListener("pointermove", (event) => {
    if (drag && drag.id === event.pointerId) {
      const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < CLICK_SLOP) return;
      drag.moved = true;
      holder.classList.add("wb-dragging");
      tooltip.style.display = "none";
      state.tx = drag.tx + dx;
      state.ty = drag.ty + dy;
      clampPan();
      applyTransform();
      return;
    }
    const group = event.target.closest && event.target.closest("g.node");
    if (group && nodesByKey.has(group.id)) showTooltip(nodesByKey.get(group.id), event);
    else tooltip.style.display = "none";
  });
  const endDrag = (event) => {
    if (!drag || drag.id !== event.pointerId) return;
    if (!drag.moved && drag.key && event.type === "pointerup") {
      model.set("selected", drag.key);
      model.save_changes();
      paintOutlines();
    }
    holder.classList.remove("wb-dragging");
    drag = null;
  };
  holder.addEventListener("pointerup", endDrag);
  holder.addEventListener("pointercancel", endDrag);
  holder.addEventListener("pointerleave", () => { if (!drag) tooltip.style.display = "none"; });
  holder.addEventListener("dblclick", (event) => {
    if (event.target.closest && event.target.closest("g.node")) return;
    fit();  // double-click the background: back to "fit"
    saveZoom();
  });
  holder.addEventListener("wheel", (event) => {
    event.preventDefault();
    const box = holder.getBoundingClientRect();
    const step = event.deltaMode === 1 ? event.deltaY * 20 : event.deltaY;
    const factor = Math.exp(-Math.max(-300, Math.min(300, step)) * 0.002);
    zoomAt(state.zoom * factor, event.clientX - box.left, event.clientY - box.top);
    saveZoom();
  }, { passive: false });

  // -- model changes ---------------------------------------------------------------------
  const onGraph = () => {
    const keepView = state.fitted;
    draw();
    if (!keepView) fit(); else applyTransform();
  };
  const onSelected = () => {
    paintOutlines();
    const key = focusKey();
    if (key) reveal(key);
  };
  const onZoom = () => {
    const zoom = model.get("zoom");
    if (Math.abs(zoom - state.zoom) < 1e-9) return;
    // zoom around the selection when there is one, else around the middle of the view
    const key = focusKey();
    const anchor = centreOf(key) || [holder.clientWidth / 2, holder.clientHeight / 2];
    zoomAt(zoom, anchor[0], anchor[1]);
    if (key) reveal(key);
  };
  const onHeight = () => { holder.style.height = `${model.get("height")}px`; };
  const onMessage = (message) => {
    if (message && message.command === "fit") fit();
  };
  const handlers = {
    "change:graph": onGraph, "change:selected": onSelected, "change:highlight": onSelected,
    "change:zoom": onZoom, "change:height": onHeight, "msg:custom": onMessage,
    "change:focus": () => fit(),
  };
  for (const [event, handler] of Object.entries(handlers)) model.on(event, handler);

  onHeight();
  draw();
  // the element gets its size once it is attached: fit then, and again when the
  // width changes while nobody has moved the view
  let lastWidth = 0;
  const observer = new ResizeObserver(() => {
    const width = holder.clientWidth;
    if (!width || width === lastWidth) return;
    const first = lastWidth === 0;
    lastWidth = width;
    if (first || state.zoom === 1) {
      const zoom = model.get("zoom") || 1;
      fit();
      if (Math.abs(zoom - 1) > 1e-9) zoomAt(zoom, holder.clientWidth / 2, holder.clientHeight / 2);
      const key = focusKey();
      if (key) reveal(key);
    } else applyTransform();
  });
  observer.observe(holder);

  return () => {
    observer.disconnect();
    clearTimeout(saveTimer);
    for (const [event, handler] of Object.entries(handlers)) model.off(event, handler);
  };
}

export default { render };
