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

  /** The register figure of a registers object, with who made it: the code generator's allocation wherever
   * one ran (kdd's allocator on Xe, ptxas on sm_90), the IR register model only where none did, and that
   * labelled as the model. A compile's stats ({estimate, source, allocated, ir, budget, floor, unit}) say
   * so in `source`; an assembly listing's registers ({peak, budget, ir, by_label, allocated?}) carry
   * ptxas's figure as `allocated` on sm_90 (their `peak` is then nvdisasm's live-register peak), and on Xe
   * the allocator's as `peak`. `livePeak` is the most registers live on one line of the listing. */
  function registerSummary(registers) {
    if (!registers) return null;
    let figure, source;
    if (typeof registers.estimate === "number") {
      figure = registers.estimate;
      source = typeof registers.source === "string" ? registers.source : "IR model";
    } else if (typeof registers.allocated === "number") {
      figure = registers.allocated;
      source = "ptxas";
    } else {
      figure = registers.peak;
      source = "allocator";
    }
    return {
      peak: typeof figure === "number" ? figure : null,
      budget: typeof registers.budget === "number" ? registers.budget : null,
      ir: typeof registers.ir === "number" ? registers.ir : null,
      livePeak: typeof registers.peak === "number" ? registers.peak : null,
      byLabel: registers.by_label || {},
      source,
      unit: registers.unit || "registers",
    };
  }

  /** "254/256 (allocator · IR model 256)": the one figure, its source, the model beside it. */
  function registerText(registers) {
    const r = registerSummary(registers);
    if (!r || r.peak === null) return "";
    const model = r.source !== "IR model" && r.ir !== null ? ` · IR model ${r.ir}` : "";
    return `${r.peak}/${r.budget ?? "?"} (${r.source}${model})`;
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

  /** A check's verdict: the result's `verdict` (ok | wrong | not-checkable) where it has one, else
   * ok or wrong from `ok`, and "error" for a check that could not run (a failed stage). */
  function verdict(result) {
    if (!result) return null;
    if (typeof result.verdict === "string") return result.verdict;
    if (result.ok) return "ok";
    return result.failure ? "error" : "wrong";
  }

  const VERDICT_MARK = { ok: "check ✓", wrong: "check ✗", "not-checkable": "check n/a", error: "check error" };

  /** The check part of a status line: the verdict of `checked` (a kdd/checked event: {version, result}) when
   * it is about `version`, "check …" (pending) when the text has changed since, nothing before any check. */
  function checkText(checked, version) {
    if (!checked || !checked.result) return "";
    if (typeof version === "number" && typeof checked.version === "number" && checked.version !== version) {
      return "check …";
    }
    const v = verdict(checked.result);
    return VERDICT_MARK[v] || `check ${v}`;
  }

  /** One status line: target, the register figure (the code generator's, its source named), compile time,
   * the check's verdict. `version` is the text's current version: while the compile is older, the status
   * says it is compiling, and a check of an older text is pending. */
  function statusText(compiled, checked, version) {
    if (!compiled) return "kdd: compiling…";
    const current = typeof version === "number" ? version : compiled.version;
    const stale = typeof current === "number" && typeof compiled.version === "number" && compiled.version < current;
    if (!compiled.ok) return `kdd: ${firstLine(compiled.error) || "compile failed"}${stale ? " · compiling…" : ""}`;
    const parts = [compiled.target];
    const r = registerSummary(compiled.registers);
    if (r && r.peak !== null && r.budget !== null) parts.push(`regs ${r.peak}/${r.budget} ${r.source}`);
    if (typeof compiled.compile_ms === "number") parts.push(`${Math.round(compiled.compile_ms)} ms`);
    const check = checkText(checked, current);
    if (check) parts.push(check);
    if (stale) parts.push("compiling…");
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

  // A colour per register category, fixed so that a category keeps its colour across compiles and
  // targets, and distinct for all of them (Tableau 10, then further colours for categories kdd adds).
  const CATEGORY_COLORS = {
    "C accumulators": "#4e79a7", "A/B operands": "#f28e2b", "SLM load buffers": "#59a14f", buffers: "#76b7b2",
    headers: "#edc948", scalars: "#b07aa1", temporaries: "#ff9da7", vectors: "#9c755f", reserved: "#bab0ac",
    "register buffer": "#e15759", live: "#e15759",
  };
  const MORE_COLORS = ["#17becf", "#bcbd22", "#8c564b", "#7f7f7f", "#d62728", "#1f77b4"];

  function categoryColor(category) {
    if (CATEGORY_COLORS[category]) return CATEGORY_COLORS[category];
    let h = 0;
    for (const c of String(category)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return MORE_COLORS[h % MORE_COLORS.length];
  }

  /** Compiler Explorer's colour bands: each config line that produced IR or assembly gets a band (0..7, in
   * the order of the config), and every view line from it the same band. Returns config line -> band. */
  function bands(lineLists) {
    const lines = new Set();
    for (const list of lineLists) for (const l of list) if (typeof l === "number") lines.add(l);
    const out = new Map();
    [...lines].sort((a, b) => a - b).forEach((line, i) => out.set(line, i % 8));
    return out;
  }

  /** The config line a view entry came from (its range's first line), or null. */
  function originLine(range) {
    return range && range.start && typeof range.start.line === "number" ? range.start.line : null;
  }

  // Syntax colouring: [class, regex] per kind of text, tried in order at each position; what no rule takes
  // stays plain. The classes are kw (keywords, tables), key, str, num, com, op (mnemonics), reg, type, dir.
  const RULES = {
    config: [["com", /#.*/y], ["kw", /\[\[?[^\]]*\]\]?/y], ["str", /"(?:[^"\\]|\\.)*"?/y],
      ["key", /[A-Za-z_][\w.-]*(?=\s*=)/y], ["num", /\b(?:true|false|\d[\d_.]*)\b/y]],
    ir: [["com", /\/\/.*/y], ["kw", /\b(?:kernel|for|if|else|let|alloc\.\w+|in|barrier|return)\b/y],
      ["type", /\.(?:[usfb]f?\d+|bf16|f16|f32|f64|pred)(?:x\d+)?\b/y], ["num", /\b0x[\da-fA-F]+\b|\b\d+(?:\.\d+)?\b/y],
      ["op", /\b[a-z_][\w]*(?=\()/y]],
    xe: [["com", /\/\/.*/y], ["dir", /^[\w$]+:/y], ["kw", /^\s*\((?:W|[^)]*f\d[^)]*)\)/y],
      ["op", /(?<=^\s*(?:\([^)]*\)\s*)?)[a-z_][\w.]*/y], ["reg", /\b(?:r\d+(?:\.\d+)?|acc\d+(?:\.\d+)?|f\d\.\d|null)\b/y],
      ["type", /:[a-z]{1,3}\b/y], ["num", /\b0x[\da-fA-F]+\b|-?\b\d+\b/y]],
    ptx: [["com", /\/\/.*/y], ["dir", /^\s*\.[\w]+/y], ["dir", /^\s*\$?[\w]+:/y], ["kw", /@!?%?\w+/y],
      ["op", /(?<=^\s*(?:@!?%?\w+\s+)?)[a-z][\w.]*/y], ["reg", /%[\w<>]+/y], ["num", /\b0[xXfF][\da-fA-F]+\b|-?\b\d+\b/y]],
  };

  /** A line as [class, text] spans for `kind` (config, ir, xe, ptx); the spans' texts join to the line. */
  function tokens(kind, line) {
    const rules = RULES[kind] || [];
    const out = [];
    let plain = "";
    let i = 0;
    while (i < line.length) {
      let hit = null;
      for (const [cls, re] of rules) {
        re.lastIndex = i;
        const m = re.exec(line);
        if (m && m.index === i && m[0].length) { hit = [cls, m[0]]; break; }
      }
      if (hit) {
        if (plain) { out.push(["", plain]); plain = ""; }
        out.push(hit);
        i += hit[1].length;
      } else {
        plain += line[i++];
      }
    }
    if (plain) out.push(["", plain]);
    return out;
  }

  /** "nice" axis ticks from 0 to top: about `count` round steps (1, 2 or 5 times a power of ten). */
  function ticks(top, count) {
    if (!(top > 0)) return [0];
    const raw = top / Math.max(count, 1);
    const p = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw);
    const out = [];
    for (let v = 0; v <= top + 1e-9; v += step) out.push(Math.round(v * 1e6) / 1e6);
    return out;
  }

  /** A number of operations (or bytes) per second as text: 1.4e14 -> "140 T". */
  function siText(v) {
    const units = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [f, u] of units) if (Math.abs(v) >= f) return `${+(v / f).toPrecision(3)} ${u}`;
    return `${+v.toPrecision(3)} `;
  }

  return {
    listing, registerSummary, registerText, verdict, checkText, categoryColor, bands, originLine, tokens, ticks,
    siText, heat, pressureSeries, registerBars, covers, entriesForConfigLine, irRange,
    asmRange, configPressure, pickablePasses, statusText, rooflinePoint, mixRows,
  };
});
