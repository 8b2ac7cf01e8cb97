/* What the kdd views compute from the server's answers, with no DOM and no editor API: the browser
 * page (kdd view), the VS Code preview and the VS Code extension all use these functions, so a view
 * only places what kdd computed. A classic script (window.kddModel) and a CommonJS module at once.
 * The shapes are those of protocol/lsp.schema.json and protocol/compile.schema.json. */
(function (root, factory) {
  const api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.kddModel = api;
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  /** The assembly listing of a kdd/assembly answer, whichever way the compile object nests it:
   * {asm: {text | asm, lines, registers, mix, roofline, assembler}} or the listing itself. */
  function listing(result) {
    if (!result || typeof result !== "object") return null;
    let a = result.asm !== undefined && typeof result.asm === "object" ? result.asm : result;
    const lines = Array.isArray(a.lines) ? a.lines : [];
    let text = typeof a.text === "string" ? a.text : typeof a.asm === "string" ? a.asm : null;
    if (text === null) text = lines.map((l) => l.text).join("\n");
    return {
      target: a.target || result.target || null,
      text,
      lines: lines.map((l) => ({
        text: String(l.text ?? ""),
        live_regs: typeof l.live_regs === "number" ? l.live_regs : null,
        live: Array.isArray(l.live) ? l.live : [],
        ir_node: l.ir_node || null,
        config_range: l.config_range || (l.ir_node && l.ir_node.range) || null,
      })),
      registers: a.registers || {},
      mix: a.mix || null,
      roofline: a.roofline || null,
      assembler: a.assembler || null,
    };
  }

  /** Peak, budget and IR register model's figure of a registers object: the compile's stats ({estimate,
   * source, ir, budget, floor, unit}: estimate is the allocation where a code generator ran, source says
   * so) or the assembly listing's ({peak, budget, ir, by_label}). */
  function registerSummary(registers) {
    if (!registers) return null;
    const compiled = typeof registers.source === "string" ? registers.estimate : registers.ir;
    const peak = typeof registers.peak === "number" ? registers.peak : compiled;
    return {
      peak: typeof peak === "number" ? peak : null,
      budget: typeof registers.budget === "number" ? registers.budget : null,
      ir: typeof registers.ir === "number" ? registers.ir : null,
      byLabel: registers.by_label || {},
      source: typeof registers.peak === "number" ? "allocator" : registers.source || "IR model",
      unit: registers.unit || "registers",
    };
  }

  /** Heat bucket 0..4 of a register count against the budget: under half, under 3/4, under 90 %,
   * within the budget, over it. */
  function heat(value, budget) {
    if (typeof value !== "number" || !budget) return 0;
    const f = value / budget;
    return f > 1 ? 4 : f >= 0.9 ? 3 : f >= 0.75 ? 2 : f >= 0.5 ? 1 : 0;
  }

  /** Live registers per assembly line, stacked by buffer category when the listing has its
   * allocations ({category, label, bytes, first_line, last_line}), else one series "live". */
  function pressureSeries(lst) {
    const regs = lst.registers || {};
    const regBytes = regs.reg_bytes || 0;
    const allocs = Array.isArray(regs.allocations) && regBytes ? regs.allocations : null;
    const labels = [];
    const points = lst.lines.map((l, i) => {
      const byLabel = {};
      if (allocs) {
        for (const a of allocs) {
          if (a.first_line <= i && i <= a.last_line) {
            const key = a.category || a.label;
            byLabel[key] = (byLabel[key] || 0) + a.bytes / regBytes;
          }
        }
      } else if (l.live_regs !== null) {
        byLabel.live = l.live_regs;
      }
      for (const k of Object.keys(byLabel)) if (!labels.includes(k)) labels.push(k);
      return { line: i, total: l.live_regs ?? 0, byLabel };
    });
    const peak = points.reduce((m, p) => Math.max(m, p.total), 0);
    return { budget: regs.budget ?? null, peak, labels, points };
  }

  /** A compile's register figure as stacked bars (label, amount) against the budget, what the views show
   * while there is no assembly: the floor's lines (the C, A and B tiles every build holds) and the rest of
   * the figure as "other". */
  function registerBars(registers) {
    const s = registerSummary(registers);
    if (!s) return null;
    const bars = Object.entries(registers.floor || {}).filter(([, v]) => v > 0)
      .map(([label, amount]) => ({ label, amount }));
    const floor = bars.reduce((t, b) => t + b.amount, 0);
    if (s.peak !== null && s.peak > floor) bars.push({ label: "other", amount: s.peak - floor });
    return { bars, total: bars.reduce((t, b) => t + b.amount, 0), budget: s.budget, peak: s.peak, unit: s.unit,
             source: s.source };
  }

  /** Does a source range (0-based lines, exclusive end) cover a config line? */
  function covers(range, line) {
    if (!range || !range.start) return false;
    const end = range.end || range.start;
    const last = end.character === 0 && end.line > range.start.line ? end.line - 1 : end.line;
    return range.start.line <= line && line <= last;
  }

  /** Indices of the entries (IR line-map entries, assembly lines) that came from a config line;
   * rangeOf picks an entry's config range. */
  function entriesForConfigLine(entries, line, rangeOf) {
    const out = [];
    entries.forEach((e, i) => { if (covers(rangeOf(e), line)) out.push(i); });
    return out;
  }

  const irRange = (entry) => (entry && entry.origin && entry.origin.range) || null;
  const asmRange = (line) => (line && line.config_range) || null;

  /** Config line -> the most live registers of the assembly lines it produced (gutter heat, hints). */
  function configPressure(lst) {
    const out = new Map();
    for (const l of lst.lines) {
      const r = l.config_range;
      if (!r || l.live_regs === null) continue;
      for (let line = r.start.line; line <= (r.end || r.start).line; line++) {
        out.set(line, Math.max(out.get(line) || 0, l.live_regs));
      }
    }
    return out;
  }

  /** The passes a picker offers: build, every pass (or only those that changed the IR), final. */
  function pickablePasses(passes, onlyChanged) {
    const names = (passes || []).filter((p) => !onlyChanged || p.changed).map((p) => p.name);
    return ["build", ...names, "final"];
  }

  /** One status line: target, peak/budget registers, compile time, the check's verdict. */
  function statusText(compiled, checked) {
    if (!compiled) return "kdd: compiling…";
    if (!compiled.ok) return `kdd: ${firstLine(compiled.error) || "compile failed"}`;
    const parts = [compiled.target];
    const r = registerSummary(compiled.registers);
    if (r && r.peak !== null && r.budget !== null) parts.push(`regs ${r.peak}/${r.budget}`);
    if (typeof compiled.compile_ms === "number") parts.push(`${Math.round(compiled.compile_ms)} ms`);
    if (checked) parts.push(checked.ok ? "check ✓" : "check ✗");
    return `kdd ${parts.join(" · ")}`;
  }

  function firstLine(text) {
    return typeof text === "string" ? text.split("\n")[0] : "";
  }

  /** The roofline point: arithmetic intensity and attainable rate, or null without the figures. */
  function rooflinePoint(r) {
    if (!r || typeof r.intensity !== "number" || !r.peak_ops || !r.bandwidth) return null;
    return {
      intensity: r.intensity,
      attainable: Math.min(r.peak_ops, r.bandwidth * r.intensity),
      ridge: r.peak_ops / r.bandwidth,
      peak: r.peak_ops,
      bandwidth: r.bandwidth,
      bound: r.bound || (r.intensity < r.peak_ops / r.bandwidth ? "memory" : "compute"),
    };
  }

  /** Instruction mix rows: one per pipe with the static, dynamic and per-main-loop-iteration counts. */
  function mixRows(mix) {
    if (!mix || !mix.static) return [];
    const perIter = (mix.main_loop && mix.main_loop.per_iteration) || {};
    return Object.keys(mix.static).map((pipe) => ({
      pipe, static: mix.static[pipe], dynamic: (mix.dynamic || {})[pipe] ?? null, perIteration: perIter[pipe] ?? null,
    }));
  }

  return {
    listing, registerSummary, heat, pressureSeries, registerBars, covers, entriesForConfigLine, irRange,
    asmRange, configPressure, pickablePasses, statusText, rooflinePoint, mixRows,
  };
});
