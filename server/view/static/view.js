/* The kdd view page: config, IR after a pass (with diffs), assembly with register pressure, instruction
 * mix and roofline. It renders what kdd answers and computes nothing itself (see model.js).
 *
 * One page, two transports: in a browser (kdd view) requests go to POST /rpc and kdd/compiled events
 * come from /events; inside VS Code's webview they go through postMessage to the extension, which asks
 * the language server the same methods and forwards its notifications. */
(function () {
  "use strict";
  const M = window.kddModel;
  const $ = (id) => document.getElementById(id);

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
        events.addEventListener("kdd/compiled", (e) => f("kdd/compiled", JSON.parse(e.data)));
        events.onerror = () => setStatus("kdd view: disconnected (is kdd view still running?)");
      },
      reveal(range) { markConfig(range ? [range.start.line] : [], true); },
    };
  }

  const transport = typeof acquireVsCodeApi === "function" ? vscodeTransport(acquireVsCodeApi()) : httpTransport();
  const state = { compiled: null, checked: null, passes: [], ir: null, asm: null, generation: 0 };
  if (transport.embedded) document.body.classList.add("embedded");

  function setStatus(text) { $("status").textContent = text; }

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

  // ---- config -------------------------------------------------------------

  function renderConfig(text) {
    const pre = $("config");
    pre.replaceChildren();
    text.split("\n").forEach((line, i) => {
      const row = el("div");
      row.dataset.line = i;
      row.append(el("span", "ln", String(i + 1)), document.createTextNode(line));
      row.onclick = () => selectConfigLine(i, false);
      pre.append(row);
    });
  }

  function markConfig(lines, scroll) {
    const rows = $("config").children;
    for (const r of rows) r.classList.toggle("hl", lines.includes(Number(r.dataset.line)));
    if (scroll && lines.length && rows[lines[0]]) rows[lines[0]].scrollIntoView({ block: "center" });
  }

  /** A config line chosen (a click here, or the editor's cursor): its IR and assembly lines light up. */
  function selectConfigLine(line, fromEditor) {
    if (!fromEditor) markConfig([line], false);
    mark("ir", state.ir ? M.entriesForConfigLine(state.ir.lines, line, M.irRange) : []);
    mark("asm", state.asm ? M.entriesForConfigLine(state.asm.lines, line, M.asmRange) : []);
  }

  function mark(id, indices) {
    const rows = $(id).children;
    for (const r of rows) r.classList.toggle("hl", false);
    indices.forEach((i) => rows[i] && rows[i].classList.add("hl"));
    if (indices.length && rows[indices[0]]) rows[indices[0]].scrollIntoView({ block: "center" });
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
    state.ir = ir.ok ? ir : null;
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
      state.ir = null; // a diff's lines are not the IR's line map
      return;
    }
    ir.text.split("\n").forEach((line, i) => {
      const row = el("div", "", line);
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
    const box = $("asm-error");
    box.hidden = !error;
    box.textContent = error ? `Assembly unavailable: ${error}` : "";
    $("asm").replaceChildren();
    if (lst) renderAssembly(lst);
    renderPressure();
    renderMix(lst);
  }

  function renderAssembly(lst) {
    const budget = lst.registers.budget;
    lst.lines.forEach((line, i) => {
      const row = el("div");
      row.append(el("span", "regs", line.live_regs === null ? "" : String(line.live_regs)),
        el("span", `heat h${M.heat(line.live_regs, budget)}`), document.createTextNode(line.text));
      if (line.live.length) row.title = `live: ${line.live.join(", ")}`;
      if (line.config_range) row.onclick = () => transport.reveal(line.config_range);
      $("asm").append(row);
    });
    const r = M.registerSummary(lst.registers);
    const ir = r.ir !== null ? `, IR model ${r.ir}` : "";
    $("asm-summary").textContent = `peak ${r.peak}/${r.budget} registers${ir}`;
  }

  /** Live registers per assembly line against the budget, stacked by buffer; without assembly, the
   * compile's register estimate by label against the budget. */
  function renderPressure() {
    const box = $("pressure");
    box.replaceChildren();
    const W = 360, H = 120, colors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"];
    if (state.asm && state.asm.lines.length) {
      const s = M.pressureSeries(state.asm);
      const top = Math.max(s.budget || 0, s.peak) || 1;
      const dx = W / s.points.length;
      const plot = svg("svg", { width: W, height: H + 14, "data-kind": "per-line", "data-peak": s.peak,
        "data-budget": s.budget ?? "", "data-points": s.points.length });
      s.points.forEach((p) => {
        let y = H;
        s.labels.forEach((label, k) => {
          const h = (H * (p.byLabel[label] || 0)) / top;
          y -= h;
          if (h > 0) plot.append(svg("rect", { x: p.line * dx, y, width: Math.max(dx, 0.5), height: h, fill: colors[k % colors.length] }));
        });
      });
      if (s.budget) plot.append(svg("line", { x1: 0, x2: W, y1: H - (H * s.budget) / top, y2: H - (H * s.budget) / top, stroke: "#d11f1f" }));
      plot.append(svg("text", { x: 2, y: H + 12 }, `live registers per line: peak ${s.peak} · budget ${s.budget ?? "?"}`));
      const legend = el("div", "legend");
      s.labels.forEach((label, k) => {
        const swatch = el("span", "swatch");
        swatch.dataset.color = String(k % colors.length);
        legend.append(swatch, document.createTextNode(label));
      });
      box.append(plot, legend);
      return;
    }
    const est = state.stats && M.registerBars(state.stats.registers);
    if (!est) return;
    const top = Math.max(est.budget || 0, est.total, est.peak || 0) || 1;
    const plot = svg("svg", { width: W, height: 46, "data-kind": "estimate", "data-total": est.total,
      "data-peak": est.peak ?? "", "data-budget": est.budget ?? "" });
    let x = 0;
    est.bars.forEach((b, k) => {
      const w = (W * b.amount) / top;
      plot.append(svg("rect", { x, y: 4, width: w, height: 18, fill: colors[k % colors.length] }, ""));
      plot.append(svg("title", {}, `${b.label} ${b.amount}`));
      if (w > 24) plot.append(svg("text", { x: x + 2, y: 16, class: "in-bar" }, b.label));
      x += w;
    });
    if (est.budget) plot.append(svg("line", { x1: (W * est.budget) / top, x2: (W * est.budget) / top, y1: 0, y2: 26, stroke: "#d11f1f" }));
    plot.append(svg("text", { x: 2, y: 38 }, `${est.source} ${est.peak ?? "?"} · budget ${est.budget ?? "?"}`));
    box.append(plot);
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

  function renderRoofline(p) {
    const box = $("roofline");
    box.replaceChildren();
    if (!p) {
      box.append(el("span", "dim", "needs the assembly"));
      return;
    }
    const W = 260, H = 120;
    const lx = (v) => Math.log10(v);
    const x0 = lx(Math.min(p.intensity, p.ridge) / 8), x1 = lx(Math.max(p.intensity, p.ridge) * 8);
    const y1 = lx(p.peak * 2), y0 = lx(p.bandwidth * 10 ** x0 / 2);
    const X = (v) => ((lx(v) - x0) / (x1 - x0)) * W, Y = (v) => H - ((lx(v) - y0) / (y1 - y0)) * H;
    const plot = svg("svg", { width: W, height: H + 14, "data-bound": p.bound });
    const left = 10 ** x0, right = 10 ** x1;
    plot.append(svg("polyline", { fill: "none", stroke: "#888", points:
      `${X(left)},${Y(p.bandwidth * left)} ${X(p.ridge)},${Y(p.peak)} ${X(right)},${Y(p.peak)}` }));
    plot.append(svg("circle", { cx: X(p.intensity), cy: Y(p.attainable), r: 4, fill: "#f28e2b" }));
    plot.append(svg("text", { x: 2, y: H + 12 }, `${p.intensity.toFixed(1)} ops/byte, ${p.bound} bound`));
    box.append(plot);
  }

  // ---- refresh ------------------------------------------------------------

  async function refresh() {
    const generation = ++state.generation;
    if (!transport.embedded) {
      const doc = await transport.request("kdd/document", {});
      if (generation !== state.generation) return;
      $("file").textContent = doc.path;
      renderConfig(doc.text);
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
    document.body.dataset.version = state.compiled ? state.compiled.version : "";
  }

  transport.onEvent((event, params) => {
    if (event === "kdd/compiled") {
      state.compiled = params;
      setStatus(M.statusText(state.compiled, state.checked));
      refresh();
    } else if (event === "kdd/checked") {
      state.checked = params.result;
      setStatus(M.statusText(state.compiled, state.checked));
    } else if (event === "kdd/cursor") {
      selectConfigLine(params.line, true);
    }
  });
  $("pass").onchange = () => loadIR(state.generation);
  $("diff").onchange = () => loadIR(state.generation);
  $("only-changed").onchange = () => { renderPassPicker(); loadIR(state.generation); };
})();
