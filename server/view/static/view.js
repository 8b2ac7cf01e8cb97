/* The kdd view page: diagnostics, the check, config, IR after a pass (with diffs), assembly with register
 * pressure and instruction docs, instruction mix and roofline. It renders what kdd answers and computes
 * nothing itself (see model.js).
 *
 * One page, two transports: in a browser (kdd view) requests go to POST /rpc and kdd/compiled and
 * kdd/checked events come from /events; inside VS Code's webview they go through postMessage to the
 * extension, which asks the language server the same methods and forwards its notifications. */
(function () {
  "use strict";
  const M = window.kddModel;
  const $ = (id) => document.getElementById(id);
  const EVENTS = ["kdd/compiled", "kdd/checked"];

  function vscodeTransport(vscode) {
    let next = 1;
    const waiting = new Map();
    const listeners = [];
    window.addEventListener("message", (e) => {
      const m = e.data || {};
      if (m.type === "response" && waiting.has(m.id)) {
        const { resolve, reject } = waiting.get(m.id);
        waiting.delete(m.id);
        if (m.error) reject(m.error); else resolve(m.result);
      } else if (m.type === "event") {
        listeners.forEach((f) => f(m.event, m.params));
      }
    });
    return {
      embedded: true,
      request(method, params) {
        const id = next++;
        return new Promise((resolve, reject) => {
          waiting.set(id, { resolve, reject });
          vscode.postMessage({ type: "request", id, method, params });
        });
      },
      onEvent(f) { listeners.push(f); vscode.postMessage({ type: "ready" }); },
      reveal(range) { vscode.postMessage({ type: "reveal", range }); },
    };
  }

  function httpTransport() {
    return {
      embedded: false,
      async request(method, params) {
        const r = await fetch("rpc", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ method, params }) });
        const answer = await r.json();
        if (answer.error) throw answer.error;
        return answer.result;
      },
      onEvent(f) {
        const events = new EventSource("events");
        for (const name of EVENTS) events.addEventListener(name, (e) => f(name, JSON.parse(e.data)));
        events.onerror = () => setStatus("kdd view: disconnected (is kdd view still running?)");
      },
      reveal(range) { selectConfigLine(range ? range.start.line : -1, false, true); },
    };
  }

  const transport = typeof acquireVsCodeApi === "function" ? vscodeTransport(acquireVsCodeApi()) : httpTransport();
  const state = { compiled: null, checked: null, passes: [], ir: null, asm: null, stats: null, generation: 0,
                  configText: "", bands: new Map() };
  if (transport.embedded) document.body.classList.add("embedded");

  function setStatus(text) { $("status").textContent = text; }

  function showStatus() {
    const version = state.compiled ? state.compiled.version : null;
    setStatus(M.statusText(state.compiled, null, version));
    const check = M.checkText(state.checked, version);
    $("check").textContent = check;
    $("check").className = "check " + (check === "check ✓" ? "ok" : check === "check …" || !check ? "" : "bad");
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /** A row's text as coloured spans (model.tokens), after `prefix` nodes. */
  function colored(row, kind, text) {
    for (const [cls, part] of M.tokens(kind, text)) row.append(cls ? el("span", `t-${cls}`, part) : document.createTextNode(part));
    return row;
  }

  function band(row, line) {
    const b = line === null ? undefined : state.bands.get(line);
    if (b !== undefined) row.classList.add(`band${b}`);
  }

  // ---- diagnostics and the check ---------------------------------------------

  function renderDiagnostics(list) {
    const ul = $("diagnostics");
    ul.replaceChildren();
    ul.hidden = !list.length;
    for (const d of list) {
      const at = d.range.start;
      const li = el("li", `diag sev-${d.severity}`);
      li.dataset.line = at.line;
      li.append(el("span", "sev", d.severity), el("span", "pos", `${at.line + 1}:${at.character + 1}`),
        document.createTextNode(d.message), el("span", "dim", ` [${d.code}${d.source ? `, ${d.source}` : ""}]`));
      li.title = "show this line of the config";
      li.onclick = () => selectConfigLine(at.line, false, true);
      ul.append(li);
    }
  }

  async function runCheck() {
    const button = $("run-check");
    button.disabled = true;
    button.textContent = "checking…";
    const version = state.compiled ? state.compiled.version : null;
    try {
      const result = await transport.request("kdd/check", {});
      if (!state.checked || state.checked.version === null || state.checked.version <= version) {
        state.checked = { version, result };
      }
    } catch (err) {
      state.checked = { version, result: { ok: false, failure: true, error: err.message } };
    } finally {
      button.disabled = false;
      button.textContent = "Run check";
      showStatus();
    }
  }

  // ---- config -------------------------------------------------------------

  function renderConfig(text) {
    const pre = $("config");
    pre.replaceChildren();
    text.split("\n").forEach((line, i) => {
      const row = el("div");
      row.dataset.line = i;
      row.append(el("span", "ln", String(i + 1)));
      colored(row, "config", line);
      band(row, i);
      row.onclick = () => selectConfigLine(i, false);
      pre.append(row);
    });
  }

  function markConfig(lines, scroll) {
    const rows = $("config").children;
    for (const r of rows) r.classList.toggle("hl", lines.includes(Number(r.dataset.line)));
    if (scroll && lines.length && rows[lines[0]]) rows[lines[0]].scrollIntoView({ block: "center" });
  }

  /** A config line chosen (a click here, a diagnostic, or the editor's cursor): its IR and assembly lines
   * light up. */
  function selectConfigLine(line, fromEditor, scroll) {
    if (!fromEditor) markConfig([line], Boolean(scroll));
    mark("ir", state.ir ? M.entriesForConfigLine(state.ir.lines, line, M.irRange) : []);
    mark("asm", state.asm ? M.entriesForConfigLine(state.asm.lines, line, M.asmRange) : []);
  }

  function mark(id, indices) {
    const rows = $(id).children;
    for (const r of rows) r.classList.toggle("hl", false);
    indices.forEach((i) => rows[i] && rows[i].classList.add("hl"));
    if (indices.length && rows[indices[0]]) rows[indices[0]].scrollIntoView({ block: "center" });
  }

  /** The colour bands of the current IR and assembly, and the config repainted with them. */
  function renderBands() {
    const irLines = state.ir ? state.ir.lines.map((e) => M.originLine(M.irRange(e))) : [];
    const asmLines = state.asm ? state.asm.lines.map((l) => M.originLine(M.asmRange(l))) : [];
    state.bands = M.bands([irLines, asmLines]);
    if (!transport.embedded) renderConfig(state.configText);
    for (const [id, lines] of [["ir", irLines], ["asm", asmLines]]) {
      [...$(id).children].forEach((row, i) => {
        row.classList.remove(...[...row.classList].filter((c) => c.startsWith("band")));
        band(row, lines[i] ?? null);
      });
    }
  }

  // ---- IR -----------------------------------------------------------------

  function renderPassPicker() {
    const select = $("pass");
    const current = select.value || "final";
    const names = M.pickablePasses(state.passes, $("only-changed").checked);
    select.replaceChildren(...names.map((n) => {
      const o = el("option", "", n);
      o.value = n;
      return o;
    }));
    select.value = names.includes(current) ? current : "final";
  }

  async function loadIR(generation) {
    const pass = $("pass").value || "final";
    const diff = $("diff").checked && pass !== "build" && pass !== "final";
    let ir;
    try {
      ir = await transport.request("kdd/irAfterPass", { pass, diff });
    } catch (err) {
      ir = { ok: false, error: err.message };
    }
    if (generation !== state.generation) return;
    state.ir = ir.ok && !diff ? ir : null; // a diff's lines are not the IR's line map
    const pre = $("ir");
    pre.replaceChildren();
    if (!ir.ok) {
      pre.append(el("div", "error", ir.error));
      return;
    }
    if (diff) {
      for (const line of ir.diff.split("\n")) {
        const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
        pre.append(el("div", cls, line));
      }
      return;
    }
    ir.text.split("\n").forEach((line, i) => {
      const row = colored(el("div"), "ir", line);
      const range = M.irRange(ir.lines[i]);
      if (range) row.onclick = () => transport.reveal(range);
      if (range) row.title = `from ${ir.lines[i].origin.knob || ir.lines[i].origin.step} (config line ${range.start.line + 1})`;
      pre.append(row);
    });
  }

  // ---- assembly and register pressure --------------------------------------

  async function loadAssembly(generation) {
    let lst = null;
    let error = null;
    try {
      lst = M.listing(await transport.request("kdd/assembly", {}));
    } catch (err) {
      error = err.message || String(err);
    }
    if (generation !== state.generation) return;
    state.asm = lst;
    showAssemblyError(error);
    $("asm").replaceChildren();
    $("asm-summary").textContent = "";
    if (lst) renderAssembly(lst);
    renderPressure();
    renderMix(lst);
  }

  function showAssemblyError(error) {
    const box = $("asm-error");
    box.hidden = !error;
    box.textContent = error ? `Assembly unavailable: ${error}` : "";
  }

  function renderAssembly(lst) {
    const budget = lst.registers.budget;
    const kind = lst.target && lst.target.startsWith("sm_") ? "ptx" : "xe";
    lst.lines.forEach((line, i) => {
      const row = el("div");
      row.dataset.line = i;
      row.append(el("span", "regs", line.live_regs === null ? "" : String(line.live_regs)),
        el("span", `heat h${M.heat(line.live_regs, budget)}`));
      colored(row, kind, line.text);
      if (line.config_range) row.onclick = () => transport.reveal(line.config_range);
      row.onmouseenter = () => hoverLine(i);
      $("asm").append(row);
    });
    $("asm-summary").textContent = `registers ${M.registerText(lst.registers)}`;
  }

  let hoverTimer = null;
  let hovered = -1;

  /** After a short rest on an assembly line: its instruction's documentation and live buffers (kdd/asmHover). */
  function hoverLine(index) {
    clearTimeout(hoverTimer);
    hoverTimer = setTimeout(async () => {
      if (hovered === index) return;
      hovered = index;
      const generation = state.generation;
      let hover;
      try {
        hover = await transport.request("kdd/asmHover", { line: index });
      } catch (err) {
        hover = null;
      }
      if (generation !== state.generation || hovered !== index) return;
      renderDoc(hover);
    }, 120);
  }

  function renderDoc(hover) {
    const box = $("asm-doc");
    box.replaceChildren();
    box.classList.toggle("dim", !hover || !hover.doc);
    if (!hover) return;
    box.dataset.line = hover.line;
    if (hover.doc) {
      const d = hover.doc;
      box.append(el("strong", "", d.mnemonic), document.createTextNode(` — ${d.summary}`), el("br"),
        el("span", "dim", "operands: "), document.createTextNode(d.operands), el("span", "dim", " · pipe: "),
        document.createTextNode(d.pipe));
    } else {
      box.append(document.createTextNode(hover.text.trim()));
    }
    if (hover.live.length) {
      box.append(el("br"), el("span", "dim", "live: "), document.createTextNode(hover.live
        .map((b) => (b.regs === null ? b.label : `${b.label} ${b.regs}`)).join(", ")));
    }
    for (const s of hover.sass) {
      box.append(el("br"), el("span", "dim", "SASS "), el("code", "", s.text),
        document.createTextNode(s.doc ? ` — ${s.doc.summary} (${s.doc.pipe})` : ""));
    }
    if (hover.doc) box.append(el("div", "source dim", `source: ${hover.doc.source}`));
  }

  function plotWidth(box, fallback) {
    return Math.max(240, Math.floor(box.clientWidth || fallback) - 8);
  }

  /** Live registers per assembly line against the budget, stacked by buffer category (each its own colour),
   * with axes; hovering a column names the line and scrolls the listing to it. Without assembly, the
   * compile's register figure by label against the budget. */
  function renderPressure() {
    const box = $("pressure");
    box.replaceChildren();
    $("pressure-info").textContent = "";
    if (state.asm && state.asm.lines.length) {
      const s = M.pressureSeries(state.asm);
      const W = plotWidth(box, 360), H = 110, L = 34, B = 18, T = 12;
      const top = Math.max(s.budget || 0, s.peak) || 1;
      const plotW = W - L - 4;
      const dx = plotW / s.points.length;
      const Y = (v) => T + H - (H * v) / top;
      const plot = svg("svg", { width: W, height: T + H + B + 14, "data-kind": "per-line", "data-peak": s.peak,
        "data-budget": s.budget ?? "", "data-points": s.points.length });
      s.points.forEach((p) => {
        let y = H;
        s.labels.forEach((label) => {
          const h = (H * (p.byLabel[label] || 0)) / top;
          y -= h;
          if (h > 0) plot.append(svg("rect", { x: L + p.line * dx, y: T + y, width: Math.max(dx, 0.5), height: h,
            fill: M.categoryColor(label), "data-category": label }));
        });
      });
      // axes: registers up the left, assembly lines along the bottom
      plot.append(svg("line", { x1: L, x2: L, y1: T, y2: T + H, class: "axis" }),
        svg("line", { x1: L, x2: L + plotW, y1: T + H, y2: T + H, class: "axis" }));
      for (const t of M.ticks(top, 4)) {
        plot.append(svg("line", { x1: L - 3, x2: L, y1: Y(t), y2: Y(t), class: "axis" }),
          svg("text", { x: L - 5, y: Y(t) + 3, "text-anchor": "end", class: "tick" }, String(t)));
      }
      for (const t of M.ticks(s.points.length - 1, 5)) {
        const x = L + t * dx;
        plot.append(svg("line", { x1: x, x2: x, y1: T + H, y2: T + 3 + H, class: "axis" }),
          svg("text", { x, y: T + 12 + H, "text-anchor": "middle", class: "tick" }, String(t + 1)));
      }
      if (s.budget) {
        plot.append(svg("line", { x1: L, x2: L + plotW, y1: Y(s.budget), y2: Y(s.budget), stroke: "#d11f1f" }),
          svg("text", { x: L + plotW, y: Y(s.budget) - 2, "text-anchor": "end", class: "tick budget" }, `budget ${s.budget}`));
      }
      plot.append(svg("text", { x: 2, y: T + H + B + 12, class: "tick" },
        `registers live per assembly line (peak ${s.peak}) · x: line · y: registers`));
      const cursor = svg("line", { x1: -9, x2: -9, y1: T, y2: T + H, class: "cursor" });
      plot.append(cursor);
      plot.addEventListener("mousemove", (e) => {
        const rect = plot.getBoundingClientRect();
        const i = Math.floor((e.clientX - rect.left - L) / dx);
        if (i < 0 || i >= s.points.length) return;
        cursor.setAttribute("x1", L + (i + 0.5) * dx);
        cursor.setAttribute("x2", L + (i + 0.5) * dx);
        showPressureLine(s, i);
      });
      const legend = el("div", "legend");
      s.labels.forEach((label) => {
        const swatch = el("span", "swatch");
        swatch.dataset.category = label;
        swatch.style.background = M.categoryColor(label);
        legend.append(swatch, document.createTextNode(label));
      });
      box.append(plot, legend);
      return;
    }
    const est = state.stats && M.registerBars(state.stats.registers);
    if (!est) return;
    const W = plotWidth(box, 360);
    const top = Math.max(est.budget || 0, est.total, est.peak || 0) || 1;
    const plot = svg("svg", { width: W, height: 46, "data-kind": "estimate", "data-total": est.total,
      "data-peak": est.peak ?? "", "data-budget": est.budget ?? "" });
    let x = 0;
    est.bars.forEach((b) => {
      const w = (W * b.amount) / top;
      plot.append(svg("rect", { x, y: 4, width: w, height: 18, fill: M.categoryColor(b.label) }, ""));
      plot.append(svg("title", {}, `${b.label} ${b.amount}`));
      if (w > 24) plot.append(svg("text", { x: x + 2, y: 16, class: "in-bar" }, b.label));
      x += w;
    });
    if (est.budget) plot.append(svg("line", { x1: (W * est.budget) / top, x2: (W * est.budget) / top, y1: 0, y2: 26, stroke: "#d11f1f" }));
    plot.append(svg("text", { x: 2, y: 38 }, `${est.source} ${est.peak ?? "?"} · budget ${est.budget ?? "?"}`));
    box.append(plot);
  }

  /** The plot's column i: its line and registers by category in words, the listing scrolled to it. */
  function showPressureLine(series, i) {
    const p = series.points[i];
    const parts = Object.entries(p.byLabel).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${+v.toFixed(2)}`);
    $("pressure-info").textContent = `line ${i + 1}: ${p.total} registers live${parts.length ? ` (${parts.join(", ")})` : ""}`;
    $("pressure-info").dataset.line = i;
    mark("asm", [i]);
  }

  function renderMix(lst) {
    const table = $("mix");
    table.replaceChildren();
    const rows = M.mixRows(lst && lst.mix);
    if (!rows.length) {
      table.append(el("tr", "dim", "needs the assembly"));
    } else {
      const head = el("tr");
      ["pipe", "static", "dynamic", "per main-loop iteration"].forEach((h) => head.append(el("th", "", h)));
      table.append(head);
      for (const r of rows) {
        const tr = el("tr");
        [r.pipe, r.static, r.dynamic ?? "", r.perIteration ?? ""].forEach((v) => tr.append(el("td", "", String(v))));
        table.append(tr);
      }
    }
    renderRoofline(lst && M.rooflinePoint(lst.roofline));
  }

  /** The roofline on log-log axes with values: arithmetic intensity (ops/byte) against attainable ops/s,
   * the memory slope, the compute roof, the ridge, and the kernel's point. */
  function renderRoofline(p) {
    const box = $("roofline");
    box.replaceChildren();
    if (!p) {
      box.append(el("span", "dim", "needs the assembly"));
      return;
    }
    const W = 320, H = 104, L = 46, B = 30, R = 22, T = 8;
    const lx = (v) => Math.log10(v);
    const x0 = Math.floor(lx(Math.min(p.intensity, p.ridge) / 8)), x1 = Math.ceil(lx(Math.max(p.intensity, p.ridge) * 8));
    const y1 = Math.ceil(lx(p.peak * 2)), y0 = Math.floor(lx(p.bandwidth * 10 ** x0));
    const X = (v) => L + ((lx(v) - x0) / (x1 - x0)) * (W - L - R), Y = (v) => T + H - ((lx(v) - y0) / (y1 - y0)) * H;
    const plot = svg("svg", { width: W, height: T + H + B + 4, "data-bound": p.bound });
    const left = 10 ** x0, right = 10 ** x1;
    plot.append(svg("line", { x1: L, x2: L, y1: T, y2: T + H, class: "axis" }),
      svg("line", { x1: L, x2: W - R, y1: T + H, y2: T + H, class: "axis" }));
    for (let e = x0; e <= x1; e++) {
      plot.append(svg("line", { x1: X(10 ** e), x2: X(10 ** e), y1: T + H, y2: T + 3 + H, class: "axis" }),
        svg("text", { x: X(10 ** e), y: T + 12 + H, "text-anchor": "middle", class: "tick" }, M.siText(10 ** e).trim()));
    }
    for (let e = y0; e <= y1; e++) {
      plot.append(svg("line", { x1: L - 3, x2: L, y1: Y(10 ** e), y2: Y(10 ** e), class: "axis" }),
        svg("text", { x: L - 5, y: Y(10 ** e) + 3, "text-anchor": "end", class: "tick" }, M.siText(10 ** e).trim()));
    }
    const lo = Math.max(left, 10 ** y0 / p.bandwidth);
    plot.append(svg("polyline", { fill: "none", stroke: "#888", points:
      `${X(lo)},${Y(p.bandwidth * lo)} ${X(p.ridge)},${Y(p.peak)} ${X(right)},${Y(p.peak)}` }));
    plot.append(svg("circle", { cx: X(p.intensity), cy: Y(p.attainable), r: 4, fill: "#f28e2b" }));
    plot.append(svg("text", { x: L, y: T + H + B, class: "tick" }, "x: ops/byte · y: ops/s"));
    box.append(plot, el("div", "dim", `${p.intensity.toFixed(1)} ops/byte, ${M.siText(p.attainable)}ops/s attainable, ` +
      `${p.bound} bound (ridge ${p.ridge.toFixed(1)})`));
  }

  // ---- refresh ------------------------------------------------------------

  async function refresh() {
    const generation = ++state.generation;
    hovered = -1;
    if (!transport.embedded) {
      const [doc, diagnostics] = await Promise.all([transport.request("kdd/document", {}),
        transport.request("kdd/diagnostics", {}).catch(() => ({ diagnostics: [] }))]);
      if (generation !== state.generation) return;
      $("file").textContent = doc.path;
      state.configText = doc.text;
      renderConfig(doc.text);
      renderDiagnostics(diagnostics.diagnostics);
    }
    try {
      const passes = await transport.request("kdd/passes", {});
      state.passes = passes.ok ? passes.passes : [];
      state.stats = (await transport.request("kdd/stats", {})).stats;
    } catch (err) {
      state.passes = [];
      state.stats = null;
    }
    if (generation !== state.generation) return;
    renderPassPicker();
    await Promise.all([loadIR(generation), loadAssembly(generation)]);
    if (generation !== state.generation) return;
    renderBands();
    document.body.dataset.version = state.compiled ? state.compiled.version : "";
  }

  transport.onEvent((event, params) => {
    if (event === "kdd/compiled") {
      state.compiled = params;
      showStatus();
      refresh();
    } else if (event === "kdd/checked") {
      state.checked = params;
      showStatus();
    } else if (event === "kdd/cursor") {
      selectConfigLine(params.line, true);
    }
  });
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { renderPressure(); renderRoofline(state.asm && M.rooflinePoint(state.asm.roofline)); }, 150);
  });
  $("run-check").onclick = runCheck;
  $("pass").onchange = () => loadIR(state.generation).then(renderBands);
  $("diff").onchange = () => loadIR(state.generation).then(renderBands);
  $("only-changed").onchange = () => { renderPassPicker(); loadIR(state.generation).then(renderBands); };
})();
