/* The extension's logic, free of the editor API so node's test runner can drive it (VS Code itself
 * cannot run on the test machines): where the server is, the kdd: URIs, the pass picker's items, the
 * gutter heat, and the bridge between the preview page and the language server. */
import * as path from "path";
import { Compiled, Listing, PassEntry, Range, model } from "./model";

/** How to start the server: the setting, else the workspace's .venv/bin/kdd, else kdd on PATH. */
export function serverCommand(setting: string, folders: string[], exists: (p: string) => boolean):
    { command: string; args: string[] } {
  if (setting.trim()) return { command: setting.trim(), args: ["lsp"] };
  for (const folder of folders) {
    const venv = path.join(folder, ".venv", "bin", "kdd");
    if (exists(venv)) return { command: venv, args: ["lsp"] };
  }
  return { command: "kdd", args: ["lsp"] };
}

/** kdd's virtual documents (server/lsp/virtual_docs.py): the IR after a pass, its diff, the assembly. */
export function irUri(docUri: string, pass: string, diff = false): string {
  return `kdd:/${diff ? "diff" : "ir"}/${pass}?${encodeURIComponent(docUri)}`;
}

export function asmUri(docUri: string): string {
  return `kdd:/asm?${encodeURIComponent(docUri)}`;
}

/** The virtual URI to ask the server for, from the path and (decoded) query VS Code hands a provider. */
export function contentUri(uriPath: string, query: string): string {
  return `kdd:${uriPath}?${encodeURIComponent(query)}`;
}

export interface PassItem { label: string; description: string; pass: string }

/** The IR picker: build, the passes that changed the IR (all of them with ``all``), final. */
export function passItems(passes: PassEntry[], all: boolean): PassItem[] {
  const byName = new Map(passes.map((p) => [p.name, p]));
  return model.pickablePasses(passes, !all).map((name) => {
    const p = byName.get(name);
    const description = p ? `${p.changed ? "changed" : "unchanged"} · ${p.nodes} nodes · ${p.ms.toFixed(1)} ms`
      : name === "build" ? "the built IR, before any pass" : "after every pass";
    return { label: name, description, pass: name };
  });
}

/** The passes whose diff is worth showing: those that changed the IR (Compiler Explorer's filter). */
export function diffItems(passes: PassEntry[]): PassItem[] {
  return passItems(passes, false).filter((i) => i.pass !== "build" && i.pass !== "final");
}

/** The pass before ``name`` in the pipeline (``build`` before the first): the left side of its diff. */
export function previousPass(passes: PassEntry[], name: string): string {
  const i = passes.findIndex((p) => p.name === name);
  return i > 0 ? passes[i - 1].name : "build";
}

export interface HeatLine { line: number; regs: number; bucket: number; hint: string }

/** Per config line: the most live registers of the assembly it produced, its heat bucket and a hint. */
export function heatLines(listing: Listing): HeatLine[] {
  const budget = listing.registers.budget ?? null;
  return [...model.configPressure(listing)].sort((a, b) => a[0] - b[0]).map(([line, regs]) => ({
    line, regs, bucket: model.heat(regs, budget), hint: `${regs}${budget ? `/${budget}` : ""} live registers`,
  }));
}

/** The commands the server advertises (executeCommandProvider) and the lenses name. vscode-languageclient
 * registers each of them; the extension's middleware runs the ones that open a view here (the preview, a
 * pass picker, VS Code's diff) and passes kdd.runCheck on to the server. */
export const SERVER_COMMANDS = ["kdd.runCheck", "kdd.showAssembly", "kdd.showIR", "kdd.showDiff"];
export const VIEW_COMMANDS = ["kdd.showAssembly", "kdd.showIR", "kdd.showDiff"];

/** Where a command runs: "view" (the extension opens a view) or "server" (workspace/executeCommand). */
export function commandRoute(command: string): "view" | "server" {
  return VIEW_COMMANDS.includes(command) ? "view" : "server";
}

/** The listing line under a line of the kdd:/asm document: that text form is a header, then one row per
 * listing line (and a final newline), so the header is what the document has beyond the listing. */
export function asmListingLine(docLine: number, docLineCount: number, listingLines: number): number | null {
  const header = docLineCount - 1 - listingLines;
  const line = docLine - header;
  return header >= 0 && line >= 0 && line < listingLines ? line : null;
}

/** Requests the preview page may make; the bridge adds the document to each. */
export const PREVIEW_METHODS = ["kdd/passes", "kdd/irAfterPass", "kdd/assembly", "kdd/asmHover", "kdd/stats",
  "kdd/check"];

export type Send = (method: string, params: object) => Promise<unknown>;

export interface PageMessage {
  type?: string;
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  range?: Range;
}

/** Between the preview page (server/view/static/view.js in a webview) and the language server: the
 * page's requests go to the server for one document, the server's notifications for it to the page,
 * and the page's clicks to the editor. */
export class PreviewBridge {
  private lastCompiled: Compiled | null;

  constructor(readonly docUri: string, private readonly send: Send, private readonly post: (m: object) => void,
              private readonly reveal: (r: Range) => void, lastCompiled: Compiled | null = null) {
    this.lastCompiled = lastCompiled;
  }

  async handle(message: PageMessage): Promise<void> {
    if (message.type === "ready") {
      if (this.lastCompiled) this.post({ type: "event", event: "kdd/compiled", params: this.lastCompiled });
    } else if (message.type === "reveal" && message.range) {
      this.reveal(message.range);
    } else if (message.type === "request" && typeof message.id === "number") {
      const id = message.id;
      const method = message.method ?? "";
      if (!PREVIEW_METHODS.includes(method)) {
        this.post({ type: "response", id, error: { code: -32601, message: `the preview cannot ask ${method}` } });
        return;
      }
      try {
        const result = await this.send(method, { ...(message.params ?? {}), textDocument: { uri: this.docUri } });
        this.post({ type: "response", id, result });
      } catch (err) {
        const e = err as { code?: number; message?: string };
        this.post({ type: "response", id, error: { code: e.code ?? -32603, message: e.message ?? String(err) } });
      }
    }
  }

  /** A server notification (kdd/compiled, kdd/checked): passed on when it is about this document. */
  notify(event: string, params: { uri?: string }): void {
    if (params.uri !== this.docUri) return;
    if (event === "kdd/compiled") this.lastCompiled = params as Compiled;
    this.post({ type: "event", event, params });
  }

  /** The editor's cursor is on a config line: the page lights up its IR and assembly lines. */
  cursor(line: number): void {
    this.post({ type: "event", event: "kdd/cursor", params: { line } });
  }
}

/** The preview's HTML: the page's own, with its scripts and styles loaded from the webview's origin and
 * a content security policy that allows nothing else. */
export function previewHtml(page: string, resource: (name: string) => string, cspSource: string): string {
  const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; ` +
    `style-src ${cspSource}; script-src ${cspSource};">`;
  return page
    .replace(/(href|src)="static\/([^"]+)"/g, (_m, attr: string, name: string) => `${attr}="${resource(name)}"`)
    .replace("<head>", `<head>\n${csp}`);
}
