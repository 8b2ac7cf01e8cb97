"""``[config]`` of a loaded document: the user's knobs, where each is written, the resolved config.

Knob values are read by :func:`kdd.core.config.config_from_mapping`,
one key at a time so that every bad key is reported, then all together (a knob
set both as a key and in ``line``). The user's knobs are completed by
:func:`~kdd.core.config.defaults.resolve_config` and the result checked by
:func:`~kdd.core.config.validate.validate_config` (instruction/type/target
support, tiles against the problem, register and SLM budget); each issue is
reported on the knob it names, at the token inside ``line`` when the knob was
set there, or on the ``[config]`` header when the knob came from the defaults.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kdd.core.config import (LINE_KEYS, ConfigError, KernelConfig, config_from_mapping, resolve_config,
                             validate_config)
from kdd.core.config.portblas import KEY as PORTBLAS_KEY
from kdd.core.config.portblas import read_portblas
from kdd.core.problem import FrozenMap, Problem
from kdd.core.targets import Target

from .diagnostics import Severity
from .document import Position, Range
from .extends import Chain, Located
from .reporter import Reporter
from .schema import LINE
from .schema_check import entry_diagnostics

CODE = "config"
LINE_KEY = LINE.name
ISSUE_CODE = "feasibility"
SEVERITIES = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFORMATION}


@dataclass(frozen=True)
class KnobSource:
    """Where a user-set knob is written: the range of its value (of its token inside ``line``).

    ``path`` is the file (None for the document itself); ``inherited`` says
    it came through ``extends``.
    """

    range: Range
    path: str | None
    inherited: bool
    in_line: bool = False
    in_portblas: bool = False


@dataclass(frozen=True)
class ConfigPart:
    """The knobs as written, where each is written, and the complete config."""

    user: KernelConfig
    resolved: KernelConfig
    sources: FrozenMap  # knob -> KnobSource


def groups_of(chain: Chain) -> dict[str, list[Located]]:
    """Merged ``[config]`` entries by first-level key (a key, then the entries nested in it)."""
    groups: dict[str, list[Located]] = {}
    for located in chain.entries:
        path = located.entry.path
        if path[0] == "config" and len(path) > 1:
            groups.setdefault(str(path[1]), []).append(located)
    return groups


def _python(entries: list[Located]) -> object:
    """The value of one key, whether written whole (``slm = {..}``) or as dotted keys (``slm.bufs = 3``)."""
    head = entries[0].entry
    if len(head.path) == 2:
        return head.value.value
    table: dict = {}
    for located in entries:
        if len(located.entry.path) == 2:
            continue  # `slm = {..}` after `slm.bufs = ..`: a redefinition, reported as a duplicate key
        target = table
        *parents, last = located.entry.path[2:]
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = located.entry.value.value
    return table


def _report(report: Reporter, error: ConfigError, entries: list[Located]) -> None:
    """A knob's error on its value: the token inside a string, or the nested entry the message names."""
    head = entries[0]
    if error.start is not None and head.entry.value.kind == "string":
        report.on_value(head, error.message, CODE, span=(error.start, error.end))
        return
    for located in entries[1:]:
        if error.message.startswith(".".join(map(str, located.entry.path[1:])) + " "):
            report.on_value(located, error.message, CODE)
            return
    report.on_value(head, error.message, CODE)


def read_user_config(chain: Chain, report: Reporter, dims: tuple[str, ...]
                     ) -> tuple[KernelConfig, dict[str, tuple[Located, Range]]] | None:
    """The knobs as written and, per knob, its entry and range; None when some knob could not be read."""
    groups = groups_of(chain)
    mapping: dict[str, object] = {}
    readable = True
    for key, entries in groups.items():
        if key == PORTBLAS_KEY:
            continue  # read against the problem and target (build_config)
        if any(entry_diagnostics(e.entry) for e in entries):
            readable = False  # the schema checks reported it
            continue
        value = _python(entries)
        try:
            config_from_mapping({key: value}, dims)
        except ConfigError as exc:
            _report(report, exc, entries)
            readable = False
            continue
        mapping[key] = value
    try:
        user = config_from_mapping(mapping, dims)
    except ConfigError as exc:
        _report(report, exc, groups[exc.key] if exc.key in groups and exc.key != PORTBLAS_KEY
                else next(iter(groups.values())))
        return None
    if not readable:
        return None
    return user, _sources(groups, mapping)


def _sources(groups: dict[str, list[Located]], mapping: dict) -> dict[str, tuple[Located, Range]]:
    sources = {key: (groups[key][0], groups[key][0].entry.value.range) for key in mapping if key != LINE_KEY}
    if LINE_KEY in mapping:
        located = groups[LINE_KEY][0]
        # Tokens are whitespace-separated key=value pairs (see kdd.core.config.line).
        for token in re.finditer(r"\S+", mapping[LINE_KEY]):
            key = token.group().partition("=")[0]
            if key in LINE_KEYS:
                sources[LINE_KEYS[key][0].key] = (located, located.entry.value.sub_range(token.start(), token.end()))
    return sources


def build_config(chain: Chain, report: Reporter, problem: Problem | None, target: Target | None,
                 check: Problem | None = None) -> ConfigPart | None:
    """The config part; knob errors are reported even when the problem or target is unusable.

    The resolved config is validated against the problem and, when it has
    another shape, the user's knobs (completed for it) against the ``[check]``
    problem the on-save check builds: an error only the check shape has is
    reported too, saying so.
    """
    dims = tuple(name for role in "bmnk" for name, _ in getattr(problem.gemm_dims(), role)) if problem else ()
    read = read_user_config(chain, report, dims)
    if read is None or problem is None or target is None:
        return None
    user, where = read
    portblas = groups_of(chain).get(PORTBLAS_KEY)
    if portblas is not None:
        user = _with_portblas(portblas[0], report, problem, target, user, where)
        if user is None:
            return None
    resolved = resolve_config(problem, target, user)
    issues = validate_config(problem, resolved, target)
    seen = {(i.knob, i.message) for i in issues}
    if check is not None and check.shape != problem.shape:
        shown = check.shape.canonical()
        issues += [replace(i, message=f"{i.message} (in the [check] shape '{shown}')")
                   for i in validate_config(check, resolve_config(check, target, user), target, reduced=True)
                   if i.severity == "error" and (i.knob, i.message) not in seen]
    for issue in issues:
        severity = SEVERITIES[issue.severity]
        if issue.knob in where:
            located, rng = where[issue.knob]
            report.at(located, rng, issue.message, ISSUE_CODE, severity)
        else:
            report.here(_defaults_anchor(report), f"{issue.message} (from the defaults for '{issue.knob}')",
                        ISSUE_CODE, severity)
    sources = FrozenMap({knob: KnobSource(rng, located.path if located.inherited else None, located.inherited,
                                          located.entry.path[1:] == (LINE_KEY,),
                                          located.entry.path[1:] == (PORTBLAS_KEY,))
                         for knob, (located, rng) in where.items()})
    return ConfigPart(user, resolved, sources)


def _with_portblas(located: Located, report: Reporter, problem: Problem, target: Target, user: KernelConfig,
                   where: dict) -> KernelConfig | None:
    """``user`` with the knobs of ``[config] portblas`` (:mod:`kdd.core.config.portblas`), each knob's source
    the launcher argument it comes from; its errors and warnings on the argument. None when it is unusable."""
    if entry_diagnostics(located.entry):
        return None
    text = located.entry.value.value
    try:
        mapping = read_portblas(text, problem, target)
    except ConfigError as exc:
        report.on_value(located, exc.message, CODE, span=(exc.start, exc.end))
        return None
    value = located.entry.value
    failed = False
    for issue in mapping.issues:
        start, end = mapping.launcher.span(issue.param)
        said = issue.message if issue.message.startswith(issue.param) else f"{issue.param}: {issue.message}"
        report.at(located, value.sub_range(start, end), said, CODE, SEVERITIES[issue.severity])
        failed |= issue.severity == "error"
    both = [k for k in mapping.config.set_keys() if getattr(user, k) is not None]
    for key in both:
        report.at(where[key][0], where[key][1], f"'{key}' is set both here and by portblas "
                                                f"({mapping.sources.get(key, 'its mapping')}); keep one", CODE)
    if failed or both:
        return None
    for key in mapping.config.set_keys():
        start, end = mapping.launcher.span(mapping.sources.get(key, ""))
        where[key] = (located, value.sub_range(start, end))
    return mapping.config.over(user)


def _defaults_anchor(report: Reporter) -> Range:
    """Where a default knob's issue goes: the ``[config]`` header, else the ``[problem]`` header."""
    for name in ("config", "problem"):
        table = report.doc.table(name)
        if table is not None and table.header_range is not None:
            return table.header_range
    return Range(Position(0, 0), Position(0, 0))
