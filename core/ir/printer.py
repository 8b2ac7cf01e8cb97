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
from .node import SMALL_TREE, Node
from .stmt import Alloc, For, FuncCall, Group, If, Let, Seq, Store
from .types import s32

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


def expr_to_text(e: Expr) -> str:
    """One expression, fully parenthesised."""
    return _expr_text(e, {})


def _expr_text(e: Expr, memo: dict) -> str:
    """``expr_to_text`` sharing ``memo`` (id -> text) with other calls of one print.

    Subtrees of at most ``SMALL_TREE`` nodes are printed by recursion (``_small_text``), once
    per object and print: the memo keeps their texts, and bigger expressions are taken apart
    through an explicit stack down to such subtrees, so any depth prints.
    """
    if e._size <= SMALL_TREE:
        key = id(e)
        text = memo.get(key)
        if text is None:
            text = memo[key] = _small_text(e)
        return text
    out: list[str] = []
    stack: list[object] = [e]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            out.append(item)
        elif item._size <= SMALL_TREE:
            out.append(_expr_text(item, memo))
        else:
            stack.extend(reversed(_expr_tokens(item)))
    return "".join(out)


def _small_text(e: Expr) -> str:
    """The text of a small expression, by recursion. A shared sub-expression inside it is
    printed at each occurrence: the text holds it at each, so the work stays in proportion."""
    cls = e.__class__
    if cls is Binary:  # the common case, written out, with leaf operands inline
        op, a, b = e.op, e.a, e.b
        k = a.__class__
        ta = a.name if k is Var else str(a.value) if k is IntImm and a.type is s32 and a.value >= 0 \
            else _small_text(a)
        k = b.__class__
        tb = b.name if k is Var else str(b.value) if k is IntImm and b.type is s32 and b.value >= 0 \
            else _small_text(b)
        return f"{op.symbol}({ta}, {tb})" if op.is_call_form else f"({ta} {op.symbol} {tb})"
    if cls is Var:
        return e.name
    return "".join(x if x.__class__ is str else _small_text(x) for x in _expr_tokens(e))


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


def print_ir(root: Node, texts: dict[int, str] | None = None) -> PrintedIR:
    """Print a statement (or expression) and keep, for each line, the node it came from.

    ``texts`` (id -> text) may be shared by the prints of trees that share subtrees and all stay
    alive meanwhile (a pass trace): an expression object is then printed once for all of them, and
    so is a statement's own line (its first: the IR after a pass is mostly the statements of the IR
    before it).
    """
    if isinstance(root, Expr):
        return PrintedIR((expr_to_text(root),), (root,))
    lines: list[str] = []
    nodes: list[Node] = []
    texts = {} if texts is None else texts  # id -> text of the expressions and statements printed so far (alive)

    def expr_to_text(e: Expr) -> str:
        return _expr_text(e, texts)

    # Work items: (indent, stmt) to print a statement, or (indent, text, node) for a fixed line
    # (a closing brace). A statement's own first line is printed when it is taken off the stack.
    stack: list[tuple] = [(0, root)]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        depth = item[0]
        if len(item) == 3:
            lines.append(INDENT * depth + item[1])
            nodes.append(item[2])
            continue
        s = item[1]
        cls = s.__class__
        if cls is Seq:
            stack.extend([(depth, x) for x in reversed(s.stmts)])
            continue
        text = texts.get(id(s))
        if text is None:
            text = texts[id(s)] = _own_line(s, expr_to_text)
        lines.append(INDENT * depth + text)
        nodes.append(s)
        # what follows the statement's own line, pushed in reverse print order
        if cls is Let or cls is Alloc:
            push((depth, s.body))
        elif cls is For or cls is Group:
            push((depth, "}", s))
            push((depth + 1, s.body))
        elif cls is If:
            push((depth, "}", s))
            if s.else_ is not None:
                push((depth + 1, s.else_))
                push((depth, "} else {", s))
            push((depth + 1, s.then))
    return PrintedIR(tuple(lines), tuple(nodes))


def _own_line(s: Node, expr_to_text) -> str:
    """The first line a statement prints (without its indentation), its expressions by ``expr_to_text``."""
    cls = s.__class__
    if cls is Let:
        return f"{s.var.name}.{s.var.type} = {expr_to_text(s.value)}"
    if cls is Store:
        stride = "" if s.stride == s.value.type.scalar.size else f", stride={s.stride}"
        mask = "" if s.mask is None else f" if {expr_to_text(s.mask)}"
        return (f"{s.buf.name}.{s.value.type}[{expr_to_text(s.offset)}{stride}] = "
                f"{expr_to_text(s.value)}{mask}")
    if cls is Alloc:
        return f"alloc.{s.kind.value} {s.buf.name}[{s.size}]{_attrs(s.attrs)}"
    if cls is For:
        v = s.var.name
        step = f"{v}++" if s.step == 1 else f"{v} += {s.step}"
        unroll = f" [unroll {s.unroll}]" if s.unroll > 1 else ""
        return (f"for ({v}.{s.var.type} = {expr_to_text(s.init)}; {v} < {expr_to_text(s.bound)}; "
                f"{step}){unroll} {{")
    if cls is If:
        return f"if ({expr_to_text(s.cond)}) {{"
    if cls is Group:
        return f"{s.label} {{"
    if cls is FuncCall:
        args = ", ".join(expr_to_text(a) for a in s.args)
        if getattr(s.func, "NAMED", False):  # many operands of one type: each printed with its name
            args = ", ".join(f"{n}={expr_to_text(a)}" for n, a in zip(s.func.OPERANDS, s.args))
        return f"{s.func}({args}){_attrs(s.attrs)}"
    raise TypeError(f"cannot print {cls.__name__}")


def to_text(node: Node, texts: dict[int, str] | None = None) -> str:
    """The printed form of ``node`` as one string (no trailing newline for expressions); ``texts`` as
    for :func:`print_ir`."""
    if isinstance(node, Expr):
        return expr_to_text(node)
    return print_ir(node, texts).text
