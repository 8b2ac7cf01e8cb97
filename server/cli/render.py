"""Text forms of the engine's results for the terminal; JSON output prints the results unchanged.

Every function here reads only the plain-data results, so ``kdd compile``
prints the same text whether the engine ran in-process or in a daemon
(``--connect``).
"""
from __future__ import annotations

import sys


def where(path: str | None, rng: dict) -> str:
    start = rng["start"]
    return f"{path or '<text>'}:{start['line'] + 1}:{start['character'] + 1}"


def print_diagnostics(path: str | None, diagnostics: list[dict], severities=None) -> None:
    """``FILE:LINE:COL: severity: message [code]`` on stderr, as compilers print them."""
    for d in diagnostics:
        if severities is None or d["severity"] in severities:
            print(f"{where(path, d['range'])}: {d['severity']}: {d['message']} [{d['code']}]", file=sys.stderr)


def print_failure(command: str, result: dict) -> int:
    """A failed result on stderr: the error, then every diagnostic; returns the exit status."""
    failure = result.get("failure", {})
    diagnostics = result.get("diagnostics", [])
    if not any(d["severity"] == "error" and d["message"] == result["error"] for d in diagnostics):
        print(f"kdd {command}: error: {result['error']}", file=sys.stderr)   # else its diagnostic says it, once
    print_diagnostics(result.get("file"), diagnostics)
    return 3 if failure.get("internal") else 2


def emitted(result: dict, item: str) -> bool:
    """Whether ``result`` holds emit ``item`` (a failed compile holds those made before the failure)."""
    head = item.split(":")[0] + ":" if ":" in item else item
    return {"passes": "trace", "ir:": "ir_after", "diff:": "diff"}.get(head, head) in result


def compile_text(result: dict, items: list[str]) -> str:
    """The text of ``kdd compile``: each emitted item in the order asked."""
    parts = []
    if "ir" in items:
        parts.append(result["ir"]["text"])
    for item in items:
        if item == "passes":
            from kdd.core.passes.trace_view import render_trace_table

            trace = result["trace"]
            final = trace["passes"][-1]["ir"] if trace["passes"] else trace["build"]["ir"]
            parts.append(render_trace_table(trace) + "=== final IR\n" + final)
        elif item.startswith("ir:"):
            parts.append(f"=== IR after {item[3:]}\n" + result["ir_after"][item[3:]])
        elif item.startswith("diff:"):
            parts.append(result["diff"][item[5:]] or f"=== {item[5:]} changed nothing\n")
        elif item == "stats":
            parts.append(stats_text(result["stats"]))
        elif item == "asm":
            parts.append(result["asm"]["listing"])      # annotated: live registers per line, the header
        elif item == "ptx":
            parts.append(result["ptx"]["asm"])          # plain PTX, as ptxas assembles it
        elif item == "sass":
            parts.append(sass_text(result["sass"]))
        elif item == "check":
            parts.append(check_text(result["check"]))
        elif item == "verify":
            parts.append(verify_text(result["verify"]))
    return "".join(parts)


def stats_text(stats: dict) -> str:
    regs = stats["registers"]
    floor = regs["floor"]
    floor_text = " + ".join(f"{k} {v}" for k, v in floor.items()) + f" = {sum(floor.values())}"
    lines = [f"registers: {regs['estimate']} by the {regs['source']} (IR model {regs['ir']}; floor before the "
             f"build {floor_text}), budget {regs['budget']} {regs['unit']}"]
    loop = stats.get("loop")
    if loop is not None:
        kinds = ", ".join(f"{k} {v['count']:g} ({v['bytes']:g} B)" for k, v in loop["by_kind"].items())
        lines.append(f"main loop per reduction iteration ({loop['iterations_per_trip']:g} per trip): "
                     f"{loop['dpas']:g} {loop['fma']}, {loop['sends']:g} sends of {loop['send_bytes']:g} B "
                     f"(at least {loop['min_sends']}; {kinds}), {loop['int_ops']:g} int ops, "
                     f"{loop['float_ops']:g} float ops, {loop['moves']:g} moves, "
                     f"{loop['operand_reorders']:g} operand reorders (source: {loop['source']})")
    asm = stats.get("asm_loop")
    if asm is not None:
        lines.append(f"main loop per reduction iteration ({asm['iterations_per_trip']:g} per trip of "
                     f"{asm['var']}): {asm['dpas']:g} {loop['fma']}, {asm['sends']:g} sends (at least "
                     f"{asm['min_sends']}), {asm['int_ops']:g} int ops, {asm['float_ops']:g} float ops, "
                     f"{asm['moves']:g} moves, {asm['alu_per_dpas']:g} ALU per {loop['fma']} (source: assembly)")
    lanes = stats.get("lanes")
    if lanes is not None:
        lines.append(f"multiply lanes: {lanes['fraction']:.1%} useful ({lanes['useful']} multiply-adds of "
                     f"{lanes['issued']} issued by {lanes['config']['fma']}; {lanes['config']['reason']}) "
                     f"(source: {lanes['source']})")
    for stage in ("build", "final"):
        m = stats["metrics"][stage]
        lines.append(f"{stage:>5}: {m['stmts']} statements, {m['inner_ops']:g} integer ops per reduction "
                     f"iteration, {m['loop_ops']} in loops, {m['barriers']} barriers")
    return "\n".join(lines) + "\n"


def verify_text(verify: dict) -> str:
    """``verify: ok`` with the stages verified, or one line per problem."""
    if verify["ok"]:
        return f"verify: ok ({verify['stages']} stages: the builder's IR and every pass's)\n"
    return "".join(f"verify: {p['stage']}: {p['rule']}: {p['message']} (in: {p['where']})\n"
                   for p in verify["problems"])


def sass_text(sass: dict) -> str:
    """SASS with live registers per instruction and the PTX line each came from."""
    regs = sass["registers"]
    rows = [f"// SASS by ptxas: {regs.get('allocated')} registers allocated, nvdisasm peak {regs['peak']} live"]
    width = max((len(line["text"]) for line in sass["lines"]), default=0)
    for line in sass["lines"]:
        ptx = "" if line.get("ptx_line") is None else f", PTX line {line['ptx_line'] + 1}"
        rows.append(f"/*{line['offset']:05x}*/ {line['text']:<{width}}  // {line['live_regs']:3d} live{ptx}")
    return "\n".join(rows) + "\n"


ARTIFACT_TEXT = {"asm": "the assembled kernel in kdd's Xe simulator", "ptx": "the PTX in kdd's PTX simulator",
                 "ir": "the IR after {stage} in the interpreter", "device": "the cubin on the CUDA GPU"}


def ran(result: dict) -> str:
    """What a check ran, in words (``artifact`` and ``stage``)."""
    return ARTIFACT_TEXT.get(result.get("artifact", "ir"), "{stage}").format(stage=result.get("stage", "final"))


def check_text(result: dict) -> str:
    """The verdict and what ran (or the bisection's table), then what the check shape reduced."""
    from kdd.core.passes.pass_bisect import render_bisect

    reduced = result.get("reduced")
    note = f"check shape {reduced['shape']}: {reduced['text']}\n" if reduced else ""
    if not result.get("ok", False) and "failure" in result:
        return f"FAIL: {result['error']}\n"
    if "stages" in result:
        tail = f"not checkable: {result['stages'][-1]['detail']}\n" if result.get("verdict") == "not-checkable" else ""
        return render_bisect(result) + tail + note
    if result.get("verdict") == "not-checkable":
        return f"not checkable {result.get('shape')} ({ran(result)}): {result['reason']}\n" + note
    if "error" in result:
        if result.get("artifact") in ("asm", "ptx"):
            ir = ((result.get("asm") or {}).get("first_wrong") or {}).get("ir")
            return f"WRONG {result['shape']}: {ran(result)} failed:\n{result['error']}\n" + \
                (f"  from IR: {ir}\n" if ir else "") + note
        return f"WRONG {result['shape']}: the kernel broke the IR semantics while running:\n{result['error']}\n" + note
    rel = "nan" if result["rel_err"] is None else f"{result['rel_err']:.3g}"
    line = f"{'ok' if result['ok'] else 'WRONG'} {result['shape']} ({ran(result)}): rel_err {rel} " \
           f"(tol {result['tol']:g}), {result['ms']:.0f} ms"
    if result.get("unwritten"):
        line += f"; {result['unwritten']} element(s) of {result['tensor']} never written"
    if result.get("first_bad_index") is not None:
        line += f"; first bad {result.get('tensor')}{result['first_bad_index']}"
    sim = result.get("asm")
    if sim is not None and "thread_instructions" in sim:
        line += f"; simulated {sim['thread_instructions']} thread-instructions"
        line += _first_wrong(sim.get("first_wrong"))
    return line + "\n" + note


def _first_wrong(wrong: dict | None) -> str:
    if wrong is None:
        return ""
    out = f"\nfirst wrong {wrong['kind']}: {wrong['instruction']}"
    return out + (f"\n  from IR: {wrong['ir']}" if wrong.get("ir") else "")
