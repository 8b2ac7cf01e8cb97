/* Unit tests of the extension's logic and of the views' shared model (node's test runner). */
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { test } from "node:test";
import {
  PreviewBridge, SERVER_COMMANDS, asmListingLine, asmUri, commandRoute, contentUri, diffItems, heatLines, irUri,
  passItems, previewHtml, previousPass, serverCommand,
} from "../logic";
import { Listing, PassEntry, model } from "../model";

const passes: PassEntry[] = [
  { name: "buffering", changed: true, ms: 1.5, nodes: 10, cached: false },
  { name: "prefetch", changed: false, ms: 0.2, nodes: 10, cached: false },
  { name: "unroll", changed: true, ms: 3.0, nodes: 40, cached: true },
];

const range = (a: number, b: number) => ({ start: { line: a, character: 0 }, end: { line: b, character: 4 } });

/** A listing as kdd/assembly nests it (issue 12's shape): three lines, two from config lines 17 and 19. */
const compileAnswer = {
  ok: true, target: "xehpg",
  asm: {
    asm: "mov (8) r10.0<1>:d 0:d\ndpas.8x8 (8) r20:f r20:f r30:hf r40:hf\nsend.ugm (8) null r4 r20",
    lines: [
      { text: "mov (8) r10.0<1>:d 0:d", live_regs: 40, live: ["c"], config_range: range(17, 17) },
      { text: "dpas.8x8 (8) r20:f r20:f r30:hf r40:hf", live_regs: 120, live: ["c", "a", "b"], config_range: range(17, 17) },
      { text: "send.ugm (8) null r4 r20", live_regs: 70, live: ["c", "headers"], config_range: range(19, 19) },
    ],
    registers: {
      peak: 120, budget: 128, ir: 119, by_label: { c: 32 }, reg_bytes: 32,
      allocations: [
        { label: "c_acc", category: "c", start: 20, bytes: 32 * 32, first_line: 0, last_line: 2 },
        { label: "a", category: "a", start: 60, bytes: 8 * 32, first_line: 1, last_line: 1 },
      ],
    },
    mix: { static: { float: 1, int: 1, xmx: 1, send: 1, control: 0 }, dynamic: { float: 9, int: 9, xmx: 9, send: 9, control: 0 } },
    roofline: { intensity: 10, peak_ops: 100, bandwidth: 2, bound: "compute" },
  },
};

test("the server command: the setting, else the workspace's .venv, else kdd on PATH", () => {
  assert.deepEqual(serverCommand(" /opt/kdd ", ["/w"], () => true), { command: "/opt/kdd", args: ["lsp"] });
  assert.deepEqual(serverCommand("", ["/a", "/b"], (p) => p === "/b/.venv/bin/kdd"), { command: "/b/.venv/bin/kdd", args: ["lsp"] });
  assert.deepEqual(serverCommand("", ["/a"], () => false), { command: "kdd", args: ["lsp"] });
});

test("kdd: URIs as the server reads them, rebuilt from what VS Code decodes", () => {
  const doc = "file:///tmp/a b/x.kernel.toml";
  assert.equal(irUri(doc, "unroll"), "kdd:/ir/unroll?file%3A%2F%2F%2Ftmp%2Fa%20b%2Fx.kernel.toml");
  assert.equal(irUri(doc, "unroll", true).startsWith("kdd:/diff/unroll?"), true);
  assert.equal(asmUri(doc), "kdd:/asm?file%3A%2F%2F%2Ftmp%2Fa%20b%2Fx.kernel.toml");
  assert.equal(contentUri("/ir/unroll", doc), irUri(doc, "unroll"));
});

test("the pass picker offers build, the passes that changed, final; all of them on request", () => {
  assert.deepEqual(passItems(passes, false).map((i) => i.pass), ["build", "buffering", "unroll", "final"]);
  assert.deepEqual(passItems(passes, true).map((i) => i.pass), ["build", "buffering", "prefetch", "unroll", "final"]);
  assert.match(passItems(passes, true)[2].description, /^unchanged · 10 nodes/);
  assert.deepEqual(diffItems(passes).map((i) => i.pass), ["buffering", "unroll"]);
  assert.equal(previousPass(passes, "unroll"), "prefetch");
  assert.equal(previousPass(passes, "buffering"), "build");
});

test("the listing is found whichever way the compile object nests it", () => {
  const nested = model.listing(compileAnswer) as Listing;
  assert.equal(nested.text.split("\n").length, 3);
  assert.equal(nested.lines[1].live_regs, 120);
  const flat = model.listing({ text: "a\nb", lines: [{ text: "a", live_regs: 1, live: [] }], registers: {} }) as Listing;
  assert.equal(flat.text, "a\nb");
  const textOnly = model.listing({ asm: { lines: [{ text: "x" }, { text: "y" }] } }) as Listing;
  assert.equal(textOnly.text, "x\ny");
  assert.equal(textOnly.lines[0].live_regs, null);
});

test("gutter heat: per config line the most live registers of its assembly, bucketed by the budget", () => {
  const lines = heatLines(model.listing(compileAnswer) as Listing);
  assert.deepEqual(lines.map((l) => [l.line, l.regs, l.bucket]), [[17, 120, 3], [19, 70, 1]]);
  assert.equal(lines[0].hint, "120/128 live registers");
  assert.deepEqual([0, 64, 96, 116, 128, 129].map((v) => model.heat(v, 128)), [0, 1, 2, 3, 3, 4]);
});

test("register pressure per line, stacked by buffer category from the allocations", () => {
  const M = require("../../media/model.js");
  const s = M.pressureSeries(model.listing(compileAnswer));
  assert.deepEqual(s.labels, ["c", "a"]);
  assert.deepEqual(s.points.map((p: { byLabel: Record<string, number> }) => p.byLabel), [{ c: 32 }, { c: 32, a: 8 }, { c: 32 }]);
  assert.equal(s.peak, 120);
  // the floor's lines, then the rest of the reported figure
  const bars = M.registerBars({ estimate: 60, source: "allocator", floor: { c: 32, a: 8, b: 0 }, ir: 50, budget: 128 });
  assert.deepEqual(bars.bars, [{ label: "c", amount: 32 }, { label: "a", amount: 8 }, { label: "other", amount: 20 }]);
  assert.equal(bars.total, 60);
  const roof = M.rooflinePoint(compileAnswer.asm.roofline);
  assert.equal(roof.attainable, 20);
  assert.equal(roof.ridge, 50);
  assert.equal(M.mixRows(compileAnswer.asm.mix)[2].pipe, "xmx");
});

test("config line <-> IR and assembly lines through the origin ranges", () => {
  const ir = [{ line: 0, kind: "Group" }, { line: 1, kind: "Let", origin: { step: "grid", knob: "iter", range: range(17, 18) } }];
  assert.deepEqual(model.entriesForConfigLine(ir, 18, model.irRange), [1]);
  assert.deepEqual(model.entriesForConfigLine(ir, 16, model.irRange), []);
  const lst = model.listing(compileAnswer) as Listing;
  assert.deepEqual(model.entriesForConfigLine(lst.lines, 17, model.asmRange), [0, 1]);
  // an end at character 0 of the next line does not cover that line
  assert.equal(model.covers({ start: { line: 3, character: 0 }, end: { line: 4, character: 0 } }, 4), false);
});

test("a compile's registers: the allocation where a code generator ran, named by its source", () => {
  const M = require("../../media/model.js");
  const allocated = { estimate: 105, allocated: 105, source: "allocator", ir: 103, budget: 128, floor: { c: 32, a: 8 } };
  const r = M.registerSummary(allocated);
  assert.equal(r.peak, 105);
  assert.equal(r.source, "allocator");
  assert.equal(r.ir, 103);
  const bars = M.registerBars(allocated);
  assert.deepEqual([bars.total, bars.peak, bars.source], [105, 105, "allocator"]);
  const modelOnly = M.registerSummary({ estimate: 140, allocated: null, source: "IR model", ir: 140, budget: 128, by_label: {} });
  assert.deepEqual([modelOnly.peak, modelOnly.source], [140, "IR model"]);
});

test("status line: the one register figure and its source, compile time, the check of this text", () => {
  const compiled = { uri: "u", version: 1, ok: true, target: "xehpg", compile_ms: 212.4,
    registers: { estimate: 254, allocated: 254, source: "allocator", ir: 256, budget: 256, by_label: {} } };
  const head = "kdd xehpg · regs 254/256 allocator · 212 ms";
  assert.equal(model.statusText(compiled, null, 1), head);
  assert.equal(model.statusText(compiled, { version: 1, result: { ok: false } }, 1), `${head} · check ✗`);
  assert.equal(model.statusText(compiled, { version: 1, result: { ok: true } }, 1), `${head} · check ✓`);
  // issue 25's verdicts when the result has them
  assert.equal(model.statusText(compiled, { version: 1, result: { ok: false, verdict: "not-checkable" } }, 1),
    `${head} · check n/a`);
  // after an edit: compiling, and the check of the older text is pending until this version's verdict
  assert.equal(model.statusText(compiled, { version: 1, result: { ok: true } }, 2), `${head} · check … · compiling…`);
  assert.equal(model.statusText({ uri: "u", version: 2, ok: false, error: "bad iter\nmore" }, null, 2), "kdd: bad iter");
  // sm_90: ptxas's figure, not nvdisasm's live peak nor the IR model's
  const sm90 = { ...compiled, target: "sm_90", registers: { estimate: 229, allocated: 229, source: "ptxas", ir: 215, budget: 255 } };
  assert.equal(model.statusText(sm90, null, 1), "kdd sm_90 · regs 229/255 ptxas · 212 ms");
  const listing = { peak: 211, allocated: 229, ir: 215, budget: 255 };
  assert.deepEqual([model.registerSummary(listing)!.peak, model.registerSummary(listing)!.livePeak], [229, 211]);
  assert.equal(model.registerText(listing), "229/255 (ptxas · IR model 215)");
  assert.equal(model.registerText({ peak: 107, ir: 107, budget: 128 }), "107/128 (allocator · IR model 107)");
  assert.equal(model.registerText({ estimate: 140, source: "IR model", ir: 140, budget: 128 }), "140/128 (IR model)");
});

test("commands: those that open a view run in the extension, the rest on the server; kdd:/asm lines", () => {
  assert.deepEqual(SERVER_COMMANDS.map(commandRoute), ["server", "view", "view", "view"]);
  assert.equal(commandRoute("kdd.runCheck"), "server");
  // a 3-line header, then 4 listing lines and the final newline: 8 document lines
  assert.equal(asmListingLine(3, 8, 4), 0);
  assert.equal(asmListingLine(6, 8, 4), 3);
  assert.equal(asmListingLine(2, 8, 4), null);
  assert.equal(asmListingLine(7, 8, 4), null);
});

test("the preview bridge: requests carry the document, errors keep the server's message, events are filtered", async () => {
  const posted: Array<Record<string, unknown>> = [];
  const sent: Array<[string, object]> = [];
  const revealed: unknown[] = [];
  const send = async (method: string, params: object) => {
    sent.push([method, params]);
    if (method === "kdd/assembly") throw Object.assign(new Error("no code generator for xehpg yet"), { code: -32803 });
    return { ok: true };
  };
  const bridge = new PreviewBridge("file:///a.kernel.toml", send, (m) => posted.push(m as Record<string, unknown>),
    (r) => revealed.push(r), { uri: "file:///a.kernel.toml", version: 3, ok: true });
  await bridge.handle({ type: "ready" });
  assert.deepEqual(posted.pop(), { type: "event", event: "kdd/compiled", params: { uri: "file:///a.kernel.toml", version: 3, ok: true } });
  await bridge.handle({ type: "request", id: 1, method: "kdd/irAfterPass", params: { pass: "unroll" } });
  assert.deepEqual(sent.pop(), ["kdd/irAfterPass", { pass: "unroll", textDocument: { uri: "file:///a.kernel.toml" } }]);
  assert.deepEqual(posted.pop(), { type: "response", id: 1, result: { ok: true } });
  await bridge.handle({ type: "request", id: 2, method: "kdd/assembly" });
  assert.deepEqual(posted.pop(), { type: "response", id: 2, error: { code: -32803, message: "no code generator for xehpg yet" } });
  await bridge.handle({ type: "request", id: 3, method: "shutdown" });
  assert.equal((posted.pop() as { error: { code: number } }).error.code, -32601);
  assert.equal(sent.length, 1);
  bridge.notify("kdd/compiled", { uri: "file:///other.kernel.toml" });
  assert.equal(posted.length, 0);
  bridge.notify("kdd/checked", { uri: "file:///a.kernel.toml" });
  assert.equal(posted.pop()?.event, "kdd/checked");
  await bridge.handle({ type: "reveal", range: range(2, 2) });
  assert.deepEqual(revealed, [range(2, 2)]);
});

test("the preview's HTML is kdd view's page with webview resources and a strict content policy", () => {
  const page = fs.readFileSync(path.resolve(__dirname, "../../media/index.html"), "utf8");
  const html = previewHtml(page, (name) => `vscode-resource:/media/${name}`, "vscode-resource:");
  assert.equal(html.includes('"static/'), false);
  for (const name of ["model.js", "view.js", "view.css"]) assert.ok(html.includes(`"vscode-resource:/media/${name}"`), name);
  assert.match(html, /Content-Security-Policy" content="default-src 'none'; .*script-src vscode-resource:;/);
});
