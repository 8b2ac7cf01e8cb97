"""The IR's text form, in oneDNN's style, with a map from printed lines to IR nodes.

Statements print as C-like blocks with two-space indentation; lets print as
typed assignments (``x.s32 = (a + b)``) followed by their body at the same
indentation, and allocations as ``alloc.slm buf[1024]``, as oneDNN's printer
does, so deep let chains stay readable. Expressions are fully parenthesised.

``print_ir`` returns the lines together with, for each line, the statement it
came from: the map editors use to jump between IR, assembly and config.
Everything here is iterative, so printing is linear in the tree size and never
recurses.
"""
from __future__ import annotations

from dataclasses import dataclass

from .expr import (Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Ramp,
                   Shuffle, Ternary, Unary, Var)
from .node import Node
from .stmt import Alloc, For, FuncCall, Group, If, Let, Seq, Stmt, Store

INDENT = "  "


@dataclass(frozen=True)
class PrintedIR:
    """Printed IR: ``lines[i]`` was printed for ``nodes[i]``."""

    lines: tuple[str, ...]
    nodes: tuple[Node, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def lines_of(self, node: Node) -> list[int]:
        """0-based line numbers printed for ``node`` (identity match)."""
        return [i for i, n in enumerate(self.nodes) if n is node]


# Sub-expressions up to this many nodes are printed by a (shallow) recursion, each distinct
# object once per print; bigger ones through an explicit stack, so any depth prints.
_SMALL = 64


def expr_to_text(e: Expr) -> str:
    """One expression, fully parenthesised."""
    return _expr_text(e, {})


def _expr_text(e: Expr, memo: dict) -> str:
    """``expr_to_text`` sharing ``memo`` (id -> text) with other calls of one print."""
    if e._size <= _SMALL:
        return _small_text(e, memo)
    out: list[str] = []
    stack: list[object] = [e]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif item._size <= _SMALL:
            out.append(_small_text(item, memo))
        else:
            stack.extend(reversed(_expr_tokens(item)))
    return "".join(out)


def _small_text(e: Expr, memo: dict) -> str:
    text = memo.get(id(e))
    if text is None:
        cls = e.__class__
        if cls is Var:
            text = e.name
        elif cls is Binary and not e.op.is_call_form:  # the common case, written out
            a, b = e.a, e.b
            ta, tb = memo.get(id(a)), memo.get(id(b))
            text = (f"({_small_text(a, memo) if ta is None else ta} {e.op.symbol} "
                    f"{_small_text(b, memo) if tb is None else tb})")
        else:
            text = "".join(x if isinstance(x, str) else _small_text(x, memo) for x in _expr_tokens(e))
        memo[id(e)] = text
    return text


def _float(v: float) -> str:
    text = repr(float(v))
    return text if any(c in text for c in ".en") else text + ".0"


def _expr_tokens(e: Expr) -> list:
    """The expression as text pieces and sub-expressions, in print order."""
    if isinstance(e, Var):
        return [e.name]
    if isinstance(e, IntImm):
        text = str(e.value)
        if e.type.scalar.bits == 64 or not e.type.is_signed:
            text += f":{e.type}"  # keep non-default integer kinds visible
        return [f"({text})" if e.value < 0 else text]
    if isinstance(e, FloatImm):
        return [f"{_float(e.value)}:{e.type}" if str(e.type) != "f32" else _float(e.value)]
    if isinstance(e, BoolImm):
        return ["true" if e.value else "false"]
    if isinstance(e, Unary):
        return ["(", e.op.symbol, e.a, ")"]
    if isinstance(e, Binary):
        if e.op.is_call_form:
            return [e.op.symbol, "(", e.a, ", ", e.b, ")"]
        return ["(", e.a, f" {e.op.symbol} ", e.b, ")"]
    if isinstance(e, Ternary):
        return [e.op.symbol, "(", e.a, ", ", e.b, ", ", e.c, ")"]
    if isinstance(e, Cast):
        return [f"{'sat.' if e.saturate else ''}{e.type}(", e.a, ")"]
    if isinstance(e, Load):
        stride = "" if e.stride == e.type.scalar.size else f", stride={e.stride}"
        return [e.buf.name, f".{e.type}[", e.offset, stride, "]"]
    if isinstance(e, Broadcast):
        return [f"bcast{e.lanes}(", e.a, ")"]
    if isinstance(e, Ramp):
        return ["ramp(", e.base, f", {e.stride}, {e.lanes})"]
    if isinstance(e, Shuffle):
        parts: list = ["shuffle("]
        for i, v in enumerate(e.vectors):
            parts += ([", "] if i else []) + [v]
        return parts + [f")[{','.join(map(str, e.indices))}]"]
    raise TypeError(f"cannot print {type(e).__name__}")


def _attrs(attrs: tuple) -> str:
    return "".join(f" {k}={v}" for k, v in attrs)


def print_ir(root: Node) -> PrintedIR:
    """Print a statement (or expression) and keep, for each line, the node it came from."""
    if isinstance(root, Expr):
        return PrintedIR((expr_to_text(root),), (root,))
    lines: list[str] = []
    nodes: list[Node] = []
    texts: dict[int, str] = {}  # id -> text of the expressions printed so far (they stay alive)

    def expr_to_text(e: Expr) -> str:
        return _expr_text(e, texts)

    # Work items: (indent, stmt) to print a statement, or (indent, text, node) for a fixed line.
    stack: list[tuple] = [(0, root)]
    while stack:
        item = stack.pop()
        pad = INDENT * item[0]
        if len(item) == 3:
            lines.append(pad + item[1])
            nodes.append(item[2])
            continue
        depth, s = item
        emit: list[tuple] = []  # pushed in reverse at the end so they print in order
        if isinstance(s, Seq):
            emit = [(depth, x) for x in s.stmts]
        elif isinstance(s, Let):
            emit = [(depth, f"{s.var.name}.{s.var.type} = {expr_to_text(s.value)}", s), (depth, s.body)]
        elif isinstance(s, Alloc):
            emit = [(depth, f"alloc.{s.kind.value} {s.buf.name}[{s.size}]{_attrs(s.attrs)}", s),
                    (depth, s.body)]
        elif isinstance(s, For):
            v = s.var.name
            step = f"{v}++" if s.step == 1 else f"{v} += {s.step}"
            unroll = f" [unroll {s.unroll}]" if s.unroll > 1 else ""
            head = (f"for ({v}.{s.var.type} = {expr_to_text(s.init)}; {v} < {expr_to_text(s.bound)}; "
                    f"{step}){unroll} {{")
            emit = [(depth, head, s), (depth + 1, s.body), (depth, "}", s)]
        elif isinstance(s, If):
            emit = [(depth, f"if ({expr_to_text(s.cond)}) {{", s), (depth + 1, s.then)]
            if s.else_ is not None:
                emit += [(depth, "} else {", s), (depth + 1, s.else_)]
            emit.append((depth, "}", s))
        elif isinstance(s, Group):
            emit = [(depth, f"{s.label} {{", s), (depth + 1, s.body), (depth, "}", s)]
        elif isinstance(s, Store):
            stride = "" if s.stride == s.value.type.scalar.size else f", stride={s.stride}"
            mask = "" if s.mask is None else f" if {expr_to_text(s.mask)}"
            text = (f"{s.buf.name}.{s.value.type}[{expr_to_text(s.offset)}{stride}] = "
                    f"{expr_to_text(s.value)}{mask}")
            emit = [(depth, text, s)]
        elif isinstance(s, FuncCall):
            args = ", ".join(expr_to_text(a) for a in s.args)
            emit = [(depth, f"{s.func}({args}){_attrs(s.attrs)}", s)]
        elif isinstance(s, Stmt):
            raise TypeError(f"cannot print {type(s).__name__}")
        stack.extend(reversed(emit))
    return PrintedIR(tuple(lines), tuple(nodes))


def to_text(node: Node) -> str:
    """The printed form of ``node`` as one string (no trailing newline for expressions)."""
    if isinstance(node, Expr):
        return expr_to_text(node)
    return print_ir(node).text
