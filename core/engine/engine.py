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

import time
from math import prod
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, Callable

from kdd.core.builder import BuildError, build_kernel
from kdd.core.config.defaults import resolve_config
from kdd.core.config.knobs import TMA_SCHEDULES
from kdd.core.config.repairs import knob_repairs
from kdd.core.config.values import Subtiles
from kdd.core.ir.gc_pause import gc_paused
from kdd.core.ir.printer import print_ir, to_text
from kdd.core.passes import PassError
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE, run_pipeline, with_body
from kdd.core.passes.options import kernel_options
from kdd.core.passes.pipeline import PassCache
from kdd.core.passes.trace_view import BUILD, UnknownPassError, ir_after, ir_before, text_diff
from kdd.core.problem import ProblemError, parse_shape
from kdd.core.spec import (Diagnostic, KernelSpec, Position, Range, Severity, load_spec, parse_document,
                           read_file)
from kdd.core.spec.schema import ASM_STAGE, CHECK_STAGES
from kdd.core.targets import TARGETS
from kdd.core.toolchain import find_tool, stamps

from . import artifacts
from .emit import SHOWS_LISTING, needs_trace, parse_emit
from .failure import Failure, StageFailed
from .fit import fitted_config
from .keys import content_key, stage_key
from .memo import Memo, StageCounter, memoized
from .verdict import NOT_CHECKABLE, NotCheckable, is_gap, not_checkable, verdict_of

if TYPE_CHECKING:  # a compile without a disk cache or a check loads neither
    from .disk_cache import DiskCache
    from .interpreter_check import InterpreterCheck

STAGES = ("parse", "build", "passes", "codegen", "check")
FINAL = "final"
ASSEMBLY = "assembly"   # the last stage of a bisection of the code: the simulated assembly or PTX
IR_ARTIFACT, DEVICE_ARTIFACT = "ir", "device"
CODE_ARTIFACT = {"xe": "asm", "ptx": "ptx"}   # what the default check runs, by the target's ISA
# [problem] keys a build failure can name (beside the [config] knobs).
PROBLEM_KEYS = ("shape", "types", "src", "wei", "dst", "bia", "post_ops")
DOCUMENT_START = Range(Position(0, 0), Position(0, 0))
JUDGED = "judged"  # a cached verdict's digest of the artifact it judged


@dataclass(frozen=True)
class Source:
    """A kernel config's text and the file it is (None for text without a file)."""

    text: str
    path: str | None = None


@dataclass(frozen=True)
class Parsed:
    """The parse stage's result: the spec (None when unreadable), every diagnostic, and the files it read
    as ``(path, digest)``, digest None for a file that could not be read."""

    source: Source
    spec: KernelSpec | None
    diagnostics: tuple[Diagnostic, ...]
    depends_on: tuple[tuple[str, str | None], ...] = ()

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
    reduction: Any = field(default=None, compare=False)   # the check's Reduction of the full problem, if any

    def key(self, stage: str, *extra: object) -> str:
        return stage_key(stage, self.problem, self.config, self.target.name, *extra)


def _disk_key(kind: str, key: str) -> str:
    """An artifact's key on disk: its kind, and the digest of its in-process key with the generator version."""
    return f"{kind}-{content_key(kind, key)}"


def _digest(text: str) -> str:
    import hashlib  # here: a compile of a config without parents digests nothing

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
        read: list[tuple[str, str | None]] = []

        def recording_read(path: str) -> str:
            # A file that cannot be read is a dependency too (digest None): when it appears, the
            # document is parsed again instead of answering "cannot read" from the memo.
            try:
                text = self.read_text(path)
            except BaseException:
                read.append((path, None))
                raise
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
                for_check: bool = False, exact: bool = False) -> Resolved:
        """The problem, complete config and target to build: the document's, or with overrides.

        ``for_check`` takes the ``[check]`` problem: the ``[check] shape`` as written, else the problem
        (or ``shape``) reduced to check size by the tiles of its own config, which the check then runs
        (:func:`~kdd.core.problem.reduced.reduce_problem`; ``exact``: ``shape`` as given). A shape or
        target override re-resolves the defaults around the knobs the user wrote.
        """
        spec = parsed.spec
        where = parsed.source.path or "the config"
        if spec is None or parsed.errors:
            raise StageFailed(Failure("parse", f"{len(parsed.errors)} error(s) in {where}", "invalid-config"))
        if for_check and (shape is not None or _reduced_by_spec(spec)):
            full = self.resolve(parsed, shape, target)
            return self._check_size(full, exact, lambda p: self._config_for(p, full.target, spec.user_config,
                                                                             full.config.subtiles),
                                    lambda p: spec.user_config.subtiles is not None  # written: the user's
                                    or self._allocated(p, full.target, full.config) is not None)
        problem = spec.check if for_check else spec.problem
        if shape is not None:
            problem = _with_shape(problem, shape)
        tgt = spec.target if target is None else _named_target(target)
        user = spec.user_config
        if target is not None:
            user = _portblas_remapped(parsed, user, problem, tgt)
        if for_check and shape is None and target is None and user.subtiles is None:
            # The check runs the document's kernel structure: the sub-tiles fitted for its problem.
            user = replace(user, subtiles=self.resolve(parsed).config.subtiles)
            return Resolved(problem, resolve_config(problem, tgt, user), tgt)
        if problem is spec.problem and tgt is spec.target:
            config = spec.config
        else:
            config = resolve_config(problem, tgt, user)
            _refuse_written_knobs(config, problem, tgt, parsed.sources(), shape, target)
        return Resolved(problem, fitted_config(problem, config, tgt, user, partial(self._allocated, problem, tgt)),
                        tgt)

    @staticmethod
    def _check_size(full: Resolved, exact: bool, own_config: Callable[[Any], Any],
                    fits: Callable[[Any], bool]) -> Resolved:
        """``full`` (a problem and the config compiled for it) at check size: every dim cut to two of the
        config's blocks or two trips of its loops with its tail (as far as the bound allows), the same
        config. Where that config's fixed loops would still run more multiply-adds than the check's
        bound on the small shape (masked, but run), or its sub-tiles, fitted for the full problem, do not
        fit the small one (``fits``: its tensors can take other layouts there, such as weights no longer
        blocked as dpas's B), the reduced problem gets its own config (``own_config``: the written knobs,
        defaults for that shape, sub-tiles fitted), and the reduction says so."""
        from kdd.core.config.tiling import derive_tiling
        from kdd.core.problem.reduced import MAX_CHECK_MACS, Block, reduce_problem

        if exact:
            return full
        if full.config.schedule in TMA_SCHEDULES:      # its tile, its K loop: no tiling knob shapes it
            from kdd.core.builder.hopper import tma_check_shape

            reduction = tma_check_shape(full.problem, full.config)
            return Resolved(replace(full.problem, shape=reduction.shape), full.config, full.target,
                            reduction) if reduction.reduced else full
        tiling = derive_tiling(full.problem, full.config)
        blocks = {d.name: Block(d.block, d.iter * d.tg) for d in tiling.dims}
        reduction = reduce_problem(full.problem, blocks)
        if not reduction.reduced:
            return full
        problem = replace(full.problem, shape=reduction.shape)
        run = prod(d.padded for d in derive_tiling(problem, full.config).dims)
        if run > MAX_CHECK_MACS:
            note = (f"the compiled config's loops would run {run} multiply-adds (padding included) on it, over "
                    f"the bound of {MAX_CHECK_MACS}: checked with the written knobs and defaults for the check shape")
        elif full.config.subtiles not in (None, Subtiles(1, 1)) and not fits(problem):
            note = (f"the compiled config's sub-tiles (S={full.config.subtiles}) run out of registers on it: checked "
                    f"with the written knobs and defaults for the check shape")
        else:
            return Resolved(problem, full.config, full.target, reduction)
        return Resolved(problem, own_config(problem), full.target, replace(reduction, config_note=note))

    def _config_for(self, problem, target, user, prefer=None):
        """The complete config of ``problem`` from the ``user`` knobs (defaults around them, sub-tiles fitted,
        ``prefer``'s first where they fit)."""
        config = resolve_config(problem, target, user)
        return fitted_config(problem, config, target, user, partial(self._allocated, problem, target), prefer)

    def _allocated(self, problem, target, config) -> int | None:
        """The registers the code generator allocates for the kernel built from ``config`` (None when it
        does not build or runs out of registers)."""
        summary = self._codegen_summary(Resolved(problem, config, target), {}, disassemble=False)
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

    def _artifact(self, kind: str, key: str, compute: Callable[[], Any],
                  trusted: Callable[[Any], bool] = lambda hit: isinstance(hit, dict)) -> Any:
        """A plain-data result: from memory, else from disk when ``trusted(hit)``, else computed (and
        stored in both)."""
        hit = self._stored(kind, key, trusted)
        if hit is None:
            hit = compute()
            if self.disk is not None:
                self.disk.put(_disk_key(kind, key), hit)
            self._artifacts.put((kind, key), hit)
        return hit

    def _stored(self, kind: str, key: str,
                trusted: Callable[[Any], bool] = lambda hit: isinstance(hit, dict)) -> Any:
        """A plain-data result already at hand: from memory, else from disk when ``trusted(hit)``; else None."""
        hit = self._artifacts.get((kind, key))
        if hit is None and self.disk is not None:
            hit = self.disk.get(_disk_key(kind, key))
            if hit is not None and not trusted(hit):
                hit = None
        if hit is not None:
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
            # Every compile generates the code (memoized): a kernel the code generator cannot lower is an
            # error whatever is emitted, reported once, at its knob. sm_90's live registers per SASS
            # instruction (nvdisasm, the slowest tool) and IR register model only where an item shows them.
            codegen = self._codegen_summary(r, sources, disassemble=not SHOWS_LISTING.isdisjoint(items))
            if "stats" in items:
                ir = codegen.pop("ir", None)  # the listing's IR model figure: the stats need not walk again
                stats = self._artifact("stats", r.key("stats"),
                                       lambda: artifacts.stats_artifact(r, kernel(), self.trace(kernel()), ir))
                registers = artifacts.reported_registers(stats["registers"], codegen, r.target)
                main_loop = codegen.get("mix", {}).get("main_loop") if r.target.isa == "xe" else None
                out["stats"] = {**stats, "codegen": codegen, "registers": registers,
                                "asm_loop": artifacts.asm_loop_figures(main_loop, stats["loop"])}
                where = sources.get("iter") or parsed.anchor("config")
                out["diagnostics"] += artifacts.register_diagnostics(registers, codegen, where)
            if codegen.get("spill"):
                out["diagnostics"].append(artifacts.spill_diagnostic(codegen, sources, parsed.anchor("config")))
            if not codegen["ok"]:
                failure = codegen["failure"]
                out.update(ok=False, error=failure["message"], failure=failure)
                if failure["code"] != "out-of-registers" or "stats" not in items:  # else the stats' diagnostic
                    out["diagnostics"].append(artifacts.failure_diagnostic(failure, parsed.anchor("config")))
                return out
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
              asm: bool = False, exact: bool = False) -> dict:
        """The ``kdd check --json`` object of the ``[check]`` problem's kernel against the float64 reference.

        By default the check runs the deepest artifact this machine can run (:data:`CODE_ARTIFACT`): on Xe
        the assembled binary in kdd's instruction-level simulator (:mod:`kdd.core.xesim`), on sm_90 the
        PTX in kdd's PTX simulator (:mod:`kdd.core.ptxsim`); ``artifact`` says which. A ``stage``
        (``build``, a pass name, ``final``; else ``[check] stage``) runs that IR in the interpreter
        instead (``artifact: "ir"``). ``asm`` (the old ``--asm``) asks for the default. With
        ``bisect_passes`` the verdict after every IR stage and then, for the code, the code's: an IR
        that checks right and code that does not is "IR right, assembly wrong" with the first wrong
        instruction and its IR node.

        ``verdict`` is ``ok``, ``wrong`` or ``not-checkable`` (:mod:`.verdict`): a problem with more
        multiply-adds than the check's bound (unless ``unbounded``), a simulator gap or a missing tool
        is not-checkable, never wrong. ``shape`` is reduced to check size like ``[problem] shape``
        unless ``exact``."""

        parsed = None
        try:
            parsed = self.parse(source)
            r = self.resolve(parsed, shape, target, for_check=True, exact=exact)
            spec = parsed.spec
            stage = stage or spec.check_stage
            if stage is not None and stage not in CHECK_STAGES:
                raise StageFailed(Failure("input", f"no stage named {stage!r} (stages: {', '.join(CHECK_STAGES)})",
                                          "bad-stage"))
            if asm or stage == ASM_STAGE:   # --asm, [check] stage = "asm": the code, as by default
                stage = None
            artifact = CODE_ARTIFACT[r.target.isa] if stage is None else IR_ARTIFACT
            shown = stage or FINAL
            # The code's verdict is its tools' too (the assembler made the binary the simulator ran): a check
            # they could not run (not installed) is not served once they are.
            key = r.key("check", spec.check_seed, spec.check_tol, stage, bisect_passes, unbounded, artifact,
                        stamps() if artifact != IR_ARTIFACT else ())
            sources = parsed.sources()

            def stage_body(kernel):
                """The IR the interpreter checks: after the build, or after ``stage`` (a bisection's verdict
                is the final IR's)."""
                if stage == BUILD:
                    return kernel.body
                trace = self.trace(kernel)
                return trace.final if stage == FINAL or bisect_passes else trace.after(stage)

            def judged() -> str:
                """The digest of what the verdict is about: the assembly, or the IR the interpreter runs."""
                if artifact != IR_ARTIFACT:
                    return _digest(self.assembly(r, sources, tools=False)["listing"])
                return _digest(to_text(stage_body(self.kernel(r, sources))))

            def run() -> dict:
                from kdd.core.passes.pass_bisect import bisect  # a check's modules: a compile loads neither

                from .interpreter_check import InterpreterCheck

                check = InterpreterCheck(r.problem, spec.check_seed, spec.check_tol, unbounded)
                try:
                    check.within_bound()
                    kernel = self.kernel(r, sources)
                    if artifact != IR_ARTIFACT:
                        out = self._code_check(r, sources, kernel, check, bisect_passes)
                    elif bisect_passes:
                        out = self._timed("check", lambda: bisect(kernel, check, trace=self.trace(kernel)).to_dict())
                    else:
                        body = stage_body(kernel)
                        out = self._timed("check", lambda: check.result(with_body(kernel, body)))
                except NotCheckable as exc:
                    return not_checkable(exc, r.problem.shape.canonical(), artifact, shown)
                return {**out, JUDGED: judged()}
            # A verdict from disk is served only for the very artifact it judged: a planted or stale
            # entry under the right key costs a check, never a wrong verdict. A not-checkable answer
            # judged nothing (and passes nothing), so it carries no digest.
            out = dict(self._artifact("check", key, run, trusted=lambda hit: isinstance(hit, dict) and (
                hit.get(JUDGED) == judged() if JUDGED in hit
                else hit.get("verdict") == NOT_CHECKABLE and hit.get("ok") is False)))
            out.pop(JUDGED, None)
            out.update(artifact=artifact, stage=shown, verdict=verdict_of(out))
            if r.reduction is not None:
                out["reduced"] = r.reduction.to_dict()
            return out
        except StageFailed as exc:
            return failed(source.path, exc.failure, parsed)

    def _code_check(self, r: Resolved, sources: dict[str, Range], kernel, check: InterpreterCheck,
                    bisect_passes: bool) -> dict:
        """The code's check (see :meth:`check`): the simulator's verdict, or the bisection ending in it."""
        from kdd.core.passes.pass_bisect import bisect

        listing = self.assembly(r, sources, tools=False)
        final = self.trace(kernel).final
        simulated = self._simulate(r, listing, kernel, final, check)
        if not bisect_passes:
            return simulated
        trace = self.trace(kernel)
        out = self._timed("check", lambda: bisect(kernel, check, trace=trace).to_dict())
        gap = verdict_of(simulated) == NOT_CHECKABLE
        ok = simulated["ok"]
        detail = "" if ok else simulated.get("error") or f"rel_err {simulated['rel_err']} > tol {simulated['tol']}"
        out["stages"].append({"name": ASSEMBLY, "ok": ok, "checked": not gap,
                              "detail": f"not checkable: {detail}" if gap else detail})
        if out["first_bad"] is None and gap:
            out["verdict"] = NOT_CHECKABLE
        elif out["first_bad"] is None and not ok:
            out["first_bad"] = ASSEMBLY
            wrong = (simulated.get("asm") or {}).get("first_wrong")
            out["assembly"] = {"verdict": "IR right, assembly wrong", "check": simulated, "first_wrong": wrong}
            if "error" not in simulated and r.target.isa == "xe":
                # Register buffers compared with the interpreter's as their scopes end (every buffer reached
                # its last use): the first that disagrees is nearer the wrong instruction than the first
                # wrong store.
                from kdd.core.xesim.check import first_wrong_registers

                registers = self._timed("check", lambda: first_wrong_registers(
                    final, kernel, listing, r.target.assembler, artifacts.register_checkpoints(listing),
                    seed=check.seed))
                if registers is not None:
                    out["assembly"]["first_wrong_registers"] = artifacts.blame(registers, listing, final)
        return out

    def _simulate(self, r: Resolved, listing: dict, kernel, final, check: InterpreterCheck) -> dict:
        """The code of ``listing`` run in its target's simulator against the reference; a simulator gap
        is a not-checkable result (``verdict``, ``code``, ``reason``) that keeps the simulator's figures,
        a simulator that breaks a failure inside kdd (exit 3)."""
        try:
            return self._simulated(r, listing, kernel, final, check)
        except (StageFailed, NotCheckable, MemoryError):   # out of memory: the caller's limit says so
            raise
        except Exception as exc:  # noqa: BLE001 - a simulator bug is kdd's failure, never a verdict on the kernel
            raise StageFailed(Failure("check", f"internal error (please report it): the {CODE_ARTIFACT[r.target.isa]} "
                                               f"simulator raised {type(exc).__name__}: {exc}", "simulator-error",
                                      internal=True)) from None

    def _simulated(self, r: Resolved, listing: dict, kernel, final, check: InterpreterCheck) -> dict:
        if r.target.isa == "ptx":
            from kdd.core.ptxsim import check_ptx

            simulated = self._timed("check", lambda: check_ptx(kernel, listing, r.problem, seed=check.seed,
                                                               tol=check.tol))
        else:
            from kdd.core.xesim.check import check_assembly

            assembler = listing["assembler"]
            if assembler.get("version") is None:
                raise NotCheckable("tool-missing", "; ".join(assembler.get("messages", []))
                                   or f"{assembler.get('tool')} is not installed")
            if assembler.get("binary_bytes") is None:      # warnings still give a binary to run
                raise StageFailed(Failure("codegen", "internal error (please report it): the assembler rejected "
                                          "kdd's listing: " + "; ".join(assembler.get("messages", [])),
                                          "assembler-error", internal=True))
            simulated = self._timed("check", lambda: check_assembly(kernel, listing, r.target.assembler, r.problem,
                                                                    seed=check.seed, tol=check.tol))
            wrong = simulated.get("asm", {}).get("first_wrong")
            if wrong is not None and wrong.get("index") is not None:
                artifacts.blame(wrong, listing, final)
        if is_gap(simulated):
            simulated.update(verdict=NOT_CHECKABLE, code="simulator-gap", reason=simulated["error"])
        return simulated

    def assembly(self, r: Resolved, sources: dict[str, Range], tools: bool = True, disassemble: bool = True) -> dict:
        """Stage ``codegen``: the target's assembly of the final IR with register pressure per line and the
        assembler's report (``Listing.to_dict()`` plus ``listing``, its text form), each line's IR node
        joined to the config range of its knob. Out of registers is a failure on the responsible knob.
        Without ``tools`` sm_90's PTX is not run through ptxas and nvdisasm (the PTX simulator reads the
        text: the check need not wait for them); Xe code is always assembled (the simulator runs the
        binary). Without ``disassemble`` the code is generated and assembled for its figures alone (no IR
        lines, IR register model or rendered listing; on sm_90 ptxas alone: no live registers or SASS)
        unless the full listing is already at hand."""
        asm = self._code(r, sources, tools, disassemble)
        return {**asm, "lines": [artifacts.with_config_range(line, sources) for line in asm["lines"]]}

    def _code(self, r: Resolved, sources: dict[str, Range], tools: bool = True, disassemble: bool = True) -> dict:
        """:meth:`assembly` as the artifact stores it (lines without their config ranges)."""
        from kdd.core.codegen import CodegenError, CodegenUnsupported, OutOfRegisters, generate_asm

        def lower(disassembled: bool) -> dict:
            kernel = self.kernel(r, sources)
            trace = self.trace(kernel)
            try:
                listing = self._timed("codegen", lambda: generate_asm(kernel, trace.final, r.target, check,
                                                                       disassembled))
            except CodegenUnsupported as exc:
                return {"failure": Failure("codegen", f"{r.target.name} code generation: {exc}", "no-codegen",
                                           exc.knob).to_dict()}
            except OutOfRegisters as exc:
                exc = exc.with_repairs(knob_repairs(exc.repairs))
                return {"failure": Failure("codegen", str(exc), "out-of-registers",
                                           exc.knobs[0] if exc.knobs else None).to_dict(),
                        "out_of_registers": exc.to_dict()}
            except CodegenError as exc:
                return {"failure": Failure("codegen", f"internal error (please report it): {exc}", "codegen-error",
                                           internal=True).to_dict()}
            except Exception as exc:  # noqa: BLE001 - a generator bug is a failure inside kdd (exit 3), not a crash
                return {"failure": Failure("codegen", f"internal error (please report it): {r.target.name} code "
                                                      f"generation raised {type(exc).__name__}: {exc}", "codegen-error",
                                           internal=True).to_dict()}
            return {**listing.to_dict(), "listing": listing.render() if disassembled else None}
        check = tools or r.target.isa != "ptx"
        tools_now = stamps() if check else ()  # each stamp looks for its tool: once for both keys
        key = r.key("asm", check, tools_now)
        asm = None
        if check and not disassemble:
            asm = self._stored("asm", key) or self._artifact(
                "asm", r.key("asm", "figures", tools_now), lambda: lower(False))
        asm = asm or self._artifact("asm", key, lambda: lower(True))
        if "failure" in asm:
            f = asm["failure"]
            raise StageFailed(Failure(f["stage"], f["message"], f["code"], f.get("knob"),
                                      sources.get(f.get("knob")), f["internal"]), asm.get("out_of_registers"))
        return asm

    def on_device(self, source: Source, shape: str | None = None, bench: bool = False, runs: int = 50) -> dict:
        """``kdd check --device`` / ``kdd bench``: the compiled sm_90 kernel run on a CUDA GPU (CuPy).

        The check runs the ``[check]`` problem against the float64 reference (the
        ``kdd check --json`` object plus ``device``); ``bench`` first checks the problem itself, at its
        full shape, three launches on the same buffers with inputs that round (a kernel that leaves state
        for the next launch, split K's scratch say, is caught), and times only a correct kernel: GPU time
        per launch, TFLOP/s and the fraction of the device's peak from target data, with the check's
        figures under ``check``. A wrong kernel is the check's object (verdict ``wrong``), untimed."""
        parsed = None
        try:
            from kdd.core.codegen.ptx import generate_ptx
            from kdd.core.codegen.ptx.device import DeviceUnavailable, check_on_device, time_on_device

            parsed = self.parse(source)
            r = self.resolve(parsed, shape, for_check=not bench)
            if r.target.isa != "ptx":
                raise StageFailed(Failure("input", f"kernels run on a GPU for sm_90 only; {r.target.name} has "
                                                   "no device here (kdd check without --device runs its "
                                                   "assembly in kdd's Xe simulator)",
                                          "bad-target"))
            kernel = self.kernel(r, parsed.sources())
            listing = self._timed("codegen", lambda: generate_ptx(kernel, self.trace(kernel).final, r.target))
            if listing.cubin is None and find_tool("ptxas") is not None:  # without ptxas the driver JITs the PTX
                raise StageFailed(Failure("codegen", f"ptxas failed: {'; '.join(listing.assembler['messages'])}",
                                          "assembler-error"))
            spec = parsed.spec
            try:
                if not bench:
                    out = check_on_device(listing, kernel, r.problem, seed=spec.check_seed, tol=spec.check_tol)
                    return {**out, "stage": FINAL, "artifact": DEVICE_ARTIFACT, "verdict": verdict_of(out)}
                checked = check_on_device(listing, kernel, r.problem, seed=spec.check_seed, tol=spec.check_tol,
                                          rounding=True, launches=3)
                if not checked["ok"]:
                    return {**checked, "stage": FINAL, "artifact": DEVICE_ARTIFACT, "verdict": verdict_of(checked),
                            "timed": False}
                flops = float(r.problem.flops())
                timed = time_on_device(listing, kernel, runs=runs, flops=flops)
                timed["check"] = {k: checked[k] for k in ("ok", "rel_err", "tol", "launches", "inputs")}
            except DeviceUnavailable as exc:
                if bench:
                    raise StageFailed(Failure("check", f"no CUDA device to run on: {exc}", "no-device")) from None
                return not_checkable(NotCheckable("no-device", f"no CUDA device to run on: {exc}"),
                                     r.problem.shape.canonical(), DEVICE_ARTIFACT, FINAL)
            return {"ok": True, "shape": r.problem.shape.canonical(), "flops": flops, **timed,
                    **_fraction_of_peak(r, timed)}
        except StageFailed as exc:
            return failed(source.path, exc.failure, parsed)

    def _codegen_summary(self, r: Resolved, sources: dict[str, Range], disassemble: bool = True) -> dict:
        """The code generator's figures without its listing: the registers it allocated (kdd's allocator
        on Xe, ptxas on sm_90), the peak and what is live there, the instruction mix, the roofline, and
        ``ir``, the IR register model's figure the listing shows; or ``ok: false`` with the failure (out
        of registers, with its live buffers and repairs; an operation it cannot lower yet). Without
        ``disassemble`` ``ir`` is None and sm_90's peak and what is live there are not known (0; see
        :meth:`assembly`)."""
        try:
            asm = self._code(r, sources, disassemble=disassemble)
        except StageFailed as exc:
            return {"ok": False, "failure": exc.failure.to_dict(),
                    **({"out_of_registers": exc.details} if exc.details else {})}
        regs = asm["registers"]
        return {"ok": True, "allocated": regs.get("allocated", regs["peak"]), "peak": regs["peak"], "ir": regs["ir"],
                "peak_line": regs.get("peak_line"), "by_label": regs.get("by_label", {}), "mix": asm["mix"],
                "roofline": asm.get("roofline", {}), "assembler_ok": asm["assembler"].get("ok"),
                "spill": {k: regs[k] for k in ("spill_stores", "spill_loads") if regs.get(k)}}

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


def _refuse_written_knobs(config, problem, target, sources: dict[str, Range], shape: str | None,
                          target_name: str | None) -> None:
    """Raises :class:`StageFailed` at the first written knob that does not suit the ``--shape`` or
    ``--target`` override (``fma = "mad"`` for sm_90: the knob, and the values that target has)."""
    from kdd.core.config.validate import validate_config

    override = " and ".join(x for x in (target_name and f"--target {target_name}", shape and f"--shape {shape}") if x)
    for issue in validate_config(problem, config, target):
        if issue.severity == "error" and issue.knob in sources:
            raise StageFailed(Failure("build", f"{issue.knob}: {issue.message} (with {override})", "bad-knob",
                                      issue.knob, sources[issue.knob]))


def _portblas_remapped(parsed: Parsed, user, problem, target):
    """``user`` with the knobs a pasted portBLAS launcher (``[config] portblas`` of this document) sets
    mapped again for ``target``: the launcher is the config, its knobs are per target."""
    from kdd.core.config import ConfigError
    from kdd.core.config.portblas import KEY, read_portblas

    entry = parsed.document.get(("config", KEY))
    if entry is None or entry.value.kind != "string":
        return user
    try:
        mapping = read_portblas(entry.value.value, problem, target)
    except ConfigError as exc:
        raise StageFailed(Failure("input", f"portblas: {exc.message}", "bad-knob", KEY, entry.value.range)) from None
    for issue in mapping.issues:
        if issue.severity == "error":
            raise StageFailed(Failure("build", f"portblas {issue.param}: {issue.message} (with --target "
                                      f"{target.name})", "bad-knob", KEY, entry.value.range))
    own = [k for k, source in parsed.spec.knob_sources.items() if source.in_portblas]
    return mapping.config.over(replace(user, **{k: None for k in own}))


def _with_shape(problem, shape: str):
    """``problem`` at the benchdnn descriptor ``shape`` (``--shape``); a bad or too wide one fails the
    stage as bad input."""
    if not shape.strip():
        raise StageFailed(Failure("input", "--shape is empty: give a benchdnn descriptor", "bad-shape"))
    try:
        problem = replace(problem, shape=parse_shape(shape, problem.op))
    except (ProblemError, ValueError) as exc:
        raise StageFailed(Failure("input", f"--shape {shape!r}: {exc}", "bad-shape")) from None
    too_wide = problem.index_width_error()
    if too_wide is not None:
        raise StageFailed(Failure("input", f"--shape {shape!r}: {too_wide}", "bad-shape"))
    return problem


def _named_target(target: str):
    """The target named ``target`` (``--target``); an unknown one fails the stage as bad input."""
    tgt = TARGETS.get(target)
    if tgt is None:
        raise StageFailed(Failure("input", f"unknown target {target!r} (targets: {', '.join(TARGETS)})",
                                  "bad-target"))
    return tgt


def _reduced_by_spec(spec: KernelSpec) -> bool:
    """Whether the spec's check problem is its problem reduced by default units (no ``[check] shape``)."""
    from kdd.core.problem.reduced import reduce_problem

    return spec.check is not spec.problem and spec.check.shape == reduce_problem(spec.problem).shape


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
