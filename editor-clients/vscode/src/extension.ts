/* The VS Code layer: starts `kdd lsp`, and places what it answers (logic.ts decides what). Everything
 * here is a call of the editor API; the decisions live in logic.ts and model.ts, which the tests run. */
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import {
  PassItem, PreviewBridge, asmListingLine, asmUri, commandRoute, contentUri, diffItems, heatLines, irUri, passItems,
  previewHtml, previousPass, serverCommand,
} from "./logic";
import { Checked, Compiled, PassEntry, Range, model } from "./model";

const HEAT_COLORS = ["#2f6f3f", "#7a8a2a", "#b58a1c", "#c4571d", "#d11f1f"];

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const compiled = new Map<string, Compiled>();
  const checked = new Map<string, Checked>();
  const previews = new Map<string, { panel: vscode.WebviewPanel; bridge: PreviewBridge }>();
  const media = vscode.Uri.joinPath(context.extensionUri, "media");
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.command = "kdd.showAssembly";
  const heat = HEAT_COLORS.map((color) => vscode.window.createTextEditorDecorationType({
    isWholeLine: true, borderStyle: "solid", borderWidth: "0 0 0 3px", borderColor: color,
    overviewRulerColor: color, overviewRulerLane: vscode.OverviewRulerLane.Left,
  }));
  const virtualChanged = new vscode.EventEmitter<vscode.Uri>();
  const openVirtual = new Set<string>();
  context.subscriptions.push(status, virtualChanged, ...heat);

  const settings = vscode.workspace.getConfiguration("kdd");
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const server: ServerOptions = serverCommand(settings.get<string>("path") ?? "", folders, fs.existsSync);
  // The server advertises every command a lens names and vscode-languageclient registers them; those that
  // open a view run here (viewCommands, defined below), kdd.runCheck runs on the server.
  const viewCommands = new Map<string, (arg?: unknown, pass?: unknown) => Promise<void> | void>();
  const options: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "kernel-toml" }],
    initializationOptions: { target: settings.get("target"), timeLimit: settings.get("timeLimit"),
      checkOnSave: settings.get("checkOnSave") },
    synchronize: { configurationSection: "kdd" },
    middleware: {
      executeCommand: async (command, args, next) => {
        const run = viewCommands.get(command);
        if (commandRoute(command) === "view" && run) return run(args[0], args[1]);
        return next(command, args.length ? args : [configEditor()?.document.uri.toString()]);
      },
    },
  };
  client = new LanguageClient("kdd", "kdd", server, options);
  const lsp = client;

  const request = (method: string, params: object) => lsp.sendRequest(method, params);
  const configEditor = () => {
    const editor = vscode.window.activeTextEditor;
    return editor && editor.document.languageId === "kernel-toml" ? editor : undefined;
  };
  const targetUri = (arg: unknown): string | undefined =>
    typeof arg === "string" ? arg : arg instanceof vscode.Uri ? arg.toString() : configEditor()?.document.uri.toString();

  /** The status of the active config: its latest compile, and its check while that is about this text
   * (pending after an edit until the new version's verdict). */
  function updateStatus(): void {
    const editor = configEditor();
    if (!editor) {
      status.hide();
      return;
    }
    const uri = editor.document.uri.toString();
    status.text = model.statusText(compiled.get(uri) ?? null, checked.get(uri) ?? null, editor.document.version);
    status.show();
  }

  function clearHeat(uri: string): void {
    for (const editor of vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === uri)) {
      heat.forEach((type) => editor.setDecorations(type, []));
    }
  }

  /** The gutter heat and per-line hints of a config, from its assembly; none (and the reason in the
   * status tooltip) while the server cannot produce assembly. */
  async function refreshHeat(uri: string): Promise<void> {
    const editors = vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === uri);
    if (!editors.length) return;
    let lines: ReturnType<typeof heatLines> = [];
    try {
      const listing = model.listing(await request("kdd/assembly", { textDocument: { uri } }));
      lines = listing ? heatLines(listing) : [];
      status.tooltip = undefined;
    } catch (err) {
      status.tooltip = `Assembly unavailable: ${(err as Error).message}`;
    }
    for (const editor of editors) {
      heat.forEach((type, bucket) => editor.setDecorations(type, lines.filter((l) => l.bucket === bucket).map((l) => ({
        range: new vscode.Range(l.line, 0, l.line, 0),
        hoverMessage: l.hint,
        renderOptions: { after: { contentText: `  ${l.hint}`, color: new vscode.ThemeColor("editorCodeLens.foreground") } },
      }))));
    }
  }

  lsp.onNotification("kdd/compiled", (params: Compiled) => {
    compiled.set(params.uri, params);
    previews.get(params.uri)?.bridge.notify("kdd/compiled", params);
    for (const v of openVirtual) if (v.includes(encodeURIComponent(params.uri))) virtualChanged.fire(vscode.Uri.parse(v));
    updateStatus();
    if (params.ok) void refreshHeat(params.uri);
    else clearHeat(params.uri); // no figures of an older text stay beside a config that does not compile
  });
  lsp.onNotification("kdd/checked", (params: Checked & { uri: string }) => {
    checked.set(params.uri, params);
    previews.get(params.uri)?.bridge.notify("kdd/checked", params);
    updateStatus();
  });

  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider("kdd", {
    onDidChange: virtualChanged.event,
    async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
      const key = contentUri(uri.path, uri.query);
      openVirtual.add(uri.toString());
      try {
        return ((await request("kdd/content", { uri: key })) as { text: string }).text;
      } catch (err) {
        return `# ${(err as Error).message}\n`; // the server's reason, e.g. no code generator for the target
      }
    },
  }));

  // Instruction docs and live buffers over the lines of the kdd:/asm document.
  const listingSizes = new Map<string, number>();
  context.subscriptions.push(vscode.languages.registerHoverProvider({ scheme: "kdd" }, {
    async provideHover(doc: vscode.TextDocument, position: vscode.Position): Promise<vscode.Hover | undefined> {
      if (doc.uri.path !== "/asm") return undefined;
      const configUri = doc.uri.query;
      const ask = (line: number) => request("kdd/asmHover", { textDocument: { uri: configUri }, line }) as
        Promise<{ line: number; lines: number; markdown: string } | null>;
      let lines = listingSizes.get(doc.uri.toString());
      if (lines === undefined) {
        lines = (await ask(0))?.lines ?? 0;
        listingSizes.set(doc.uri.toString(), lines);
      }
      const line = asmListingLine(position.line, doc.lineCount, lines);
      const hover = line === null ? null : await ask(line);
      return hover ? new vscode.Hover(new vscode.MarkdownString(hover.markdown)) : undefined;
    },
  }));

  async function pickPass(uri: string, items: (passes: PassEntry[]) => PassItem[], title: string):
      Promise<{ item: PassItem; passes: PassEntry[] } | undefined> {
    const answer = (await request("kdd/passes", { textDocument: { uri } })) as { ok: boolean; passes?: PassEntry[]; error?: string };
    if (!answer.ok || !answer.passes) {
      void vscode.window.showErrorMessage(`kdd: ${answer.error ?? "no pass trace"}`);
      return undefined;
    }
    const passes = answer.passes;
    const item = await vscode.window.showQuickPick(items(passes), { title, matchOnDescription: true });
    return item && { item, passes };
  }

  function openPreview(uri: string): void {
    const open = previews.get(uri);
    if (open) {
      open.panel.reveal(vscode.ViewColumn.Beside, true);
      return;
    }
    const panel = vscode.window.createWebviewPanel("kdd.preview", `kdd: ${path.basename(vscode.Uri.parse(uri).fsPath)}`,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, { enableScripts: true, localResourceRoots: [media] });
    const page = fs.readFileSync(vscode.Uri.joinPath(media, "index.html").fsPath, "utf8");
    panel.webview.html = previewHtml(page, (name) => panel.webview.asWebviewUri(vscode.Uri.joinPath(media, name)).toString(),
      panel.webview.cspSource);
    const bridge = new PreviewBridge(uri, request, (m) => void panel.webview.postMessage(m), (r) => void reveal(uri, r),
      compiled.get(uri) ?? null);
    panel.webview.onDidReceiveMessage((m) => bridge.handle(m));
    panel.onDidDispose(() => previews.delete(uri));
    previews.set(uri, { panel, bridge });
  }

  async function reveal(uri: string, range: Range): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
    const r = new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
    const editor = await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: r });
    editor.revealRange(r, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  viewCommands.set("kdd.showAssembly", (arg?: unknown) => {
    const uri = targetUri(arg);
    if (uri) openPreview(uri);
  });
  viewCommands.set("kdd.showIR", async (arg?: unknown, pass?: unknown) => {
    const uri = targetUri(arg);
    const name = typeof pass === "string" ? pass
      : uri && (await pickPass(uri, (p) => passItems(p, false), "IR after pass (passes that changed the IR)"))?.item.pass;
    if (uri && name) {
      await vscode.window.showTextDocument(vscode.Uri.parse(irUri(uri, name)), { viewColumn: vscode.ViewColumn.Beside });
    }
  });
  viewCommands.set("kdd.showDiff", async (arg?: unknown) => {
    const uri = targetUri(arg);
    const picked = uri && await pickPass(uri, diffItems, "What a pass changed (passes that changed the IR)");
    if (uri && picked) {
      const before = previousPass(picked.passes, picked.item.pass);
      await vscode.commands.executeCommand("vscode.diff", vscode.Uri.parse(irUri(uri, before)),
        vscode.Uri.parse(irUri(uri, picked.item.pass)), `IR: ${before} ↔ ${picked.item.pass}`);
    }
  });

  context.subscriptions.push(
    vscode.commands.registerCommand("kdd.showAssemblyText", async (arg?: unknown) => {
      const uri = targetUri(arg);
      if (uri) await vscode.window.showTextDocument(vscode.Uri.parse(asmUri(uri)), { viewColumn: vscode.ViewColumn.Beside });
    }),
    vscode.commands.registerCommand("kdd.toggleCheckOnSave", async () => {
      const config = vscode.workspace.getConfiguration("kdd");
      const next = !config.get<boolean>("checkOnSave", true);
      await config.update("checkOnSave", next, vscode.ConfigurationTarget.Workspace);
      void vscode.window.showInformationMessage(`kdd: check on save ${next ? "on" : "off"}`);
    }),
    vscode.commands.registerCommand("kdd.restart", () => lsp.restart()),
    vscode.window.onDidChangeActiveTextEditor(updateStatus),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document.languageId === "kernel-toml") updateStatus();
    }),
    vscode.window.onDidChangeTextEditorSelection((e) => {
      previews.get(e.textEditor.document.uri.toString())?.bridge.cursor(e.selections[0].active.line);
    }),
  );
  await lsp.start();
  updateStatus();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
