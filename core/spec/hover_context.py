"""What a hover needs to know about a document: merged keys, problem, target, config, diagnostics.

A :class:`HoverContext` computes each piece lazily and once, so hovering a
layout tag never runs the config heuristic. Every piece is best effort, so a
hover shows what it can while the document is being edited:

- the problem is the one ``[problem]`` describes; when its tags or post-ops do
  not parse, the problem of its op, prop, shape and types alone (a layout
  hover needs only the tensor dims and types);
- a ``[config]`` with a bad knob still resolves the others: each bad knob is
  set aside with its error and the defaults heuristic fills it.

User input errors are kept as messages, never raised.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property

from kdd.core.config import (TOML_KEYS, Budget, ConfigError, ConfigIssue, KernelConfig, config_from_mapping,
                             estimate_budget, resolve_config, validate_config)
from kdd.core.config.mapping import LINE_KEY
from kdd.core.config.portblas import KEY as PORTBLAS_KEY
from kdd.core.config.portblas import PortblasMapping, read_portblas
from kdd.core.problem import OPS, PROPS, FrozenMap, Problem, parse_data_types, parse_shape
from kdd.core.targets import TARGETS, Target

from .diagnostics import Diagnostic
from .document import Document, KeyPath, Position, Value
from .extends import Chain, ReadText, display_path, load_chain, read_file
from .kernel_spec import load_spec
from .problem_section import ProblemPart, build_problem
from .reporter import Reporter


@dataclass(frozen=True)
class KnobOrigin:
    """Where a user-set knob is written: the ``[config]`` key that sets it (its own or ``line``), and the
    file it is inherited from, if any."""

    key: str
    inherited_from: str | None = None

    def __str__(self) -> str:
        words = {LINE_KEY: "set in `line`", PORTBLAS_KEY: "set by `portblas`"}.get(self.key, "written")
        return words + (f", inherited from {self.inherited_from}" if self.inherited_from else "")


@dataclass(frozen=True)
class UserConfig:
    """The knobs ``[config]`` sets, where each came from, and the knobs set aside for an error."""

    config: KernelConfig
    sources: FrozenMap  # knob -> KnobOrigin
    errors: FrozenMap  # [config] key -> the ConfigError that set it aside


@dataclass(frozen=True)
class HoverContext:
    """Lazily computed facts about ``doc`` (the text of file ``path``, parents read with ``read_text``)."""

    doc: Document
    path: str | None = None
    read_text: ReadText = read_file
    registers: dict | None = None  # the ``registers`` of a compile of this very text (its IR model's figure)

    @cached_property
    def chain(self) -> Chain:
        """The document and its ``extends`` ancestors, merged."""
        return load_chain(self.doc, self.path, self.read_text)[0]

    def value(self, path: KeyPath) -> Value | None:
        """The merged value at ``path`` (inherited or written here), or None."""
        located = self.chain.get(path)
        return located.entry.value if located is not None else None

    def string(self, path: KeyPath) -> str | None:
        """The merged string at ``path``; None when absent or not a string."""
        value = self.value(path)
        return value.value if value is not None and value.kind == "string" else None

    @cached_property
    def problem_part(self) -> ProblemPart | None:
        """The full problem part (tags, post-ops, check problem), or None when anything in it is wrong."""
        # Its diagnostics are load_spec's business; this reporter only collects them.
        return build_problem(self.chain, Reporter(self.doc, self.path))

    @cached_property
    def problem(self) -> Problem | None:
        """The problem with everything that parses: see the module doc."""
        if self.problem_part is not None:
            return self.problem_part.problem
        op = self.string(("problem", "op"))
        prop = self.string(("problem", "prop")) or "fwd"
        shape = self.string(("problem", "shape"))
        types = self.string(("problem", "types")) or "f32"
        if op not in OPS or prop not in PROPS or shape is None:
            return None
        try:
            return Problem(op, prop, parse_shape(shape, op), parse_data_types(types))
        except ValueError:
            return None

    @cached_property
    def target(self) -> Target | None:
        return TARGETS.get(self.string(("target", "hw")))

    @cached_property
    def config_table(self) -> dict:
        """The merged ``[config]`` table as Python values (a key written nearer replaces it wholesale)."""
        merged: dict = {}
        for layer in reversed(self.chain.layers):
            table = layer.doc.to_python().get("config")
            if isinstance(table, dict):
                merged.update(table)
        return merged

    @cached_property
    def user(self) -> UserConfig:
        """The knobs of ``[config]``; unknown keys are left to the schema diagnostics."""
        table = {k: v for k, v in self.config_table.items() if k in TOML_KEYS}
        dims = [name for role in "bmnk" for name, _ in getattr(self.problem.gemm_dims(), role)] \
            if self.problem is not None else []
        errors: dict[str, ConfigError] = {}
        while True:
            try:
                config = config_from_mapping(table, dims)
            except ConfigError as exc:
                errors[exc.key] = exc
                if exc.key not in table:  # the culprit cannot be set aside: nothing is read
                    return UserConfig(KernelConfig(), FrozenMap(), FrozenMap(errors))
                del table[exc.key]
                continue
            sources = {k: self._origin(k if k in table else LINE_KEY) for k in config.set_keys()}
            mapping = self.portblas
            if isinstance(mapping, PortblasMapping) and not any(i.severity == "error" for i in mapping.issues):
                added = [k for k in mapping.config.set_keys() if k not in sources]
                config = KernelConfig(**{k: getattr(mapping.config, k) for k in added}).over(config)
                sources.update({k: self._origin(PORTBLAS_KEY) for k in added})
            return UserConfig(config, FrozenMap(sources), FrozenMap(errors))

    @cached_property
    def portblas(self) -> PortblasMapping | ConfigError | None:
        """The mapping of ``[config] portblas`` (its error when it cannot be read; None when absent or
        before the problem and target are known)."""
        text = self.string(("config", PORTBLAS_KEY))
        if text is None or self.problem is None or self.target is None:
            return None
        try:
            return read_portblas(text, self.problem, self.target)
        except ConfigError as exc:
            return exc

    def _origin(self, key: str) -> KnobOrigin:
        """Where ``[config]`` key ``key`` is written."""
        # A key written as a table header alone ([config.unroll]) has no entry to come from.
        located = next((e for e in reversed(self.chain.entries) if e.entry.path[:2] == ("config", key)), None)
        if located is not None and located.inherited:
            return KnobOrigin(key, display_path(located.path, self.path))
        return KnobOrigin(key)

    @cached_property
    def config(self) -> KernelConfig | None:
        """The complete config in effect: the user's knobs and the heuristic's defaults."""
        if self.problem is None or self.target is None:
            return None
        try:
            return resolve_config(self.problem, self.target, self.user.config)
        except ValueError:
            return None

    @cached_property
    def budget(self) -> Budget | None:
        if self.config is None:
            return None
        return estimate_budget(self.problem, self.config, self.target)

    @cached_property
    def issues(self) -> tuple[ConfigIssue, ...]:
        """What :func:`validate_config` finds in the config in effect."""
        if self.config is None:
            return ()
        return tuple(validate_config(self.problem, self.config, self.target))

    @cached_property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Every diagnostic :func:`load_spec` gives this document."""
        return tuple(load_spec(self.doc.text, self.path, self.read_text)[1])

    def diagnostics_at(self, pos: Position) -> tuple[Diagnostic, ...]:
        """The diagnostics whose range holds ``pos``, each message once."""
        seen: dict[str, Diagnostic] = {}
        for d in self.diagnostics:
            if d.range.contains(pos):
                seen.setdefault(d.message, d)
        return tuple(seen.values())


def cursor_offset(doc: Document, value: Value, pos: Position) -> int | None:
    """Index into the decoded string ``value`` of the character at ``pos`` (None for non-strings)."""
    if value.kind != "string" or len(value.char_starts) < 2:
        return None
    index = doc.lines.index(pos)
    # char_starts[i] is where decoded char i begins; the last entry is the closing quote.
    return min(max(bisect_right(value.char_starts, index) - 1, 0), len(value.char_starts) - 2)
