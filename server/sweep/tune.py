"""``kdd tune``: a search over knob values of one config, its trials run as sweep tasks on Ray.

The space is written ``"iter=mb32oc32ic16|mb16oc32ic16; tg=oc4ow4|oc2ow4; slm.bufs=2|3; s=x2|x3"``:
each part a knob (a ``[config]`` key or oneDNN line key, as a config line reads it; ``line``: whole
config lines) or a field of one (``slm.bufs``, ``prefetch.bufs``, ``subtiles.b``: the rest of the
knob as the config resolves it) and its values; ``auto`` is the heuristic's own tuning space
(:func:`kdd.core.config.search.tuning_space`). A trial is the config with those knobs written over its own, run as the task of
stage ``check`` (``--objective model``: compiled, checked in the interpreter, scored by the
roofline time of its listing) or ``bench`` (sm_90 on a GPU node: checked on the device, then timed).
A trial counts only when its check is right; Optuna's samplers (``tpe``, ``random``, ``grid``)
propose the next ones as trials finish. Every trial is a row of the history (JSON lines, the sweep's
row plus ``trial``), from which a rerun takes the trials it already has; the best is written next to
the file with its figures in a comment.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path

from .tasks import StageOptions, Task

OBJECTIVES = {"model": "check", "bench": "bench"}
AUTO = "auto"       # --space auto: the heuristic's tuning space (kdd.core.config.search.tuning_space)
LINE = "line"       # a space knob whose values are whole config lines
SAMPLERS = ("tpe", "random", "grid")
_CONFIG_TABLE = re.compile(r"^\[config\][^\n]*\n(?:(?!\[)[^\n]*\n?)*", re.M)


class TuneError(ValueError):
    """A file or space that cannot be tuned (exit 2)."""


@dataclass(frozen=True)
class Space:
    """The knobs searched and the values of each, as written."""

    knobs: tuple[tuple[str, tuple[str, ...]], ...]

    @staticmethod
    def parse(text: str) -> "Space":
        knobs = []
        for part in filter(None, (p.strip() for p in text.split(";"))):
            name, eq, values = part.partition("=")
            choices = tuple(v.strip() for v in values.split("|"))
            if not eq or not name.strip() or not all(choices):
                raise TuneError(f"--space part {part!r}: write KNOB=VALUE|VALUE|...")
            knobs.append((name.strip(), choices))
        if not knobs:
            raise TuneError("--space names no knob: write \"iter=...|...; tg=...|...\"")
        return Space(tuple(knobs))

    @staticmethod
    def auto(spec) -> "Space":
        """The configs :func:`~kdd.core.config.search.tuning_space` gives the file's problem and target
        (the heuristic's best tiles, group shapes, SLM stages, split K on a small grid) as config lines."""
        from kdd.core.config.search import tuning_space

        return Space(((LINE, tuple(c.line() for c in tuning_space(spec.problem, spec.target))),))

    @property
    def size(self) -> int:
        n = 1
        for _, values in self.knobs:
            n *= len(values)
        return n


@dataclass(frozen=True)
class Tunable:
    """The file being tuned: its text, its spec (the knobs written and the config resolved)."""

    path: Path
    text: str
    spec: object

    @staticmethod
    def read(path: Path) -> "Tunable":
        from kdd.core.engine import Engine, Source
        from kdd.core.spec import read_file

        try:
            text = read_file(str(path))
        except (OSError, UnicodeDecodeError) as exc:
            raise TuneError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
        if re.search(r"^\s*extends\s*=", text, re.M):
            raise TuneError(f"{path}: kdd tune rewrites the [config] of a file that stands alone; this one "
                            "extends another (tune a copy with the parent's tables written in)")
        parsed = Engine().parse(Source(text, str(path)))
        if parsed.spec is None or parsed.errors:
            first = parsed.errors[0] if parsed.errors else None
            raise TuneError(f"{path}: not a valid config" + (f" ({first.range.start}: {first.message})"
                                                              if first else ""))
        return Tunable(path, text, parsed.spec)

    def config(self, choice: dict[str, str]):
        """The knobs written in the file with ``choice`` (knob -> value as written) over them."""
        from kdd.core.config.errors import ConfigError
        from kdd.core.config.knobs import LINE_KEYS
        from kdd.core.config.line import parse_config_line

        problem = self.spec.problem
        dims = tuple(name for role in "bmnk" for name, _ in getattr(problem.gemm_dims(), role))
        user = self.spec.user_config
        for name, value in choice.items():
            knob, _, part = name.partition(".")
            try:
                if not part:
                    text = value if knob == LINE else f"{knob}={value}"
                    user = parse_config_line(text, dims).over(user)
                    continue
            except ConfigError as exc:
                raise TuneError(f"--space {name}={value}: {exc}") from None
            if knob not in LINE_KEYS:
                raise TuneError(f"--space {name}: unknown knob {knob!r} (knobs: {', '.join(LINE_KEYS)})")
            field = LINE_KEYS[knob][0].key
            base = getattr(user, field) or getattr(self.spec.config, field)
            if not is_dataclass(base) or part not in {f.name for f in fields(base)}:
                raise TuneError(f"--space {name}: {field} has no field {part!r}"
                                + (f" (fields: {', '.join(f.name for f in fields(base))})" if is_dataclass(base)
                                   else ""))
            try:
                user = replace(user, **{field: replace(base, **{part: _scalar(value, getattr(base, part))})})
            except (TypeError, ValueError) as exc:
                raise TuneError(f"--space {name}={value}: {exc}") from None
        return user

    def document(self, config) -> str:
        """The file's text with its ``[config]`` table written as ``config``'s line."""
        body = _CONFIG_TABLE.sub("", self.text).rstrip("\n")
        return f"{body}\n\n[config]\nline = {json.dumps(config.line())}\n"

    def task(self, config, objective: str, runs: int) -> Task:
        spec = self.spec
        return Task(str(self.path), spec.target.name, spec.problem.prop, spec.problem.types.canonical(),
                    self.document(config), str(self.path), StageOptions(OBJECTIVES[objective], runs=runs)).keyed()


def _scalar(text: str, like: object) -> object:
    """``text`` as the type of ``like`` (an int or a bool of a knob's field)."""
    if isinstance(like, bool):
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"{text!r} is not true or false")
        return text.lower() in ("true", "1")
    if isinstance(like, int):
        return int(text)
    raise ValueError(f"cannot set a field of type {type(like).__name__}")


def score(row: dict, objective: str) -> float | None:
    """A trial's figure (lower is better): the roofline seconds of its listing, or the device's median
    microseconds; None when the trial does not count (refused, wrong, or no figure)."""
    if row["verdict"]["outcome"] != "ok":
        return None
    if objective == "bench":
        return row["bench"]["median_us"]
    return (row["stats"]["codegen"].get("roofline") or {}).get("time_s")


def overhead(row: dict) -> float:
    """Instructions beside the FMAs per FMA in the main loop: what breaks a tie of the objective (a
    compute-bound roofline is the same for every tiling of a problem)."""
    loop = row["stats"]["loop"]
    fmas = loop.get(loop.get("fma"), 0) or 1
    return sum(loop.get(k, 0) for k in ("sends", "int_ops", "float_ops", "moves", "operand_reorders")) / fmas


def best_file(path: Path) -> Path:
    """Where the best config goes: ``NAME.tuned.kernel.toml`` beside ``NAME.kernel.toml``."""
    stem = path.name[:-len(".kernel.toml")] if path.name.endswith(".kernel.toml") else path.stem
    return path.with_name(f"{stem}.tuned.kernel.toml")


def history_file(path: Path) -> Path:
    stem = path.name[:-len(".kernel.toml")] if path.name.endswith(".kernel.toml") else path.stem
    return path.with_name(f"{stem}.tune.jsonl")


class Proposer:
    """The next knob values to try: Optuna's TPE or random sampler (told each figure, a failed trial
    as failed), or the grid of the space in order."""

    def __init__(self, space: Space, sampler: str, seed: int):
        self.space = space
        if sampler == "grid":
            self._grid = itertools.product(*(values for _, values in space.knobs))
            self._study = None
            self._count = 0
            return
        import optuna
        from optuna.distributions import CategoricalDistribution

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        samplers = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler}
        self._study = optuna.create_study(direction="minimize", sampler=samplers[sampler](seed=seed))
        self._distributions = {name: CategoricalDistribution(list(values)) for name, values in space.knobs}

    def ask(self) -> tuple[object, dict[str, str]]:
        """A handle and the knob values of the next trial."""
        if self._study is None:
            self._count += 1
            return self._count - 1, dict(zip((name for name, _ in self.space.knobs), next(self._grid)))
        trial = self._study.ask(self._distributions)
        return trial, dict(trial.params)

    def tell(self, handle, value: float | None) -> int:
        """Record a trial's figure (None: it does not count); its number."""
        if self._study is None:
            return handle
        from optuna.trial import TrialState

        self._study.tell(handle, value, state=None if value is not None else TrialState.FAIL)
        return handle.number


@dataclass
class Trial:
    """One evaluated point: its number (None for the config as written), knob values, row and figure."""

    number: int | None
    params: dict[str, str]
    row: dict
    value: float | None
    reused: bool


def tune(tunable: Tunable, space: Space, *, objective: str, budget: int, sampler: str = "tpe", seed: int = 0,
         history: Path, address: str | None = None, workers: int | None = None, runs: int = 50) -> list[Trial]:
    """Evaluate the config as written, then ``budget`` trials proposed by ``sampler`` (a grid stops
    at its size), as Ray tasks; every trial is a history row (a rerun reuses the ones there)."""
    from kdd.core.engine.versions import generator_version

    from . import work
    from .ray_pool import map_unordered, progress_bar, ray_session
    from .rows import RowWriter, done_keys, read_rows

    for name, values in space.knobs:     # every value reads, before anything runs
        for value in values:
            tunable.config({name: value})
    proposer = Proposer(space, sampler, seed)
    budget = min(budget, space.size) if sampler == "grid" else budget
    saved = read_rows([history])
    known = {r["key"]: r for r in saved if r["key"] in done_keys(saved)}
    waiting: dict[str, list] = {}          # key -> trials (optuna's, or None for the baseline) in flight
    done: list[Trial] = []
    writer = RowWriter(history)
    bar = progress_bar(budget + 1, "trial")

    def finish(trial, params: dict, row: dict, reused: bool) -> None:
        value = score(row, objective)
        number = None if trial is None else proposer.tell(trial, value)
        if not reused:
            writer.write({**row, "trial": {"number": number, "params": params, "value": value}})
        done.append(Trial(number, params, row, value, reused))
        bar.update()

    def propose(trial, params: dict, config):
        task = tunable.task(config, objective, runs)
        if task.key in known:
            finish(trial, params, known[task.key], True)
            return None
        first = task.key not in waiting
        waiting.setdefault(task.key, []).append((trial, params))
        return (task, generator_version()) if first else None

    def calls():
        baseline = propose(None, {}, tunable.spec.user_config)
        if baseline:
            yield baseline
        for _ in range(budget):
            trial, params = proposer.ask()
            call = propose(trial, params, tunable.config(params))
            if call:
                yield call

    def on_result(args, row: dict) -> None:
        known[row["key"]] = row
        for trial, params in waiting.pop(args[0].key):
            finish(trial, params, row, False)

    def on_lost(args, why: str) -> None:
        on_result(args, work.row(args[0], work.lost(why), 0, 0))
    try:
        proposed = calls()
        first = next(proposed, None)
        if first is not None:       # else every trial came from the history: no cluster to start
            with ray_session(address, workers) as ray:
                map_unordered(ray, work.run_task, itertools.chain([first], proposed),
                              workers=workers, gpus=1 if objective == "bench" else 0, on_result=on_result,
                              on_lost=on_lost)
    finally:
        writer.close()
        bar.close()
    return done


def write_best(tunable: Tunable, space: Space, objective: str, trials: list[Trial]
               ) -> tuple[Path | None, Trial] | None:
    """The best counted trial written as a config beside the tuned file, its figures in a comment: the
    path and the trial; ``(None, the config as written)`` when no trial beats the config as written
    (nothing is written: a "tuned" file slower than its source would mislead); None when no trial
    counted."""
    counted = [t for t in trials if t.number is not None and t.value is not None]
    if not counted:
        return None
    best = min(counted, key=lambda t: (t.value, overhead(t.row)))
    baseline = next((t for t in trials if t.number is None), None)
    if baseline is not None and baseline.value is not None and baseline.value <= best.value:
        return None, baseline
    outcomes = [t.row["verdict"]["outcome"] for t in trials if t.number is not None]
    head = [f"# kdd tune {tunable.path.name} --space \"{space_text(space)}\" --objective {objective}: "
            f"the best of {len(outcomes)} trials ({outcomes.count('ok')} checked right, "
            f"{outcomes.count('wrong')} wrong, {len(outcomes) - outcomes.count('ok') - outcomes.count('wrong')} "
            "refused or failed)",
            f"# {figure(best, objective)} with {', '.join(f'{k}={v}' for k, v in best.params.items())}; "
            f"the config as written: {figure(baseline, objective) if baseline else 'not run'}"]
    path = best_file(tunable.path)
    path.write_text("\n".join(head) + "\n" + tunable.document(tunable.config(best.params)))
    return path, best


def figure(trial: Trial, objective: str) -> str:
    """A trial's figure in words (or why it has none)."""
    if trial.value is None:
        v = trial.row["verdict"]
        return f"no figure ({v['class']})" if v["class"] else "no figure"
    if objective == "bench":
        return f"{trial.value:.1f} us median on {trial.row['bench'].get('device', 'the GPU')}"
    roofline = trial.row["stats"]["codegen"]["roofline"]
    return f"{trial.value * 1e6:.2f} us by the roofline of its listing ({roofline['bound']}-bound)"


def space_text(space: Space) -> str:
    return "; ".join(f"{name}={'|'.join(values)}" for name, values in space.knobs)
