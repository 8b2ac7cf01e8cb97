"""What ``kdd sweep`` runs: one task per (descriptor or config) x type x target, read from its inputs.

Inputs, each named on the command line:

- a benchdnn batch file (``--batch=`` includes, ``--dir``/``--dt``/``--mb`` and the other options as
  :mod:`kdd.core.problem.batch_file` reads them): one document per descriptor, with the defaults
  heuristic's knobs, for every ``--target`` (required for these: a descriptor names no hardware);
- a ``*.kernel.toml`` file, or a directory of them (recursively): the config as written, or with
  ``--target``/``--types`` overriding its target and types through a derived document that
  ``extends`` it;
- ``onednn:FILE``: oneDNN's conv lookup-table lines (:mod:`kdd.core.problem.lookup_entry`), each
  line once per concrete type of its type class, on its own target.

``--types`` either replaces a descriptor's or config's types (``f16,bf16``), or, for lookup-table
lines, picks the variants of those labels; ``--target`` and ``--prop`` keep only what matches (and
set the target of descriptors and configs).

A task carries its whole input (the document text and every file its ``extends`` chain reads), so
a worker on another machine needs nothing but kdd; its key is a digest of that content, the stage
and its options, and the generator's version (:func:`kdd.core.engine.keys.content_key`): a rerun
skips what is already in the rows, and a changed generator recomputes everything.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

STAGES = ("compile", "asm", "check", "bench")
ONEDNN = "onednn:"


class InputError(ValueError):
    """An input that cannot be read as a batch file, a config or a lookup table (exit 2)."""


@dataclass(frozen=True)
class StageOptions:
    """How far a task goes and how: ``bisect``/``unbounded`` for the check stage, ``runs`` for bench."""

    stage: str = "compile"
    bisect: bool = False
    unbounded: bool = False
    runs: int = 50


@dataclass(frozen=True)
class Task:
    """One unit of work: a document (text, and the path it stands at for ``extends`` and messages: a
    descriptor's or lookup line's ``FILE:LINE``),
    the files its ``extends`` chain reads (absolute path, text), what it is (``label``: where it came
    from; target, prop and type for the summary) and the stage options."""

    label: str
    target: str
    prop: str
    type: str
    text: str
    path: str | None
    options: StageOptions
    files: tuple[tuple[str, str], ...] = ()
    key: str = field(default="", compare=False)

    def keyed(self) -> "Task":
        """This task with its content key."""
        from kdd.core.engine.keys import content_key

        return replace(self, key=content_key("sweep", self.options, self.text, self.files))

    def describe(self) -> dict:
        """The task's identity as a row carries it."""
        return {"label": self.label, "target": self.target, "prop": self.prop, "type": self.type,
                "stage": self.options.stage}


@dataclass(frozen=True)
class Selection:
    """The command line's filters: targets, types and props (empty: no filter)."""

    targets: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    props: tuple[str, ...] = ()

    def keeps(self, target: str, prop: str) -> bool:
        return (not self.targets or target in self.targets) and (not self.props or prop in self.props)


def read_tasks(inputs: list[str], selection: Selection, options: StageOptions) -> list[Task]:
    """Every task of ``inputs`` (in the order given, each input's in its own order), keyed.

    Raises :class:`InputError` for an input that does not exist or does not read."""
    tasks: list[Task] = []
    for name in inputs:
        if name.startswith(ONEDNN):
            tasks += _lookup_table(name[len(ONEDNN):], selection, options)
        elif Path(name).is_dir():
            configs = sorted(Path(name).rglob("*.kernel.toml"))
            if not configs:
                raise InputError(f"{name}: a directory with no *.kernel.toml file")
            for path in configs:
                tasks += _config(path, selection, options)
        elif name.endswith(".kernel.toml"):
            tasks += _config(Path(name), selection, options)
        else:
            tasks += _batch_file(Path(name), selection, options)
    return [t.keyed() for t in tasks]


def check_cost(task: Task) -> int:
    """The multiply-adds the check of ``task`` interprets (0 when its document does not read): a run of
    the check stage starts the longest first, so that the workers finish together."""
    from kdd.core.engine import Engine, Source
    from kdd.core.problem.reduced import check_macs
    from kdd.core.spec import read_file

    files = dict(task.files)
    spec = Engine(read_text=lambda p: files.get(os.path.normpath(os.path.abspath(p))) or read_file(p)).parse(
        Source(task.text, task.path)).spec
    return check_macs(spec.check) if spec is not None and spec.check is not None else 0


def _batch_file(path: Path, selection: Selection, options: StageOptions) -> list[Task]:
    from kdd.core.problem.batch_file import read_batch_file
    from kdd.core.problem.document import kernel_document
    from kdd.core.problem.errors import ProblemError

    if not path.is_file():
        raise InputError(f"{path}: no such file (inputs: benchdnn batch files, *.kernel.toml files or "
                         f"directories of them, {ONEDNN}FILE)")
    if not selection.targets:
        raise InputError(f"{path}: a benchdnn batch file names no hardware: give --target (xehpg, xehpc, xe2, sm_90)")
    try:
        entries = read_batch_file(path)
    except (ProblemError, OSError, UnicodeDecodeError) as exc:
        raise InputError(str(exc)) from None
    tasks = []
    for entry in entries:
        for types in selection.types or (entry.problem.types.canonical(),):
            problem = _with_types(entry.problem, types, f"{entry.path}:{entry.line}")
            for target in selection.targets:
                if selection.keeps(target, problem.prop):
                    tasks.append(Task(f"{entry.path}:{entry.line} {entry.text}", target, problem.prop,
                                      problem.types.canonical(), kernel_document(problem, target),
                                      f"{entry.path}:{entry.line}", options))
    return tasks


def _with_types(problem, types: str, where: str):
    from kdd.core.problem.data_types import parse_data_types
    from kdd.core.problem.errors import ProblemError

    try:
        return replace(problem, types=parse_data_types(types))
    except ProblemError as exc:
        raise InputError(f"--types {types!r} for {where}: {exc}") from None


def _config(path: Path, selection: Selection, options: StageOptions) -> list[Task]:
    """A config file as written, or once per ``--target`` x ``--types`` through a document that
    extends it; the files its chain reads travel with the task."""
    from kdd.core.engine import Engine, Source
    from kdd.core.spec import read_file

    files: dict[str, str] = {}

    def recording_read(name: str) -> str:
        text = read_file(name)
        files[os.path.normpath(os.path.abspath(name))] = text
        return text
    try:
        text = recording_read(str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    spec = Engine(read_text=recording_read).parse(Source(text, str(path))).spec
    if spec is None:        # unreadable as a config: one task, whose row carries the diagnostics
        return [Task(str(path), "", "", "", text, str(path), options, tuple(files.items()))]
    own_types = spec.problem.types.canonical()
    tasks = []
    for target in selection.targets or (spec.target.name,):
        for types in selection.types or (own_types,):
            if not selection.keeps(target, spec.problem.prop):
                continue
            if target == spec.target.name and types == own_types:
                doc, where = text, str(path)
            else:       # the config with its target and types replaced, standing beside it
                doc = (f'extends = "{path.name}"\n[problem]\ntypes = "{types}"\n[target]\nhw = "{target}"\n')
                where = str(path.with_name(f"{path.name}@{target}:{types}"))
            tasks.append(Task(str(path), target, spec.problem.prop, types, doc, where, options,
                              tuple(sorted(files.items()))))
    return tasks


def _lookup_table(name: str, selection: Selection, options: StageOptions) -> list[Task]:
    from kdd.core.problem.lookup_entry import LookupEntryError, LookupEntry

    try:
        lines = Path(name).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{ONEDNN}{name}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    tasks = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entry = LookupEntry.parse(line)
        except LookupEntryError as exc:
            raise InputError(f"{name}:{number}: {exc}") from None
        if not selection.keeps(entry.target, entry.prop):
            continue
        for variant in entry.variants():
            if not selection.types or variant.label in selection.types:
                tasks.append(Task(f"{name}:{number} {line.strip()}", entry.target, entry.prop, variant.label,
                                  entry.document(variant), f"{name}:{number}", options))
    return tasks
