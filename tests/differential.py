"""The differential test's harness: one random kernel checked twice, by the IR interpreter and by the
generated code in its simulator (Xe: the assembled binary in ``kdd.core.xesim``; sm_90: the PTX in
``kdd.core.ptxsim``), each against the float64 reference under the check protocol and tolerances.

``sweep(seed, count)`` draws ``count`` kernels from the builder's random strategies
(tests/core/builder/kernel_strategies.py) and returns one record per kernel with its ``outcome``:

* ``agree``: both checks pass, or both miss the reference alike (their outputs agree with each other:
  reason ``both off the reference``, e.g. an ``exp`` past the f32 range, where the float64 reference is
  finite);
* ``disagree``: one passes and the other does not, or both fail (``reason`` says which: ``code
  wrong``, ``code faults``, ``assembler rejected`` - invalid code is a generator bug -, ``ir wrong``);
* ``ir-fault``: the interpreter stops on the IR itself (an access outside a buffer...): a bug of the
  builder or a pass, found here but not a difference between IR and code;
* ``error``: kdd itself raised (the traceback is kept);
* ``not-checkable``: kdd cannot check the code (``reason``: ``no-codegen``, a form the generator cannot
  lower yet; ``simulator-gap``; ``no-assembler``), never counted as agreement or disagreement.

A config that runs out of registers is no case, like one the builder or the validation refuses: ``kdd
compile`` refuses it as written (exit 2, naming the knobs that would make it fit).

Used by tests/core/test_differential.py (a bounded sweep) and bench/differential.py (a long one).
"""
from __future__ import annotations

import shutil
import sys
import time
import traceback
from math import prod
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "core" / "builder"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_strategies import configs, problems  # noqa: E402

from kdd.core.builder import BuildError, build_kernel  # noqa: E402
from kdd.core.config.validate import validate_config  # noqa: E402
from kdd.core.interp.check import check_kernel  # noqa: E402
from kdd.core.interp.errors import InterpError  # noqa: E402

TYPES = ["f32", "f16", "bf16", "s8", "u8", "f16:f16:f32", "bf16:bf16:f32", "s8:s8:s32", "u8:s8:s32",
         "s8:s8:f32", "u8:s8:u8", "s8:s8:s8", "bf16:f32:bf16"]
TARGETS = ("xehpg", "xehpc", "sm_90")
FMAS = {"xehpg": ("mad", "dp4a", "dpas"), "xehpc": ("mad", "dp4a", "dpas"), "sm_90": ("fma", "mma")}
# The interpreter and the simulators run every thread of the launch: keep launches small.
MAX_THREADS = {"xehpg": 256, "xehpc": 256, "sm_90": 64}


def _code_check(kernel, target, seed: int) -> tuple[dict | None, str | None, object]:
    """The check of the generated code on the inputs of ``seed`` (the interpreter's), or (None, why it is
    not checkable), and the listing."""
    from kdd.core.codegen import CodegenUnsupported, OutOfRegisters, generate_asm
    from kdd.core.passes.kernel_pipeline import run_pipeline

    final = run_pipeline(kernel).final
    try:
        if target.isa == "ptx":
            from kdd.core.codegen.ptx import generate_ptx
            from kdd.core.ptxsim import check_ptx

            listing = generate_ptx(kernel, final, target, check=False)
            return check_ptx(kernel, {"asm": listing.asm, "launch": listing.launch}, seed=seed), None, listing
        if shutil.which(target.assembler[0]) is None:
            return None, "no-assembler", None
        listing = generate_asm(kernel, final, target, check=False)    # the check assembles it once
    except CodegenUnsupported as exc:
        return None, f"no-codegen: {exc}", None
    except OutOfRegisters:
        return None, "out-of-registers", None
    from kdd.core.xesim.check import check_assembly

    out = check_assembly(kernel, listing.to_dict(), target.assembler, seed=seed)
    out["rejected"] = "the assembler failed" in out.get("error", "")      # what generate_asm raises as
    return out, None, listing                                            # AssemblerRejected


def _outputs_agree(kernel, problem, target, listing, seed: int) -> bool:
    """Whether the interpreter's outputs and the code's agree with each other within the check's
    tolerance (equal infinities agree): asked when both miss the reference (a value past the f32 range,
    say), where the verdicts alone do not tell whether the two agree."""
    from kdd.core.interp.check import check_buffers, compare, default_tol, kernel_math, unpack, written_elements
    from kdd.core.interp.grid import Launch
    from kdd.core.interp.program import run_ir

    ir_bytes, _ = check_buffers(kernel, seed)
    ir = {a.var.name: ir_bytes[a.name].copy() for a in kernel.args}
    ir_run = run_ir(kernel.body, Launch(tuple(kernel.grid), tuple(kernel.tg), kernel.simd, kernel.reg_bytes), ir)
    code, _ = check_buffers(kernel, seed)
    if target.isa == "ptx":
        from kdd.core.ptxsim import run_ptx

        written = run_ptx(listing.asm, listing.launch, [code[a.name] for a in kernel.args]).written
        written = {a.name: written[a.var.name] for a in kernel.args}
    else:
        from kdd.core.xesim.check import launch_of
        from kdd.core.xesim.run import load, simulate

        d = listing.to_dict()
        written = simulate(load(d["asm"], target.assembler)[0], launch_of(kernel, d), d["abi"], code).written
    for arg in kernel.outputs:
        dims = tuple(size for _, size in arg.dims)
        mine, theirs = (unpack(b, arg.dtype, arg.layout, dims) for b in (code[arg.name], ir[arg.var.name]))
        done = written_elements(written[arg.name], arg.dtype, arg.layout, dims)
        both = done & written_elements(ir_run.written[arg.var.name], arg.dtype, arg.layout, dims)
        if (done != both).any():
            return False
        same_inf = np.isinf(mine) & (mine == theirs)          # inf - inf is no error: leave them out
        mine, theirs = np.where(same_inf, 0.0, mine), np.where(same_inf, 0.0, theirs)
        if not compare(arg.name, mine, theirs, done, default_tol(problem, arg.dtype, kernel_math(kernel))).ok:
            return False
    return True


def run_case(problem, config, target_name: str, seed: int = 0) -> dict | None:
    """One kernel checked by the interpreter and by its code; None when the builder, the config
    validation or the register allocation (what ``kdd compile`` runs) rejects the config, or the launch is
    over the size bound (not a case)."""
    from kdd.core.targets import get_target

    start = time.perf_counter()
    target = get_target(target_name)
    try:
        kernel = build_kernel(problem, config, target)
    except BuildError:
        return None
    if prod(kernel.grid) * prod(kernel.tg) > MAX_THREADS[target_name]:
        return None
    if any(i.severity == "error" for i in validate_config(problem, kernel.config, target)):
        return None         # kdd compile refuses it too: not a kernel a user gets
    d = problem.to_dict()
    case = {"problem": {"op": d["op"], "prop": d["prop"], "shape": problem.shape.canonical(), "types": d["types"],
                        "tags": d["tags"], "post_ops": d["post_ops"]},
            "config": str(kernel.config), "target": target_name}
    try:
        ir = check_kernel(kernel, problem, seed=seed)
    except InterpError as exc:      # the IR itself faults: a bug of the builder or a pass, not of the code
        case.update(outcome="ir-fault", reason="ir faults", detail=str(exc),
                    seconds=round(time.perf_counter() - start, 3))
        return case
    middle = time.perf_counter()
    code, why, listing = _code_check(kernel, target, seed)
    case["interp_s"], case["code_s"] = round(middle - start, 3), round(time.perf_counter() - middle, 3)
    case["interp"] = {"ok": ir.ok, "rel_err": ir.rel_err, "tol": ir.tol}
    if why == "out-of-registers":
        return None         # kdd compile refuses the config (exit 2, with its repairs): not a kernel a user gets
    if code is None:
        outcome, reason = "not-checkable", why.split(":")[0]
        case["detail"] = why
    elif "error" in code:
        gap = (code.get("asm") or {}).get("unsupported") or (code.get("ptx") or {}).get("gap")
        outcome = "not-checkable" if gap else "disagree"
        reason = "simulator-gap" if gap else ("assembler rejected" if code.get("rejected") else "code faults")
        case["detail"] = code["error"]
    else:
        case["code"] = {"ok": code["ok"], "rel_err": code.get("rel_err"), "tol": code.get("tol"),
                        "unwritten": code.get("unwritten")}
        if ir.ok and code["ok"]:
            outcome, reason = "agree", None
        elif not ir.ok and not code["ok"] and _outputs_agree(kernel, problem, target, listing, seed):
            outcome, reason = "agree", "both off the reference"
        else:
            outcome = "disagree"
            reason = "code wrong" if ir.ok else ("ir wrong" if code["ok"] else "both wrong")
    case.update(outcome=outcome, reason=reason, seconds=round(time.perf_counter() - start, 3))
    return case


def sweep(seed: int, count: int, targets=TARGETS, on_case=None) -> list[dict]:
    """``count`` distinct random kernels (each built, valid and under the size bound) drawn with
    hypothesis from ``seed``, each run through :func:`run_case`; ``on_case(record)`` is called after each."""
    from hypothesis import HealthCheck, Phase, assume, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis import strategies as st

    records: list[dict] = []
    seen: set = set()

    def one(data):
        p = data.draw(problems(TYPES, post_ops=True))
        target = data.draw(st.sampled_from(list(targets)))
        config = data.draw(configs(p, FMAS[target]))
        key = (p.to_dict().__repr__(), str(config), target)
        assume(key not in seen)         # hypothesis mutates what it drew: each kernel is checked once
        seen.add(key)
        try:
            record = run_case(p, config, target, seed=seed)
        except Exception as exc:       # noqa: BLE001 - kept as a record: a crash inside kdd is a finding
            record = {"problem": p.to_dict(), "config": str(config), "target": target, "outcome": "error",
                      "reason": type(exc).__name__, "detail": traceback.format_exc()[-2000:]}
        assume(record is not None)
        records.append(record)
        if on_case is not None:
            on_case(record)

    # hypothesis stops a run early when most draws are rejected (configs the builder or the validation
    # refuses), so runs continue from derived seeds until ``count`` kernels were checked
    for attempt in range(50):
        if len(records) >= count:
            break
        run = settings(max_examples=count - len(records), deadline=None, database=None, derandomize=False,
                       phases=[Phase.generate], suppress_health_check=list(HealthCheck))(given(st.data())(one))
        fixed_seed(seed * 1000 + attempt)(run)()
    return records


def counts(records: list[dict]) -> dict:
    """Outcome counts, and per outcome other than agree the counts by reason."""
    out: dict = {"cases": len(records), "agree": 0, "disagree": 0, "not-checkable": 0, "ir-fault": 0, "error": 0,
                 "reasons": {}}
    for r in records:
        out[r["outcome"]] += 1
        if r["reason"]:
            key = f"{r['outcome']}: {r['reason']}"
            out["reasons"][key] = out["reasons"].get(key, 0) + 1
    return out
