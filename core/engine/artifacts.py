"""Engine results as plain data: the one conversion to JSON-ready objects.

``kdd compile --json``, the language server's ``kdd/...`` requests and
``kdd serve`` replies all carry these objects unchanged; the on-disk cache
stores them with msgpack. Positions are LSP's: 0-based lines, UTF-16
characters, exclusive ends.
"""
from __future__ import annotations

from math import prod

from kdd.core.codegen.backend import backend_for
from kdd.core.config.budget import FLOOR, estimate_budget
from kdd.core.config.lanes import lane_use
from kdd.core.ir.printer import print_ir
from kdd.core.passes.lane_use import issued_macs
from kdd.core.passes.loop_stats import loop_stats
from kdd.core.passes.metrics import kernel_metrics, reduction_iterations
from kdd.core.passes.registers import estimate_registers
from kdd.core.passes.trace_view import BUILD, text_diff, trace_to_json
from kdd.core.spec import Diagnostic, Range

# The ``source`` of a diagnostic says which stage found it, as editors show it.
SPEC_SOURCE = "kdd/spec"
BUDGET_SOURCE = "kdd/budget"
_BUDGET_CODES = ("register-budget", "slm-budget", "budget")


def range_dict(r: Range) -> dict:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def diagnostic_dict(d: Diagnostic, source: str | None = None) -> dict:
    """A document diagnostic; its source is the spec stage unless it is about a budget."""
    if source is None:
        source = BUDGET_SOURCE if "budget" in d.code or "overflow" in d.message else SPEC_SOURCE
    return {"range": range_dict(d.range), "severity": d.severity.name.lower(), "message": d.message,
            "code": d.code, "source": source}


def failure_diagnostic(failure: dict, whole: Range) -> dict:
    """A failed stage (``Failure.to_dict()``, as results carry it) as an error diagnostic, at its knob's
    range or else at ``whole`` (a table header, the document start)."""
    return {"range": failure.get("range") or range_dict(whole), "severity": "error", "message": failure["message"],
            "code": failure["code"], "source": f"kdd/{failure['stage']}"}


def line_map(printed) -> list[dict]:
    """For each printed IR line: the node kind and its origin (builder step, config knob) when it has one.

    Ranges are joined later (:func:`with_ranges`) because they depend on where
    the knobs sit in the current text, while the map depends only on the IR.
    """
    out = []
    for i, node in enumerate(printed.nodes):
        entry: dict = {"line": i, "kind": type(node).__name__}
        origin = node.origin
        if origin is not None and hasattr(origin, "to_dict"):
            entry["origin"] = origin.to_dict()
        out.append(entry)
    return out


def with_ranges(lines: list[dict], sources: dict[str, Range]) -> list[dict]:
    """``lines`` with each origin's knob range in the current document added (a new list)."""
    out = []
    for entry in lines:
        knob = entry.get("origin", {}).get("knob")
        if knob in sources:
            entry = {**entry, "origin": {**entry["origin"], "range": range_dict(sources[knob])}}
        out.append(entry)
    return out


def with_config_range(line: dict, sources: dict[str, Range]) -> dict:
    """An assembly line with the range of its IR node's knob in the current document added."""
    knob = (line.get("ir_node") or {}).get("knob")
    return {**line, "config_range": range_dict(sources[knob])} if knob in sources else line


def build_artifact(kernel) -> dict:
    """The kernel's ABI and its built IR with the line map."""
    printed = print_ir(kernel.body)
    return {"kernel": kernel.to_dict(), "ir": {"text": printed.text, "lines": line_map(printed)}}


def trace_artifact(trace) -> dict:
    """The pass trace with every pass's IR text and CSE's notes."""
    return trace_to_json(trace)


def pass_items(items, traced: dict) -> dict:
    """The ``trace``, ``ir_after`` and ``diff`` fields from the trace artifact (IR texts by pass)."""
    texts = {BUILD: traced["build"]["ir"], **{p["name"]: p["ir"] for p in traced["passes"]}}
    order = list(texts)
    out: dict = {}
    for item in items:
        if item == "passes":
            out["trace"] = traced
        elif item.startswith("ir:"):
            out.setdefault("ir_after", {})[item[3:]] = texts[item[3:]]
        elif item.startswith("diff:"):
            name = item[5:]
            before = texts[order[order.index(name) - 1]]
            out.setdefault("diff", {})[name] = "" if before == texts[name] else text_diff(before, texts[name], name)
    return out


def stats_artifact(r, kernel, trace, ir: int | None = None) -> dict:
    """Registers, the steady-state main loop per reduction iteration (None without one) and the kernel
    figures of the built and the final IR.

    The registers' ``ir`` is the IR register model's peak of the final IR, on Xe the allocator's walk over
    it (the figure a compile reports is chosen by :func:`reported_registers`): ``ir`` where the code
    generator's listing already has it, else computed here; ``floor`` is what refuses a config before the
    build (C, A, B); ``config`` and ``by_label`` keep the config-time estimate the defaults heuristic ranks
    tiles with, before any IR exists."""
    model = backend_for(r.target).register_model(kernel)
    budget = estimate_budget(r.problem, r.config, r.target)
    iterations = reduction_iterations(trace.input)
    loop = loop_stats(trace.input, trace.final, r.target)
    if ir is None:
        ir = estimate_registers(trace.final, model, r.config.regs).regs
    return {"registers": {"ir": ir, "config": budget.reg_total,
                          "by_label": {x.label: x.amount for x in budget.regs},
                          "floor": {x.label: x.amount for x in budget.regs if x.label in FLOOR},
                          "budget": budget.reg_capacity, "unit": budget.reg_unit},
            "loop": None if loop is None else loop.to_dict(),
            "lanes": lane_figures(r, kernel, trace),
            "metrics": {"build": kernel_metrics(trace.input, model, iterations).to_dict(),
                        "final": kernel_metrics(trace.final, model, iterations).to_dict()}}


def lane_figures(r, kernel, trace) -> dict | None:
    """Useful multiply lanes per issued lane (:mod:`kdd.core.config.lanes`): ``issued`` counted on the built
    IR (every multiply instruction's shape times its loops' trips, times the kernel's threads), ``useful``
    the problem's GEMM extents, ``config`` the config's own figure with what pads it. None where either is
    not counted (a warp group's ``wgmma``, a loop without a constant trip count)."""
    config = lane_use(r.problem, r.config, r.target)
    per_thread = issued_macs(trace.input)
    if config is None or per_thread is None:
        return None
    threads = prod(kernel.grid) * prod(kernel.tg)
    issued = per_thread * threads
    return {"source": "IR", "useful": config.useful, "issued": issued,
            "fraction": round(config.useful / issued, 4) if issued else 1.0, "config": config.to_dict()}


def asm_loop_figures(main_loop: dict | None, ir_loop: dict | None) -> dict | None:
    """The assembly's main loop per reduction iteration, in the IR loop figures' terms
    (:mod:`kdd.core.passes.loop_stats`; the listing's ``mix.main_loop``, :mod:`kdd.core.codegen.xe.stats`) so the two stand side by side: ``dpas`` multiply instructions,
    ``sends``, ``int_ops`` and ``float_ops`` (instructions of those pipes other than multiplies and
    moves), ``moves`` (``mov``), ``alu_per_dpas`` ((int + float + moves) / multiplies) and
    ``min_sends`` (the IR's fewest messages for the same bytes). A trip covers the reduction iterations
    its multiplies stand for: the listing's multiplies per trip over the IR's per iteration. None without
    a main loop in either."""
    if not main_loop or not ir_loop or not main_loop.get("fma") or not ir_loop["dpas"]:
        return None
    per_trip = main_loop["fma"] / ir_loop["dpas"]

    def scaled(x: float) -> float:
        return round(x / per_trip, 2)

    alu = main_loop["int_ops"] + main_loop["float_ops"] + main_loop["moves"]
    return {"source": "assembly", "var": main_loop["var"], "trips": main_loop["trips"],
            "iterations_per_trip": round(per_trip, 2), "dpas": scaled(main_loop["fma"]),
            "sends": scaled(main_loop["per_iteration"]["send"]), "min_sends": ir_loop["min_sends"],
            **{k: scaled(main_loop[k]) for k in ("int_ops", "float_ops", "moves")},
            "alu_per_dpas": round(alu / main_loop["fma"], 2)}


ALLOCATOR = {"xe": "allocator", "ptx": "ptxas"}  # who allocates the registers of each ISA's code


def reported_registers(registers: dict, codegen: dict, target) -> dict:
    """``stats_artifact``'s registers as a compile reports them: the figure (``estimate``) is the
    allocation the code generator made (kdd's allocator on Xe, ptxas on sm_90) whenever it ran, and the
    IR register model's only where none did; ``source`` says which, ``allocated`` keeps the allocation
    (None without one) and ``ir`` the model."""
    allocated = codegen.get("allocated") if codegen.get("ok") else None
    if allocated is None:
        return {**registers, "estimate": registers["ir"], "allocated": None, "source": "IR model"}
    return {**registers, "estimate": allocated, "allocated": allocated, "source": ALLOCATOR[target.isa]}


def register_diagnostics(registers: dict, codegen: dict, where: Range) -> list[dict]:
    """The register verdict of a compile: the code generator's ``out-of-registers`` error (at the knob
    it names) when the kernel does not fit, nothing when the allocation fits, and without a code
    generator a warning at ``where`` when the IR register model's figure exceeds the budget."""
    failure = codegen.get("failure") or {}
    if failure.get("code") == "out-of-registers":
        return [{"range": failure.get("range", range_dict(where)), "severity": "error", "code": "regs",
                 "source": BUDGET_SOURCE, "message": failure["message"]}]
    if registers["allocated"] is not None or registers["estimate"] <= registers["budget"]:
        return []
    return [{"range": range_dict(where), "severity": "warning", "code": "regs", "source": BUDGET_SOURCE,
             "message": f"register budget overflow by the IR register model: {registers['estimate']} > "
                        f"{registers['budget']} {registers['unit']} (no register allocation to say whether "
                        f"it fits)"}]


SPILL_KNOBS = ("iter", "slm", "regs")   # what removes a spill: a smaller thread tile, fewer buffers, more registers


def spill_diagnostic(codegen: dict, sources: dict[str, Range], where: Range) -> dict:
    """ptxas's spill as a warning (the kernel runs, slower): at the first written knob that removes it, or
    at ``where``, naming each of them."""
    spill = codegen["spill"]
    knob = next((k for k in SPILL_KNOBS if k in sources), None)
    return {"range": range_dict(sources[knob] if knob else where), "severity": "warning", "code": "spill",
            "source": BUDGET_SOURCE,
            "message": f"ptxas spilled {spill.get('spill_stores', 0)} bytes stored and {spill.get('spill_loads', 0)} "
                       f"loaded to local memory at {codegen['allocated']} registers: a smaller thread tile (iter, "
                       f"i=), fewer shared-memory buffers (slm, s=) or more registers (regs=, up to 255) removes it"}


def verify_artifact(kernel, trace) -> dict:
    """The IR verifier's verdict on the builder's IR and the IR after every pass: ``ok``, the number of
    stages verified and each problem with its stage."""
    from kdd.core.passes.verify import verify_trace  # --verify only: a compile loads it when asked

    stages = verify_trace(kernel, trace)
    problems = [{"stage": stage, **p.to_dict()} for stage, ps in stages for p in ps]
    return {"ok": not problems, "stages": len(stages), "problems": problems}


def _is_instruction(line: dict) -> bool:
    text = line["text"].strip()
    return bool(text) and not text.startswith("//") and not text.endswith(":")


def instruction_node(lines: list[dict], index: int) -> dict | None:
    """The listing line of the ``index``-th instruction (comments and labels not counted) with the IR
    node it came from: ``{"asm_line", "text", "ir_node"}``, or None past the end."""
    count = 0
    for i, line in enumerate(lines):
        if not _is_instruction(line):
            continue
        if count == index:
            return {"asm_line": i, "text": line["text"], "ir_node": line.get("ir_node")}
        count += 1
    return None


def blame(wrong: dict, listing: dict, final) -> dict:
    """A simulator's wrong instruction (``index`` among the listing's instructions) with its listing line
    and the line of ``final`` (the IR the listing came from) its instruction came from; in place."""
    wrong["listing"] = instruction_node(listing["lines"], wrong["index"])
    node = (wrong["listing"] or {}).get("ir_node")
    if node is not None:
        wrong["ir"] = print_ir(final).text.splitlines()[node["line"]].strip()
    return wrong


def register_checkpoints(listing: dict) -> list[dict]:
    """The register buffers of a Xe listing as checkpoints for the register comparison of
    ``kdd check --asm --bisect``: each buffer's last placement (``start`` byte, ``bytes``) and the index of
    the last instruction it is live at. Headers (64-bit addresses where the IR holds offsets) and
    temporaries are left out: their registers do not hold an IR buffer's bytes."""
    index, count = [], 0
    for line in listing["lines"]:
        index.append(count - 1 if not _is_instruction(line) else count)
        count += _is_instruction(line)
    last: dict[str, dict] = {}
    for a in listing["registers"]["allocations"]:
        if a["category"] in ("headers", "temporaries") or a["last_line"] >= len(index):
            continue
        if a["label"] not in last or a["last_line"] >= last[a["label"]]["last_line"]:
            last[a["label"]] = a
    return [{"name": a["label"], "start": a["start"], "bytes": a["bytes"], "index": index[a["last_line"]]}
            for a in last.values() if index[a["last_line"]] >= 0]
