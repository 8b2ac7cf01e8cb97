"""``load_spec``: a kernel config text to a :class:`KernelSpec` and its diagnostics.

The stages, each adding diagnostics: parse (tree-sitter), lint (syntax,
duplicates, schema), ``extends`` (inheritance), required keys, then the
semantic reading of ``[problem]``/``[check]``, ``[target]`` and ``[config]``
with the parsers of :mod:`kdd.core.problem`, :mod:`kdd.core.layout`,
:mod:`kdd.core.targets` and :mod:`kdd.core.config`.

The spec is None when the document cannot be read completely: any error from
parsing, the schema, ``extends`` or the semantic readers. Feasibility issues of
a readable config (tiles that do not divide the problem, an instruction the
target lacks, a register or SLM budget overflow) are reported but still give a
spec, so previews and hovers keep working while the user fixes them.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.config import KernelConfig
from kdd.core.problem import FrozenMap, Problem
from kdd.core.targets import TARGETS, Target

from .config_section import ISSUE_CODE, KnobSource, build_config
from .diagnostics import Diagnostic, Severity, sort_key
from .document import Position, Range, parse_document
from .extends import Chain, ReadText, load_chain, read_file
from .lint import lint_document
from .problem_section import build_problem
from .reporter import Reporter
from .schema_check import required_diagnostics

INTERNAL = "internal"


@dataclass(frozen=True)
class KernelSpec:
    """Everything a kernel config document says, read and resolved.

    ``config`` is complete (the user's knobs over the defaults);
    ``user_config`` holds only the knobs written (in ``[config]``, in its
    ``line`` or inherited); ``knob_sources`` says where each written knob is.
    ``layouts`` has the parsed layout of every tensor with a written tag.
    ``check`` is the problem of the on-save check (``[check] shape``, else the
    problem itself, or a reduced shape for a large problem) and ``check_stage`` the IR stage it runs
    (None: the code, the deepest artifact kdd can run).
    """

    path: str | None
    problem: Problem
    layouts: FrozenMap
    target: Target
    config: KernelConfig
    user_config: KernelConfig
    knob_sources: FrozenMap
    check: Problem
    check_seed: int
    check_tol: float | None
    check_stage: str | None = None  # None: the code (the engine picks the artifact)

    @property
    def user_knobs(self) -> tuple[str, ...]:
        """The knobs the user set, in ``KNOBS`` order."""
        return self.user_config.set_keys()

    def source_map(self) -> dict[str, Range]:
        """Knob -> range of its value in this document (inherited knobs are not in this file)."""
        return {knob: source.range for knob, source in self.knob_sources.items() if not source.inherited}


def load_spec(text: str, path: str | None = None, read_text: ReadText = read_file
              ) -> tuple[KernelSpec | None, list[Diagnostic]]:
    """Read kernel config ``text`` (the contents of file ``path``); never raises.

    ``read_text(path)`` supplies the files named by ``extends`` (the daemon
    passes one that prefers unsaved editor buffers). Diagnostics are sorted
    by position.
    """
    doc = parse_document(text)
    diagnostics = lint_document(doc, path)
    if any(fault.message is not None for fault in doc.faults):
        return None, diagnostics  # the reader refused the text (too large): nothing in it was read
    chain, inherited = load_chain(doc, path, read_text, lint=lint_document)
    diagnostics += inherited + required_diagnostics(chain.paths(), doc)
    report = Reporter(doc, path)
    try:
        spec = _read(chain, report, path)
    except Exception as exc:  # a bug in a later stage must become a diagnostic, not a dead daemon
        report.here(Range(Position(0, 0), Position(0, 0)),
                    f"internal error while reading the config: {type(exc).__name__}: {exc}", INTERNAL)
        spec = None
    diagnostics += report.found
    if any(d.severity == Severity.ERROR and d.code != ISSUE_CODE for d in diagnostics):
        spec = None
    return spec, sorted(diagnostics, key=sort_key)


def _read(chain: Chain, report: Reporter, path: str | None) -> KernelSpec | None:
    problem_part = build_problem(chain, report)
    hw = chain.get(("target", "hw"))
    target = TARGETS.get(hw.entry.value.value) if hw is not None and hw.entry.value.kind == "string" else None
    config_part = build_config(chain, report, problem_part.problem if problem_part else None, target,
                               problem_part.check if problem_part else None)
    if problem_part is None or config_part is None:
        return None
    return KernelSpec(path, problem_part.problem, problem_part.layouts, target, config_part.resolved,
                      config_part.user, config_part.sources, problem_part.check, problem_part.check_seed,
                      problem_part.check_tol, problem_part.check_stage)


__all__ = ["KernelSpec", "KnobSource", "load_spec"]
