/* The extension's requests against the real `kdd lsp` (no mock of kdd), through vscode-jsonrpc, the
 * JSON-RPC layer vscode-languageclient itself uses: what the status bar, the pass picker, the kdd:
 * documents, the preview bridge and the gutter heat are given on a shipped example. */
import assert from "node:assert/strict";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { after, before, test } from "node:test";
import * as rpc from "vscode-jsonrpc/node";
import { PreviewBridge, SERVER_COMMANDS, asmListingLine, commandRoute, diffItems, heatLines, irUri, passItems } from "../logic";
import { Compiled, IrEntry, Listing, PassEntry, model } from "../model";

const ROOT = path.resolve(__dirname, "../../../..");
const KDD = process.env.KDD_BIN ?? path.join(ROOT, ".venv", "bin", "kdd");
const PACKAGE = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../package.json"), "utf8"));

type Message = { method: string; params: any };

let server: ChildProcess;
let conn: rpc.MessageConnection;
let dir: string;
let uri: string;
let text: string;
const messages: Message[] = [];
let advertised: string[] = [];
const waiters: Array<() => boolean> = []; // each returns true once it is satisfied

function waitFor(method: string, pred: (p: any) => boolean, timeoutMs = 120_000): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${method} in ${timeoutMs} ms`)), timeoutMs);
    const look = () => {
      const hit = messages.find((m) => m.method === method && pred(m.params));
      if (!hit) return false;
      clearTimeout(timer);
      resolve(hit.params);
      return true;
    };
    if (!look()) waiters.push(look);
  });
}

function change(version: number, from: string, to: string): void {
  const i = text.indexOf(from);
  const line = text.slice(0, i).split("\n").length - 1;
  const character = i - (text.lastIndexOf("\n", i - 1) + 1);
  text = text.replace(from, to);
  conn.sendNotification("textDocument/didChange", {
    textDocument: { uri, version },
    contentChanges: [{ range: { start: { line, character }, end: { line, character: character + from.length } }, text: to }],
  });
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "kdd-vscode-"));
  const file = path.join(dir, "resnet.kernel.toml");
  fs.copyFileSync(path.join(ROOT, "examples", "resnet50_3x3.kernel.toml"), file);
  text = fs.readFileSync(file, "utf8");
  uri = `file://${file}`;
  server = spawn(KDD, ["lsp", "--cache-dir", path.join(dir, "cache")], { stdio: ["pipe", "pipe", "inherit"] });
  conn = rpc.createMessageConnection(new rpc.StreamMessageReader(server.stdout!), new rpc.StreamMessageWriter(server.stdin!));
  conn.onRequest("workspace/configuration", (p: { items: unknown[] }) => p.items.map(() => ({ checkOnSave: true })));
  conn.onRequest("window/workDoneProgress/create", () => null);
  // what vscode-languageclient answers (it refreshes its inlay hints and lenses); recorded as messages
  for (const method of ["workspace/inlayHint/refresh", "workspace/codeLens/refresh"]) {
    conn.onRequest(method, () => {
      messages.push({ method, params: null });
      const pending = waiters.splice(0).filter((w) => !w());
      waiters.push(...pending);
      return null;
    });
  }
  conn.onNotification((method: string, params: any) => {
    messages.push({ method, params });
    const pending = waiters.splice(0).filter((w) => !w());
    waiters.push(...pending);
  });
  conn.listen();
  const init = (await conn.sendRequest("initialize", {
    processId: process.pid, rootUri: `file://${dir}`, workspaceFolders: [{ uri: `file://${dir}`, name: "w" }],
    capabilities: { workspace: { configuration: true, inlayHint: { refreshSupport: true }, codeLens: { refreshSupport: true } },
      window: { workDoneProgress: true } },
  })) as { capabilities: { executeCommandProvider?: { commands: string[] } } };
  advertised = init.capabilities.executeCommandProvider?.commands ?? [];
  conn.sendNotification("initialized", {});
  conn.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "kernel-toml", version: 1, text } });
});

after(async () => {
  await conn.sendRequest("shutdown");
  const exited = new Promise((resolve) => server.once("exit", resolve));
  await conn.sendNotification("exit");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  conn.dispose();
  server.kill();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a shipped example: status line, pass picker, kdd: documents, code lenses", { timeout: 300_000 }, async () => {
  const compiled: Compiled = await waitFor("kdd/compiled", (p) => p.uri === uri && p.version === 1);
  assert.equal(compiled.ok, true);
  const r = model.registerSummary(compiled.registers);
  assert.match(model.statusText(compiled, null, 1), new RegExp(`^kdd xehpg · regs ${r!.peak}/${r!.budget} allocator · \\d+ ms$`));
  assert.equal(r!.peak, (compiled.registers as { allocated: number }).allocated); // the allocator's figure, not the model's
  // after the compile the server asks for fresh inlay hints and lenses
  await waitFor("workspace/inlayHint/refresh", () => true);
  await waitFor("workspace/codeLens/refresh", () => true);

  const passes = (await conn.sendRequest("kdd/passes", { textDocument: { uri } })) as { ok: boolean; passes: PassEntry[] };
  assert.equal(passes.ok, true);
  const changed = passes.passes.filter((p) => p.changed).map((p) => p.name);
  assert.ok(changed.length > 0 && changed.length < passes.passes.length);
  assert.deepEqual(passItems(passes.passes, false).map((i) => i.pass), ["build", ...changed, "final"]);

  const ir = (await conn.sendRequest("kdd/content", { uri: irUri(uri, "final") })) as { text: string };
  assert.ok(ir.text.startsWith("kernel {\n"));
  const first = diffItems(passes.passes)[0].pass;
  const diff = (await conn.sendRequest("kdd/content", { uri: irUri(uri, first, true) })) as { text: string };
  assert.ok(diff.text.startsWith(`--- before ${first}\n`));

  const lenses = (await conn.sendRequest("textDocument/codeLens", { textDocument: { uri } })) as
    Array<{ command: { command: string; arguments: unknown[] } }>;
  const contributed = new Set(PACKAGE.contributes.commands.map((c: { command: string }) => c.command));
  assert.deepEqual([...advertised].sort(), [...SERVER_COMMANDS].sort());
  for (const lens of lenses) {
    // every lens names a command the server advertises (so vscode-languageclient registers it) and the
    // palette lists; the server runs each (the extension's middleware opens the views itself)
    assert.ok(advertised.includes(lens.command.command) && contributed.has(lens.command.command), lens.command.command);
    const answer = (await conn.sendRequest("workspace/executeCommand", lens.command)) as { ok?: boolean; uri?: string; text?: string };
    if (commandRoute(lens.command.command) === "server") assert.equal(answer.ok, true);
    else assert.ok(answer.uri!.startsWith("kdd:/") && answer.text!.length > 0);
  }
  assert.ok(lenses.some((l) => l.command.command === "kdd.showAssembly"));

  // the hover of the kdd:/asm document: a dpas line's instruction docs and live buffers
  const asmText = ((await conn.sendRequest("kdd/content", { uri: `kdd:/asm?${encodeURIComponent(uri)}` })) as { text: string }).text;
  const docLines = asmText.split("\n");
  const probe = (await conn.sendRequest("kdd/asmHover", { textDocument: { uri }, line: 0 })) as { lines: number };
  const at = docLines.findIndex((l) => l.includes("dpas"));
  const line = asmListingLine(at, docLines.length, probe.lines);
  const hover = (await conn.sendRequest("kdd/asmHover", { textDocument: { uri }, line })) as
    { text: string; markdown: string; doc: { mnemonic: string; pipe: string } };
  assert.equal(hover.doc.mnemonic, "dpas");
  assert.equal(hover.doc.pipe, "xmx");
  assert.ok(docLines[at].startsWith(hover.text), "the hovered document line is that listing line");
  assert.match(hover.markdown, /live: /);
});

test("the preview bridge over the real server: IR line map, assembly or the server's reason, live refresh",
  { timeout: 300_000 }, async () => {
    await waitFor("kdd/compiled", (p) => p.uri === uri && p.version === 1);
    const posted: any[] = [];
    const bridge = new PreviewBridge(uri, (m, p) => conn.sendRequest(m, p), (m) => posted.push(m), () => undefined);

    await bridge.handle({ type: "request", id: 1, method: "kdd/irAfterPass", params: { pass: "final" } });
    const ir = posted.pop();
    assert.equal(ir.id, 1);
    assert.equal(ir.result.ok, true);
    const iterLine = text.split("\n").findIndex((l) => l.startsWith("iter ="));
    assert.ok(model.entriesForConfigLine(ir.result.lines as IrEntry[], iterLine, model.irRange).length > 0);

    await bridge.handle({ type: "request", id: 2, method: "kdd/assembly" });
    const asm = posted.pop();
    if (asm.error) {
      // no code generator for the target yet: the page shows this message as it is
      assert.equal(asm.error.code, -32803);
      assert.match(asm.error.message, /xehpg/);
    } else {
      const listing = model.listing(asm.result) as Listing;
      assert.ok(listing.lines.length > 0);
      assert.ok(heatLines(listing).every((h) => h.regs <= (listing.registers.peak ?? Infinity)));
    }

    const mark = messages.length;
    change(2, 'iter = "mb16oc32ic16"', 'iter = "mb16oc16ic16"');
    const second = await waitFor("kdd/compiled", (p) => p.uri === uri && p.version === 2);
    assert.ok(messages.indexOf(messages.find((m) => m.params === second)!) >= mark);
    bridge.notify("kdd/compiled", second);
    assert.deepEqual(posted.pop(), { type: "event", event: "kdd/compiled", params: second });
    const before = (messages.find((m) => m.method === "kdd/compiled" && m.params.version === 1)!.params as Compiled);
    assert.ok((second.registers.estimate as number) < (before.registers!.estimate as number));

    // a quick fix of a "did you mean", as VS Code's light bulb asks for it
    change(3, 'fma = "dpas"', 'fma = "dpass"');
    const typo = await waitFor("textDocument/publishDiagnostics",
      (p) => p.uri === uri && p.version === 3 && p.diagnostics.some((d: { message: string }) => d.message.includes("did you mean")));
    const diagnostic = typo.diagnostics.find((d: { message: string }) => d.message.includes("did you mean"));
    const actions = (await conn.sendRequest("textDocument/codeAction", { textDocument: { uri }, range: diagnostic.range,
      context: { diagnostics: [diagnostic] } })) as Array<{ title: string; kind: string; edit: { changes: Record<string, Array<{ newText: string }>> } }>;
    const fix = actions.find((a) => a.kind === "quickfix")!;
    assert.equal(fix.title, "Replace 'dpass' with 'dpas'");
    assert.deepEqual(fix.edit.changes[uri].map((e) => e.newText), ["dpas"]);
    assert.ok(actions.some((a) => a.kind === "refactor.extract") === false); // no refactor of a config that does not load
    change(4, 'fma = "dpass"', 'fma = "dpas"');
    await waitFor("kdd/compiled", (p) => p.uri === uri && p.version === 4);

    conn.sendNotification("textDocument/didSave", { textDocument: { uri } });
    const checked = await waitFor("kdd/checked", (p) => p.uri === uri && p.version === 4);
    assert.equal(checked.result.ok, true);
    const fourth = await waitFor("kdd/compiled", (p) => p.uri === uri && p.version === 4);
    assert.match(model.statusText(fourth, checked, 4), / · check ✓$/);
    assert.match(model.statusText(fourth, checked, 5), / · check … · compiling…$/); // the next edit: pending
  });

test("a kernel the code generator cannot lower: the preview gets the server's reason as the error", { timeout: 300_000 }, async () => {
  // The classic sm_90 schedule has no PTX rule for gelu_erf yet: kdd/assembly answers RequestFailed with the reason.
  const file = path.join(dir, "sm90.kernel.toml");
  const text = fs.readFileSync(path.join(ROOT, "tests", "data", "sm90_conv_classic.kernel.toml"), "utf8")
    .replace('post_ops = ["relu"]', 'post_ops = ["gelu_erf"]');
  fs.writeFileSync(file, text);
  const sm90 = `file://${file}`;
  conn.sendNotification("textDocument/didOpen",
    { textDocument: { uri: sm90, languageId: "kernel-toml", version: 1, text } });
  await waitFor("kdd/compiled", (p) => p.uri === sm90 && p.version === 1);
  const posted: any[] = [];
  const bridge = new PreviewBridge(sm90, (m, p) => conn.sendRequest(m, p), (m) => posted.push(m), () => undefined);
  await bridge.handle({ type: "request", id: 7, method: "kdd/assembly" });
  const answer = posted.pop();
  assert.equal(answer.id, 7);
  assert.equal(answer.error.code, -32803);
  assert.match(answer.error.message, /gelu_erf/);
});
