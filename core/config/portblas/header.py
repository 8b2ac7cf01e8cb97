"""A portBLAS backend header (``src/interface/blas3/backend/*.hpp``): its launchers and what selects each.

Each ``_gemm`` overload of the header (its ``std::enable_if`` condition over the element types) holds a
tree of ``if``/``else if``/``else`` blocks, ``#ifdef`` sections and local ``constexpr`` constants whose
leaves ``return blas::Gemm_Launcher<...>::_select_gemm(...)`` (or ``return _dependencies;``, the
symmetric cases a backend skips). :func:`read_header` lists every leaf with the conditions on its path
as written; :func:`dispatch` runs the header for one call: the first overload whose condition holds,
then the first leaf whose path holds, as the code returns at the first leaf it reaches.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .cexpr import evaluate


@dataclass(frozen=True)
class Guard:
    """One condition on a path: ``text`` as written, ``expected`` its value there; ``macro`` for ``#ifdef``."""

    text: str
    expected: bool
    macro: bool = False

    def __str__(self) -> str:
        if self.macro:
            return f"#ifdef {self.text}" if self.expected else f"#ifndef {self.text}"
        return self.text if self.expected else f"!({self.text})"


@dataclass(frozen=True)
class Leaf:
    """A ``return`` of the header: a launcher's template arguments (``args``, whitespace collapsed; None for
    ``return _dependencies;``), the overload's condition, the guards on its path, the local constants in
    scope (``name -> expression``) and its line (1-based)."""

    index: int
    overload: str
    guards: tuple[Guard, ...]
    args: str | None
    constants: tuple[tuple[str, str], ...]
    line: int


@dataclass
class _Frame:
    guards: list = field(default_factory=list)     # the guards this block adds
    siblings: list = field(default_factory=list)   # the conditions of the if/else-if chain so far
    constants: list = field(default_factory=list)


def _strip_comments(text: str) -> str:
    """Comments blanked out, newlines kept, so offsets still give line numbers."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group())
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """The index just past the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced '{open_}' at offset {start}")


def _squash(text: str) -> str:
    """``text`` on one line: runs of white space (clang-format's line breaks) as one space."""
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", re.sub(r"\s+", " ", text))).strip()


def _directives(text: str, end: int, pp: list | None = None) -> list:
    """The ``#ifdef``/``#ifndef``/``#if defined`` sections open at offset ``end``, as ``[macro, expected]``."""
    pp = [] if pp is None else pp
    for m in re.finditer(r"^[ \t]*(#\w+)[ \t]*(.*)$", text[:end], re.M):
        directive, rest = m.group(1), m.group(2).strip()
        if directive in ("#ifdef", "#ifndef"):
            pp.append([rest.split()[0], directive == "#ifdef"])
        elif directive == "#if":
            d = re.match(r"defined\s*\(?\s*(\w+)", rest)
            pp.append([d.group(1) if d else _squash(rest), True])
        elif directive == "#else" and pp:
            pp[-1][1] = not pp[-1][1]
        elif directive == "#endif" and pp:
            pp.pop()
    return pp


_OVERLOAD = re.compile(r"template\s*<[^{;]*?>\s*(?:typename\s+std::enable_if\s*<(?P<cond>.*?),\s*typename\s+"
                       r"sb_handle_t::event_t\s*>::type|typename\s+sb_handle_t::event_t)\s*_gemm\s*\(", re.S)


def read_header(text: str) -> list[Leaf]:
    """Every launcher (and skip) of a backend header, in the order the code reaches them."""
    text = _strip_comments(text)
    leaves: list[Leaf] = []
    for m in _OVERLOAD.finditer(text):
        close = _balanced(text, m.end() - 1, "(", ")")
        body = text.index("{", close)
        end = _balanced(text, body, "{", "}")
        overload = _squash(m.group("cond") or "true")
        # the header guard (#ifndef PORTBLAS_..._HPP) is no condition of a launcher
        outer = [d for d in _directives(text, m.start()) if not d[0].endswith("_HPP")]
        _walk(text, body + 1, end - 1, overload, leaves, outer)
    return leaves


def _walk(text: str, pos: int, end: int, overload: str, leaves: list[Leaf], pp: list) -> None:
    frames = [_Frame()]

    def guards() -> tuple[Guard, ...]:
        out = [g for f in frames for g in f.guards]
        return tuple(Guard(m, e, True) for m, e in pp) + tuple(out)

    def open_block(at: int, new: list, siblings: list) -> int:
        brace = text.index("{", at)
        frames.append(_Frame(new, siblings))
        return brace + 1

    while pos < end:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            break
        if text[pos] == "#":
            eol = text.find("\n", pos)
            _directives(text[pos:eol], eol - pos, pp)
            pos = eol + 1
            continue
        if text[pos] == "}":
            done = frames.pop()
            pos += 1
            m = re.match(r"\s*else\b", text[pos:])
            if m:
                after = pos + m.end()
                chain = done.siblings + [done.guards[-1].text] if done.guards else done.siblings
                prior = [Guard(c, False) for c in chain]
                m2 = re.match(r"\s*if\s*(constexpr\s*)?\(", text[after:])
                if m2:
                    paren = after + m2.end() - 1
                    stop = _balanced(text, paren, "(", ")")
                    cond = _squash(text[paren + 1:stop - 1])
                    pos = open_block(stop, prior + [Guard(cond, True)], chain)
                else:
                    pos = open_block(after, prior, chain)
            continue
        m = re.match(r"if\s*(constexpr\s*)?\(", text[pos:])
        if m:
            paren = pos + m.end() - 1
            stop = _balanced(text, paren, "(", ")")
            cond = _squash(text[paren + 1:stop - 1])
            pos = open_block(stop, [Guard(cond, True)], [])
            continue
        if text[pos] == "{":
            frames.append(_Frame())
            pos += 1
            continue
        stop = _statement_end(text, pos)
        stmt = text[pos:stop]
        line = text.count("\n", 0, pos) + 1
        c = re.match(r"(?:static\s+)?constexpr\s+(?:int|index_t|auto)\s+(\w+)\s*=\s*(.*);", stmt, re.S)
        if c:
            frames[-1].constants.append((c.group(1), _squash(c.group(2))))
        elif stmt.startswith("return"):
            constants = tuple(c for f in frames for c in f.constants)
            launcher = re.search(r"Gemm_Launcher\s*<", stmt)
            if launcher:
                close = _balanced(stmt, launcher.end() - 1, "<", ">")
                args = _squash(stmt[launcher.end():close - 1])
                leaves.append(Leaf(len(leaves) + 1, overload, guards(), args, constants, line))
            elif re.match(r"return\s+_dependencies\s*;", stmt):
                leaves.append(Leaf(len(leaves) + 1, overload, guards(), None, constants, line))
        pos = stop


def _statement_end(text: str, pos: int) -> int:
    """Just past the ``;`` ending the statement at ``pos`` (brackets and strings skipped)."""
    depth, i = 0, pos
    while i < len(text):
        ch = text[i]
        if ch == '"' or ch == "'":
            i = text.index(ch, i + 1)
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            return i + 1
        i += 1
    raise ValueError(f"statement at offset {pos} has no ';'")


# C++ spellings of kdd's element types in portBLAS's containers
CXX_TYPES = {"f32": "float", "f64": "double", "f16": "sycl::half", "bf16": "sycl::ext::oneapi::bfloat16",
             "s32": "int", "s8": "int8_t", "u8": "uint8_t"}


@dataclass(frozen=True)
class Call:
    """One ``_gemm`` call as the dispatcher sees it: sizes, flags and element types (kdd's names)."""

    m: int
    n: int
    k: int
    batch_size: int
    batch_type: str
    trans_a: bool
    trans_b: bool
    beta_zero: bool
    types: tuple[str, str, str]
    defines: frozenset
    env: dict

    def names(self, constants=()) -> dict:
        """The names a header's conditions read, with ``constants`` (local ``constexpr``) evaluated in order."""
        names = {"_M": self.m, "_N": self.n, "_K": self.k, "batch_size": self.batch_size,
                 "batch_type": self.batch_type, "gemm_batch_type_t::strided": "strided",
                 "gemm_batch_type_t::interleaved": "interleaved", "_t_a": self.trans_a, "_t_b": self.trans_b,
                 "s_a": False, "s_b": False, "is_beta_zero": self.beta_zero,
                 "en_joint_matrix": self.env.get("SB_ENABLE_JOINT_MATRIX")}
        for name, expr in constants:
            names[name] = self.evaluate(expr, names)
        return names

    def evaluate(self, text: str, names: dict | None = None):
        return evaluate(text, names if names is not None else self.names(), self._trait, self._size_of)

    def _element(self, spelled: str) -> str:
        """kdd's type of a C++ type expression naming a container's or the scalar's element type."""
        m = re.search(r"container_(\d)_t", spelled)
        if m:
            return self.types[int(m.group(1))]
        if re.fullmatch(r"element(_in)?_t", spelled):
            return self.types[0] if "_in" in spelled else self.types[2]
        for kdd, cxx in CXX_TYPES.items():
            if spelled == cxx or spelled == cxx.split("::")[-1]:
                return kdd
        raise ValueError(f"type '{spelled}' is not one kdd binds")

    def _trait(self, text: str) -> bool:
        name, inner = re.match(r"((?:std::)?\w+)<(.*)>::value", text).groups()
        args = [a.replace("typename", "").strip() for a in re.split(r",(?![^<]*>)", inner)]
        t = self._element(args[0])
        if name == "std::is_same":
            return t == self._element(args[1])
        if name == "is_half":
            return t == "f16"
        if name == "is_sycl_scalar":
            return t in CXX_TYPES
        if name == "is_complex_sycl":
            return False
        raise ValueError(f"trait '{name}' is not one kdd evaluates")

    def _size_of(self, spelled: str) -> int:
        return {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "s32": 4, "s8": 1, "u8": 1}[self._element(spelled.strip())]


def holds(leaf: Leaf, call: Call) -> bool:
    """Whether ``leaf``'s overload and every guard on its path hold for ``call``."""
    names = call.names(leaf.constants)
    if not call.evaluate(leaf.overload, names):
        return False
    for g in leaf.guards:
        value = g.text in call.defines if g.macro else bool(call.evaluate(g.text, names))
        if value != g.expected:
            return False
    return True


def dispatch(leaves: list[Leaf], call: Call) -> Leaf | None:
    """The leaf the header returns at for ``call``: the first whose path holds (None: no overload or path)."""
    return next((leaf for leaf in leaves if holds(leaf, call)), None)


def bound_args(leaf: Leaf, call: Call) -> str:
    """The leaf's template arguments with its local constants replaced by their values for ``call``."""
    names = call.names(leaf.constants)
    out = leaf.args
    for name, _ in leaf.constants:
        out = re.sub(rf"\b{re.escape(name)}\b", str(names[name]), out)
    return out
