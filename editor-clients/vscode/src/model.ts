/* Typed access to the views' shared model (server/view/static/model.js, copied into media/ at build
 * time): the same functions the browser page uses, so the extension computes nothing of its own. */

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

export interface AsmLine {
  text: string;
  live_regs: number | null;
  live: string[];
  ir_node: { line: number; kind: string; knob?: string | null } | null;
  config_range: Range | null;
}

export interface Listing {
  target: string | null;
  text: string;
  lines: AsmLine[];
  registers: { peak?: number; budget?: number; ir?: number; by_label?: Record<string, number> };
  mix: unknown;
  roofline: unknown;
  assembler: { ok?: boolean; messages?: string[] } | null;
}

export interface RegisterSummary {
  peak: number | null;
  livePeak: number | null;
  budget: number | null;
  ir: number | null;
  byLabel: Record<string, number>;
  source: string;
  unit: string;
}

export interface PassEntry { name: string; changed: boolean; ms: number; nodes: number; cached: boolean }

export interface Compiled {
  uri: string;
  version: number | null;
  ok: boolean;
  target?: string;
  config?: string;
  registers?: Record<string, unknown>;
  passes?: { ran: number; changed: number };
  compile_ms?: number;
  error?: string | null;
}

export interface CheckResult { ok: boolean; verdict?: string; rel_err?: number | null; tol?: number; error?: string }

/** A kdd/checked notification: the check of one text version. */
export interface Checked { uri?: string; version: number | null; result: CheckResult }

export interface IrEntry { line: number; kind: string; origin?: { step: string; knob: string | null; range?: Range } }

interface KddModel {
  listing(result: unknown): Listing | null;
  registerSummary(registers: unknown): RegisterSummary | null;
  registerText(registers: unknown): string;
  checkText(checked: Checked | null, version?: number | null): string;
  heat(value: number | null, budget: number | null | undefined): number;
  covers(range: Range | null, line: number): boolean;
  entriesForConfigLine<T>(entries: T[], line: number, rangeOf: (e: T) => Range | null): number[];
  irRange(entry: IrEntry): Range | null;
  asmRange(line: AsmLine): Range | null;
  configPressure(listing: Listing): Map<number, number>;
  pickablePasses(passes: PassEntry[], onlyChanged: boolean): string[];
  statusText(compiled: Compiled | null, checked: Checked | null, version?: number | null): string;
}

// eslint-disable-next-line @typescript-eslint/no-var-requires
export const model: KddModel = require("../media/model.js");
