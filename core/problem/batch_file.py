"""benchdnn batch files: problem descriptors mixed with ``--key=value`` options.

A batch file is a list of benchdnn command-line arguments spread over lines:

* ``#`` starts a comment that runs to the end of the line (outside ``"..."``);
  blank lines are ignored; a ``\\`` at the very end of a line joins the next
  line to it, as in a shell.
* Arguments are separated by whitespace; double quotes group (``n"a b"``).
* ``--key=value`` sets an option for the descriptors that follow it, to the
  end of the file. ``--batch=FILE`` reads FILE (relative to the directory of
  the file that names it) with the options in effect at that point; options
  it sets do not leak back. ``--reset`` clears all options. ``--conv`` and
  ``--matmul`` pick the driver (the op) for the descriptors that follow.
* Every other argument is a problem descriptor of the current op, or of the
  op its text implies when no driver was picked (:func:`~.problem.detect_op`).

Options kdd interprets (all others are recorded untouched in
:attr:`BatchEntry.options`):

=====================  ==================================================
``--dir=``             ``FWD_D``/``FWD_I`` fwd, ``FWD_B`` fwd with bias,
                       ``BWD_D`` bwd_d, ``BWD_W`` bwd_w, ``BWD_WB`` bwd_w
                       with bias. Without it a problem is fwd without bias
                       (benchdnn's own default is ``FWD_B``).
``--dt=``              data types (:mod:`.data_types`), default f32.
``--mb=``              minibatch override for convolutions; 0 keeps the
                       descriptor's.
``--stag/wtag/dtag=``  layout tags of src/wei/dst.
``--attr-post-ops=``   post-op chain (:mod:`.post_ops`), after the bias.
=====================  ==================================================
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .data_types import parse_data_types
from .errors import ProblemError
from .frozen_map import FrozenMap
from .post_ops import Bias, parse_post_ops
from .problem import Problem, detect_op, parse_shape

_DIRS = {"FWD_B": ("fwd", True), "FWD_D": ("fwd", False), "FWD_I": ("fwd", False),
         "BWD_D": ("bwd_d", False), "BWD_W": ("bwd_w", False), "BWD_WB": ("bwd_w", True)}
_TAG_OPTIONS = {"stag": "src", "wtag": "wei", "dtag": "dst"}
_DRIVERS = {"conv": "conv", "matmul": "gemm"}


class BatchFileError(ProblemError):
    """An error at ``path:line``; ``start``/``end`` are 0-based columns in that line."""

    def __init__(self, message: str, path: Path, line: int, start: int, end: int):
        super().__init__(message, start, end)
        self.path = path
        self.line = line

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.start + 1}: {self.message}"


@dataclass(frozen=True)
class BatchEntry:
    """One problem of a batch file, where it was written and the options in effect.

    ``text`` is the descriptor exactly as written; ``problem`` applies the
    options to it (so its shape may differ from ``text`` by ``--mb``).
    ``line`` and ``column`` are 1-based.
    """

    problem: Problem
    text: str
    options: FrozenMap
    path: Path
    line: int
    column: int


@dataclass(frozen=True)
class _Token:
    text: str
    line: int
    col: int  # 0-based


def read_batch_file(path: str | Path, *, op: str | None = None,
                    options: dict[str, str] | None = None) -> list[BatchEntry]:
    """All problems of the batch file at ``path``, following ``--batch`` includes."""
    path = Path(path)
    return parse_batch(path.read_text(), path, op=op, options=options)


def parse_batch(source: str, path: str | Path, *, op: str | None = None,
                options: dict[str, str] | None = None) -> list[BatchEntry]:
    """Like :func:`read_batch_file` for text not (yet) saved at ``path``."""
    path = Path(path)
    return _parse(source, path, op, FrozenMap(options or {}), (path.resolve(),))


def _parse(source: str, path: Path, op: str | None, options: FrozenMap,
           including: tuple[Path, ...]) -> list[BatchEntry]:
    entries: list[BatchEntry] = []
    for tok in _tokens(source, path):
        if not tok.text.startswith("-"):
            entries.append(_entry(tok, op, options, path))
            continue
        key, has_value, value = tok.text[2:].partition("=")
        if not tok.text.startswith("--") or not key:
            raise BatchFileError(f"unknown argument {tok.text!r}: options look like --key=value",
                                 path, tok.line, tok.col, tok.col + len(tok.text))
        value_col = tok.col + 3 + len(key)
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value, value_col = value[1:-1], value_col + 1
        if key == "batch":
            entries += _include(tok, value, path, op, options, including)
        elif key == "reset" and not has_value:
            options = FrozenMap()
        elif key in _DRIVERS and not has_value:
            op = _DRIVERS[key]
        else:
            try:
                _interpret(key, value)
            except ProblemError as e:
                raise BatchFileError(f"--{key}: {e.message}", path, tok.line,
                                     value_col + e.start, value_col + e.end) from None
            options = options.updated({key: value})
    return entries


def _include(tok: _Token, value: str, path: Path, op, options, including) -> list[BatchEntry]:
    def fail(message):
        return BatchFileError(message, path, tok.line, tok.col, tok.col + len(tok.text))

    if not value:
        raise fail("--batch needs a file name: --batch=FILE")
    child = path.parent / value
    if not child.is_file():
        raise fail(f"batch file {value!r} not found (looked for {child})")
    if child.resolve() in including:
        raise fail(f"batch file {value!r} includes itself")
    return _parse(child.read_text(), child, op, options, including + (child.resolve(),))


def _interpret(key: str, value: str):
    """The meaning of a known option's value; unknown options are kept as text.

    Raises :class:`ProblemError` with a span into ``value``.
    """
    if key == "dir":
        if value.upper() not in _DIRS:
            raise ProblemError(f"unknown direction {value!r} (known: {', '.join(_DIRS)})",
                               0, len(value))
        return _DIRS[value.upper()]
    if key == "dt":
        return parse_data_types(value)
    if key == "mb":
        if not value.isdigit():
            raise ProblemError(f"minibatch {value!r} must be a non-negative integer", 0, len(value))
        return int(value)
    if key in _TAG_OPTIONS and not value:
        raise ProblemError(f"--{key} needs a layout tag", 0, 0)
    if key == "attr-post-ops":
        return parse_post_ops(value)
    return value


def problem_from_options(shape, op: str, options: FrozenMap) -> Problem:
    """The problem a descriptor ``shape`` of ``op`` stands for under batch ``options``."""
    def option(key, default):
        return _interpret(key, options[key]) if key in options else default

    prop, bias = option("dir", ("fwd", False))
    mb = option("mb", 0)
    if mb:
        if op != "conv":
            raise ValueError("--mb applies to convolution problems only")
        shape = dataclasses.replace(shape, mb=mb)
    return Problem(op=op, prop=prop, shape=shape, types=option("dt", parse_data_types("f32")),
                   tags={t: options[o] for o, t in _TAG_OPTIONS.items() if o in options},
                   post_ops=((Bias(),) if bias else ()) + option("attr-post-ops", ()))


def _entry(tok: _Token, op: str | None, options: FrozenMap, path: Path) -> BatchEntry:
    op = op or detect_op(tok.text)
    try:
        shape = parse_shape(tok.text, op)
    except ProblemError as e:
        raise BatchFileError(e.message, path, tok.line, tok.col + e.start, tok.col + e.end) from None
    try:
        problem = problem_from_options(shape, op, options)
    except ValueError as e:
        raise BatchFileError(f"{tok.text!r} with options {dict(options)}: {e}", path, tok.line,
                             tok.col, tok.col + len(tok.text)) from None
    return BatchEntry(problem=problem, text=tok.text, options=options, path=path,
                      line=tok.line, column=tok.col + 1)


def _tokens(source: str, path: Path) -> list[_Token]:
    """Whitespace-separated arguments with their positions, comments and joins removed."""
    tokens: list[_Token] = []
    chars: list[str] = []
    start: tuple[int, int] | None = None
    quoted = False
    line, col, i = 1, 0, 0

    def flush():
        nonlocal chars, start
        if chars:
            tokens.append(_Token("".join(chars), *start))
        chars, start = [], None

    def unterminated():
        return BatchFileError(f"unterminated quote in {''.join(chars)!r}", path, start[0], start[1],
                              start[1] + len(chars))

    while i < len(source):
        c = source[i]
        if c == "\\" and not quoted and source[i + 1:i + 2] == "\n":
            i, line, col = i + 2, line + 1, 0
        elif c == "\\" and not quoted and source[i + 1:i + 3] == "\r\n":
            i, line, col = i + 3, line + 1, 0
        elif c == "\n":
            if quoted:
                raise unterminated()
            flush()
            i, line, col = i + 1, line + 1, 0
        elif c == "#" and not quoted:
            flush()
            newline = source.find("\n", i)
            i = len(source) if newline < 0 else newline
        elif c.isspace() and not quoted:
            flush()
            i, col = i + 1, col + 1
        else:
            if start is None:
                start = (line, col)
            quoted ^= c == '"'
            chars.append(c)
            i, col = i + 1, col + 1
    if quoted:
        raise unterminated()
    flush()
    return tokens
