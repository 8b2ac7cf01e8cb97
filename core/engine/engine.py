"""The engine: text -> spec -> kernel -> pass trace -> code -> check, every stage memoized by content.

The command line, the language server and the JSON-RPC server all call one
:class:`Engine`. Each stage is keyed by exactly what it reads:

- ``parse``: the text, its path and the contents of every file ``extends``
  reached (re-read and compared on every lookup);
- ``build``: the problem, the complete config and the target (so a comment
  or a ``[check]`` edit builds nothing);
- ``passes``: the built IR's structure and the pass options (so a config
  change that builds the same IR runs no pass; single passes are memoized
  too);
- ``check``: the check problem, config, target, seed, tolerance and stage.

Results are plain data (:mod:`.artifacts`); the heavy ones (the build, the
pass trace, the listing, the check) also go to an optional :class:`DiskCache`
under keys that include the generator version (and, for what an assembler
made, the tools' stamps: :mod:`kdd.core.toolchain`), so a restarted process
is warm.
``runs`` counts what each stage really ran, which tests and ``kdd/stats``
read.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, Callable

from kdd.core.builder import BuildError, build_kernel
from kdd.core.config.defaults import resolve_config
from kdd.core.ir.gc_pause import gc_paused
from kdd.core.ir.printer import print_ir, to_text
from kdd.core.passes import PassError
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE, run_pipeline, with_body
from kdd.core.passes.options import kernel_options
from kdd.core.passes.pass_bisect import bisect
from kdd.core.passes.pipeline import PassCache
from kdd.core.passes.trace_view import BUILD, UnknownPassError, ir_after, ir_before, text_diff
from kdd.core.problem import ProblemError, parse_shape
from kdd.core.spec import (Diagnostic, KernelSpec, Position, Range, Severity, load_spec, parse_document,
                           read_file)
from kdd.core.spec.schema import ASM_STAGE, CHECK_STAGES
from kdd.core.targets import TARGETS
from kdd.core.toolchain import find_tool, stamps

from . import artifacts
from .disk_cache import DiskCache
from .emit import needs_trace, parse_emit
from .failure import Failure, StageFailed
from .fit import fitted_config
from .interpreter_check import InterpreterCheck
from .keys import content_key
from .memo import Memo, StageCounter, memoized

STAGES = ("parse", "build", "passes", "codegen", "check")
FINAL = "final"
ASSEMBLY = "assembly"   # the last stage of a bisection with --asm: the simulated assembly
# [problem] keys a build failure can name (beside the [config] knobs).
PROBLEM_KEYS = ("shape", "types", "src", "wei", "dst", "bia", "post_ops")
DOCUMENT_START = Range(Position(0, 0), Position(0, 0))


@dataclass(frozen=True)
class Source:
    """A kernel config's text and the file it is (None for text without a file)."""

    text: str
    path: str | None = None


@dataclass(frozen=True)
class Parsed:
    """The parse stage's result: the spec (None when unreadable), every diagnostic, the files read."""

    source: Source
    spec: KernelSpec | None
    diagnostics: tuple[Diagnostic, ...]
    depends_on: tuple[tuple[str, str], ...] = ()

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == Severity.ERROR)

    def diagnostics_json(self) -> list[dict]:
        return [artifacts.diagnostic_dict(d) for d in self.diagnostics]

    @cached_property
    def document(self):
        return parse_document(self.source.text)

    def sources(self) -> dict[str, Range]:
        """Knob (and ``[problem]`` key) -> range of its value in this document."""
        out = {}
        for key in PROBLEM_KEYS:
            entry = self.document.get(("problem", key))
            if entry is not None:
                out[key] = entry.value.range
        return out | (self.spec.source_map() if self.spec is not None else {})

    def anchor(self, table: str) -> Range:
        """Where a failure about ``table`` (``config``, ``check``) points when no knob is responsible."""
        found = self.document.table(table)
        rng = found.header_range if found is not None else None
        return rng or DOCUMENT_START


@dataclass(frozen=True)
class Resolved:
    """What one build reads: the problem, the complete config, the target."""

    problem: Any
    config: Any
    target: Any

    def key(self, stage: str, *extra: object) -> str:
        return content_key(stage, self.problem, self.config, self.target.name, *extra)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Engine:
    """One incremental engine; see the module docstring.

    ``read_text(path)`` supplies files named by ``extends`` (the language
    server passes one that prefers open editor buffers).
    """

    read_text: Callable[[str], str] = read_file
    disk: DiskCache | None = None
    memo_size: int = 32
    runs: StageCounter = field(default_factory=StageCounter)
    last_ms: dict[str, float] = field(default_factory=dict)
    on_stage: Callable[[str], None] = lambda stage: None  # told when a stage starts (a worker reports it)

    def __post_init__(self):
        self._parsed = Memo(self.memo_size)
        self._kernels = Memo(self.memo_size)
        self._traces = Memo(self.memo_size)
        self._artifacts = Memo(4 * self.memo_size)
        self.pass_cache = PassCache()

    # ---- stages (objects) -------------------------------------------------

    def read(self, path: str) -> Source:
        """The text of file ``path``; an unreadable file is a failure of stage ``input``."""
        try:
            return Source(self.read_text(path), path)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise StageFailed(Failure("input", f"cannot read {path}: {reason}", "unreadable")) from None

    def parse(self, source: Source) -> Parsed:
        """Stage ``parse``: ``load_spec`` of the text, reused while the text and its parents are unchanged."""
        key = (source.text, source.path)
        hit = self._parsed.get(key)
        if hit is not None and all(self._current_digest(p) == d for p, d in hit.depends_on):
            return hit
        read: list[tuple[str, str]] = []

        def recording_read(path: str) -> str:
            text = self.read_text(path)
            read.append((path, _digest(text)))
            return text

        parsed = self._timed("parse", lambda: Parsed(source, *_load(source, recording_read), tuple(read)))
        self._parsed.put(key, parsed)
        return parsed

    def _current_digest(self, path: str) -> str | None:
        try:
            return _digest(self.read_text(path))
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    def resolve(self, parsed: Parsed, shape: str | None = None, target: str | None = None,
                for_check: bool = False) -> Resolved:
        """The problem, complete config and target to build: the document's, or with overrides.

        ``for_check`` takes the ``[check]`` problem. A shape or target
        override re-resolves the defaults around the knobs the user wrote.
        """
        spec = parsed.spec
        where = parsed.source.path or "the config"
        if spec is None or parsed.errors:
            raise StageFailed(Failure("parse", f"{len(parsed.errors)} error(s) in {where}", "invalid-config"))
        problem = spec.check if for_check else spec.problem
        tgt = spec.target
        if shape is not None:
            if not shape.strip():
                raise StageFailed(Failure("input", "--shape is empty: give a benchdnn descriptor", "bad-shape"))
            try:
                problem = replace(problem, shape=parse_shape(shape, problem.op))
            except (ProblemError, ValueError) as exc:
                raise StageFailed(Failure("input", f"--shape {shape!r}: {exc}", "bad-shape")) from None
            too_wide = problem.index_width_error()
            if too_wide is not None:
                raise StageFailed(Failure("input", f"--shape {shape!r}: {too_wide}", "bad-shape"))
        if target is not None:
            tgt = TARGETS.get(target)
            if tgt is None:
                raise StageFailed(Failure("input", f"unknown target {target!r} (targets: {', '.join(TARGETS)})",
                                          "bad-target"))
        user = spec.user_config
        if for_check and shape is None and target is None and user.subtiles is None:
            # The check runs the document's kernel structure: the sub-tiles fitted for its problem.
            user = replace(user, subtiles=self.resolve(parsed).config.subtiles)
            return Resolved(problem, resolve_config(problem, tgt, user), tgt)
        config = spec.config if problem is spec.problem and tgt is spec.target else resolve_config(problem, tgt, user)
        return Resolved(problem, fitted_config(problem, config, tgt, user, partial(self._allocated, problem, tgt)),
                        tgt)

    def _allocated(self, problem, target, config) -> int | None:
        """The registers the code generator allocates for the kernel built from ``config`` (None when it
        does not build or runs out of registers)."""
        summary = self._codegen_summary(Resolved(problem, config, target), {})
        return summary["allocated"] if summary["ok"] else None

    def kernel(self, r: Resolved, sources: dict[str, Range] | None = None):
        """Stage ``build``: the kernel IR of ``r`` (a build failure names its knob and range)."""
        def build():
            try:
                return self._timed("build", lambda: build_kernel(r.problem, r.config, r.target))
            except BuildError as exc:
                return Failure("build", f"cannot build the kernel for {r.problem.shape.canonical()}: {exc}",
                               "build-error", getattr(exc, "knob", None))
        out = memoized(self._kernels, r.key("build"), build)
        if isinstance(out, Failure):
            rng = (sources or {}).get(out.knob) if out.knob else None
            raise StageFailed(replace(out, range=rng))
        return out

    def trace(self, kernel):
        """Stage ``passes``: the pass trace of a built kernel, reused for structurally equal IR."""
        options = kernel_options(kernel)
        key = (hash(kernel.body), options.key(tuple(options)))
        hit = self._traces.get(key)
        if hit is not None and hit[0].is_equal(kernel.body):
            return hit[1]
        try:
            trace = self._timed("passes", lambda: run_pipeline(kernel, KERNEL_PIPELINE, self.pass_cache))
        except PassError as exc:
            raise StageFailed(Failure("passes", f"internal error (please report it): {exc}", "pass-error",
                                      internal=True)) from None
        self._traces.put(key, (kernel.body, trace))
        return trace

    def _timed(self, stage: str, fn: Callable[[], Any]) -> Any:
        self.on_stage(stage)
        start = time.perf_counter()
        try:
            with gc_paused():  # stages build large acyclic trees: the cyclic collector finds nothing in them
                return fn()
        finally:
            self.runs.ran(stage)
            self.last_ms[stage] = (time.perf_counter() - start) * 1e3

    def _artifact(self, kind: str, key: str, compute: Callable[[], Any]) -> Any:
        """A plain-data result: from memory, else from disk, else computed (and stored in both)."""
        hit = self._artifacts.get((kind, key))
        if hit is None and self.disk is not None:
            hit = self.disk.get(f"{kind}-{key}")
        if hit is None:
            hit = compute()
            if self.disk is not None:
                self.disk.put(f"{kind}-{key}", hit)
        self._artifacts.put((kind, key), hit)
        return hit

    # ---- results (plain data) --------------------------------------------

    def compile(self, source: Source, emit="ir", shape: str | None = None, target: str | None = None) -> dict:
        """The ``kdd compile --json`` object of ``source`` for the ``emit`` items (see :mod:`.emit`)."""
        parsed = None
        try:
            items = parse_emit(emit)
            parsed = self.parse(source)
            r = self.resolve(parsed, shape, target)
            sources = parsed.sources()
            kernel = partial(self.kernel, r, sources)  # memoized: built at most once whatever asks for it
            built = self._artifact("build", r.key("build"), lambda: artifacts.build_artifact(kernel()))
            out = {"file": source.path, "ok": True,
                   "problem": {"op": r.problem.op, "prop": r.problem.prop, "shape": r.problem.shape.canonical(),
                               "types": r.problem.types.canonical()},
                   "target": r.target.name, "config": r.config.line(), "kernel": built["kernel"],
                   "diagnostics": parsed.diagnostics_json()}
            if "ir" in items:
                out["ir"] = {"text": built["ir"]["text"],
                             "lines": artifacts.with_ranges(built["ir"]["lines"], sources)}
            if needs_trace(items):
                traced = self._artifact("passes", r.key("passes"),
                                        lambda: artifacts.trace_artifact(self.trace(kernel())))
                out.update(artifacts.pass_items(items, traced))
            if "stats" in items:
                codegen = self._codegen_summary(r, sources)
                ir = codegen.pop("ir", None)  # the listing's IR model figure: the stats need not walk again
                stats = self._artifact("stats", r.key("stats"),
                                       lambda: artifacts.stats_artifact(r, kernel(), self.trace(kernel()), ir))
                registers = artifacts.reported_registers(stats["registers"], codegen, r.target)
                out["stats"] = {**stats, "codegen": codegen, "registers": registers}
                where = sources.get("iter") or parsed.anchor("config")
                out["diagnostics"] += artifacts.register_diagnostics(registers, codegen, where)
            if "verify" in items:
                out["verify"] = self._artifact("verify", r.key("verify"),
                                               lambda: artifacts.verify_artifact(kernel(), self.trace(kernel())))
            if "asm" in items:
                out["asm"] = self.assembly(r, sources)
            if "ptx" in items or "sass" in items:
                if r.target.isa != "ptx":
                    raise StageFailed(Failure("input", f"ptx and sass are sm_90's; {r.target.name}'s assembly is "
                                                       "emitted by asm", "bad-emit"))
                listing = self.assembly(r, sources)
                if "ptx" in items:
                    out["ptx"] = listing
                if "sass" in items:
                    out["sass"] = {"lines": [artifacts.with_config_range(line, sources) for line in listing["sass"]],
                                   "registers": listing["registers"], "assembler": listing["assembler"]}
            if "check" in items:
                out["check"] = self.check(source)
            return out
        except StageFailed as exc:
            return failed(source.path, exc.failure, parsed)

    def check(self, source: Source, shape: str | None = None, stage: str | None = None,
              bisect_passes: bool = False, unbounded: bool = False, target: str | None = None,
              asm: bool = False) -> dict:
        """The ``kdd check --json`` object: the kernel of the ``[check]`` problem after ``stage`` (``build``,
        a pass name, or the final IR; by default ``[check] stage``) run by the interpreter against the
        float64 reference; with ``bisect_passes``, the verdict after every stage and the first wrong one.
        A problem with more multiply-adds than the interpreter's bound is refused unless ``unbounded``.

        With ``asm`` (Xe targets) the assembled kernel runs in the instruction-level simulator
        (:mod:`kdd.core.xesim`) instead, against the same reference; with ``bisect_passes`` too, the
        assembly is the last stage of the bisection, so an IR that checks right and an assembly
        that does not is "IR right, assembly wrong" with the first wrong instruction (the first store of a
        wrong value, or the faulting one) and its IR node."""
        parsed = None
        try:
            parsed = self.parse(source)
            r = self.resolve(parsed, shape, target, for_check=True)
            spec = parsed.spec
            stage = stage or spec.check_stage
            if stage not in CHECK_STAGES:
                raise StageFailed(Failure("input", f"no stage named {stage!r} (stages: {', '.join(CHECK_STAGES)})",
                                          "bad-stage"))
            if stage == ASM_STAGE:          # [check] stage = "asm": what --asm runs, on every save
                asm, stage = True, FINAL
            if asm and r.target.isa == "ptx":
                raise StageFailed(Failure("input", "--asm simulates Xe assembly; sm_90 kernels run on a GPU "
                                                   "(kdd check --device)", "bad-target"))
            # --asm runs the binary the assembler made: the verdict is that assembler's too
            key = r.key("check", spec.check_seed, spec.check_tol, stage, bisect_passes, unbounded, asm,
                        stamps() if asm else ())
            sources = parsed.sources()

            def run() -> dict:
                kernel = self.kernel(r, sources)
                check = InterpreterCheck(r.problem, spec.check_seed, spec.check_tol, unbounded)
                if asm:
                    return self._asm_check(r, sources, kernel, check, bisect_passes)
                if bisect_passes:
                    return self._timed("check", lambda: bisect(kernel, check, trace=self.trace(kernel)).to_dict())
                body = kernel.body if stage == BUILD else (
                    self.trace(kernel).final if stage == FINAL else self.trace(kernel).after(stage))
                return self._timed("check", lambda: check.result(with_body(kernel, body)))
            out = dict(self._artifact("check", key, run))
            out["stage"] = ASM_STAGE if asm else stage
            return out
        except StageFailed as exc:
            return failed(source.path, exc.failure, parsed)

    def _asm_check(self, r: Resolved, sources: dict[str, Range], kernel, check: InterpreterCheck,
                   bisect_passes: bool) -> dict:
        """``check --asm`` (see :meth:`check`): the simulator's verdict, or the bisection ending in it."""
        from kdd.core.xesim.check import check_assembly, first_wrong_registers

        listing = self.assembly(r, sources)
        final = self.trace(kernel).final

        def blame(wrong: dict) -> dict:
            """``wrong`` with its listing line and the final-IR line its instruction came from."""
            wrong["listing"] = artifacts.instruction_node(listing["lines"], wrong["index"])
            node = (wrong["listing"] or {}).get("ir_node")
            if node is not None:
                wrong["ir"] = print_ir(final).text.splitlines()[node["line"]].strip()
            return wrong
        if listing["assembler"].get("binary_bytes") is None:      # warnings still give a binary to run
            raise StageFailed(Failure("codegen", "the assembler rejected the listing: "
                                      + "; ".join(listing["assembler"].get("messages", [])), "assembler-error"))
        spec_seed, spec_tol = check.seed, check.tol
        simulated = self._timed("check", lambda: check_assembly(kernel, listing, r.target.assembler, r.problem,
                                                                seed=spec_seed, tol=spec_tol))
        wrong = simulated.get("asm", {}).get("first_wrong")
        if wrong is not None and wrong.get("index") is not None:
            blame(wrong)
        if not bisect_passes:
            return simulated
        trace = self.trace(kernel)
        out = self._timed("check", lambda: bisect(kernel, check, trace=trace).to_dict())
        ok = simulated["ok"]
        detail = "" if ok else simulated.get("error") or f"rel_err {simulated['rel_err']} > tol {simulated['tol']}"
        out["stages"].append({"name": ASSEMBLY, "ok": ok, "checked": True, "detail": detail})
        if out["first_bad"] is None and not ok:
            out["first_bad"] = ASSEMBLY
            out["assembly"] = {"verdict": "IR right, assembly wrong", "check": simulated, "first_wrong": wrong}
            if "error" not in simulated:    # ran to the end: every register buffer reached its last use
                # Register buffers compared with the interpreter's as their scopes end: the first that
                # disagrees is nearer the wrong instruction than the first wrong store.
                registers = self._timed("check", lambda: first_wrong_registers(
                    final, kernel, listing, r.target.assembler, artifacts.register_checkpoints(listing),
                    seed=spec_seed))
                if registers is not None:
                    out["assembly"]["first_wrong_registers"] = blame(registers)
        return out

    def assembly(self, r: Resolved, sources: dict[str, Range]) -> dict:
        """Stage ``codegen``: the target's assembly of the final IR with register pressure per line and the
        assembler's report (``Listing.to_dict()`` plus ``listing``, its text form), each line's IR node
        joined to the config range of its knob. Out of registers is a failure on the responsible knob."""
        from kdd.core.codegen import CodegenError, CodegenUnsupported, OutOfRegisters, generate_asm

        def lower() -> dict:
            kernel = self.kernel(r, sources)
            trace = self.trace(kernel)
            try:
                listing = self._timed("codegen", lambda: generate_asm(kernel, trace.final, r.target))
            except CodegenUnsupported as exc:
                return {"failure": Failure("codegen", str(exc), "no-codegen").to_dict()}
            except OutOfRegisters as exc:
                return {"failure": Failure("codegen", str(exc), "out-of-registers",
                                           exc.knobs[0] if exc.knobs else None).to_dict(),
                        "out_of_registers": exc.to_dict()}
            except CodegenError as exc:
                return {"failure": Failure("codegen", f"internal error (please report it): {exc}", "codegen-error",
                                           internal=True).to_dict()}
            return {**listing.to_dict(), "listing": listing.render()}
        asm = self._artifact("asm", r.key("asm", stamps()), lower)
        if "failure" in asm:
            f = asm["failure"]
            raise StageFailed(Failure(f["stage"], f["message"], f["code"], f.get("knob"),
                                      sources.get(f.get("knob")), f["internal"]))
        return {**asm, "lines": [artifacts.with_config_range(line, sources) for line in asm["lines"]]}

    def on_device(self, source: Source, shape: str | None = None, bench: bool = False, runs: int = 50) -> dict:
        """``kdd check --device`` / ``kdd bench``: the compiled sm_90 kernel run on a CUDA GPU (CuPy).

        The check runs the ``[check]`` problem against the float64 reference (the
        ``kdd check --json`` object plus ``device``); ``bench`` times the problem itself with CUDA events
        and gives TFLOP/s and the fraction of the device's peak from target data."""
        parsed = None
        try:
            from kdd.core.codegen.ptx import generate_ptx
            from kdd.core.codegen.ptx.device import DeviceUnavailable, check_on_device, time_on_device

            parsed = self.parse(source)
            r = self.resolve(parsed, shape, for_check=not bench)
            if r.target.isa != "ptx":
                raise StageFailed(Failure("input", f"kernels run on a GPU for sm_90 only; {r.target.name} has "
                                                   "no device here (kdd check runs it in the interpreter)",
                                          "bad-target"))
            kernel = self.kernel(r, parsed.sources())
            listing = self._timed("codegen", lambda: generate_ptx(kernel, self.trace(kernel).final, r.target))
            if listing.cubin is None and find_tool("ptxas") is not None:  # without ptxas the driver JITs the PTX
                raise StageFailed(Failure("codegen", f"ptxas failed: {'; '.join(listing.assembler['messages'])}",
                                          "assembler-error"))
            spec = parsed.spec
            try:
                if not bench:
                    return {**check_on_device(listing, kernel, r.problem, seed=spec.check_seed, tol=spec.check_tol),
                            "stage": FINAL}
                flops = float(r.problem.flops())
                timed = time_on_device(listing, kernel, runs=runs, flops=flops)
            except DeviceUnavailable as exc:
                raise StageFailed(Failure("check", f"no CUDA device to run on: {exc}", "no-device")) from None
            return {"ok": True, "shape": r.problem.shape.canonical(), "flops": flops, **timed,
                    **_fraction_of_peak(r, timed)}
        except StageFailed as exc:
            return failed(source.path, exc.failure, parsed)

    def _codegen_summary(self, r: Resolved, sources: dict[str, Range]) -> dict:
        """The code generator's figures without its listing: the registers it allocated (kdd's allocator
        on Xe, ptxas on sm_90), the peak and what is live there, the instruction mix, the roofline, and
        ``ir``, the IR register model's figure the listing shows; or ``ok: false`` with the failure (out
        of registers, an operation it cannot lower yet)."""
        try:
            asm = self.assembly(r, sources)
        except StageFailed as exc:
            return {"ok": False, "failure": exc.failure.to_dict()}
        regs = asm["registers"]
        return {"ok": True, "allocated": regs.get("allocated", regs["peak"]), "peak": regs["peak"], "ir": regs["ir"],
                "peak_line": regs.get("peak_line"), "by_label": regs.get("by_label", {}), "mix": asm["mix"],
                "roofline": asm.get("roofline", {}), "assembler_ok": asm["assembler"].get("ok")}

    def ir_view(self, source: Source, pass_name: str = FINAL, diff: bool = False, shape: str | None = None,
                target: str | None = None) -> dict:
        """The IR after ``pass_name`` (``build``, a pass, or the final IR) with its line map (knob ranges
        joined), and with ``diff`` the unified diff against the IR the pass received."""
        parsed = None
        try:
            parsed = self.parse(source)
            r = self.resolve(parsed, shape, target)
            sources = parsed.sources()
            kernel = self.kernel(r, sources)
            trace = self.trace(kernel)
            if pass_name == FINAL:
                pass_name = trace.entries[-1].name if trace.entries else BUILD
            try:
                ir = ir_after(trace, pass_name)
                before = None if pass_name == BUILD else ir_before(trace, pass_name)
            except UnknownPassError as exc:
                raise StageFailed(Failure("input", str(exc), "bad-pass")) from None
            printed = print_ir(ir)
            out = {"ok": True, "pass": pass_name, "text": printed.text,
                   "lines": artifacts.with_ranges(artifacts.line_map(printed), sources)}
            if diff:
                out["diff"] = "" if before is None or before is ir else text_diff(
                    to_text(before), printed.text, pass_name)
            return out
        except StageFailed as exc:
            return failed(source.path, exc.failure, parsed)

    def stats(self) -> dict:
        """What ran, how long the last run of each stage took, and the caches' hits."""
        out = {"runs": {s: self.runs.get(s, 0) for s in STAGES},
               "last_ms": {k: round(v, 3) for k, v in self.last_ms.items()},
               "pass_cache": {"hits": self.pass_cache.hits, "misses": self.pass_cache.misses}}
        if self.disk is not None:
            out["disk_cache"] = self.disk.stats()
        return out


def _load(source: Source, read_text) -> tuple[KernelSpec | None, tuple[Diagnostic, ...]]:
    spec, diagnostics = load_spec(source.text, source.path, read_text)
    return spec, tuple(diagnostics)


def failed(path: str | None, failure: Failure, parsed: Parsed | None) -> dict:
    """The ``ok: false`` object of a failed stage: its message, the failure's fields and the diagnostics
    (the document's own, then the failure's as a diagnostic when it has a range)."""
    diagnostics = parsed.diagnostics_json() if parsed is not None else []
    if failure.stage not in ("parse", "input"):
        anchor = parsed.anchor("check" if failure.stage == "check" else "config") if parsed else DOCUMENT_START
        diagnostics.append(artifacts.failure_diagnostic(failure.to_dict(), anchor))
    return {"file": path, "ok": False, "error": failure.message, "failure": failure.to_dict(),
            "diagnostics": diagnostics}


def _fraction_of_peak(r: Resolved, timed: dict) -> dict:
    """The matrix-engine peak of the device the kernel ran on (matched by name in target data)."""
    name = timed.get("device", "")
    for device in r.target.devices:
        if any(word in name for word in device.name.split()[:1]):
            try:
                peak = device.peak(str(r.problem.types.src))
            except KeyError:
                return {}
            return {"peak_tflops": peak.value / 1e12, "peak_device": device.name,
                    "fraction_of_peak": timed["tflops"] / (peak.value / 1e12)}
    return {}
