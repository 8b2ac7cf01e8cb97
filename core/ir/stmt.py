"""IR statements: let, for, if, alloc, store, function calls, sequences and labelled groups."""
from __future__ import annotations

from enum import Enum
from typing import Any, Iterable

from .expr import BoolImm, Expr, ExprLike, IntImm, Var, as_expr
from .node import Node



class Stmt(Node):
    """Base class of statements."""

    __slots__ = ()

    @staticmethod
    def _stmts_of(s: "Stmt") -> tuple["Stmt", ...]:
        """The statements among ``s``'s children, in field order (what statement walks descend into):
        a class whose children are all expressions has none; the others say which they are."""
        return ()


class Let(Stmt):
    """Binds ``var`` to ``value`` in ``body``."""

    __slots__ = ("var", "value", "body")
    FIELDS = (("var", "node"), ("value", "node"), ("body", "node"))

    @staticmethod
    def _stmts_of(s: "Let") -> tuple[Stmt, ...]:
        return (s.body,)

    @classmethod
    def make(cls, var: Var, value: ExprLike, body: Stmt, origin=None) -> "Let":
        if not isinstance(var, Var):
            raise TypeError(f"let binds a variable, got {var!r}")
        value = as_expr(value, var.type)
        if value.type != var.type:
            raise TypeError(f"let {var.name}.{var.type} = value of type {value.type}")
        return cls(var, value, _stmt(body), origin=origin)


class For(Stmt):
    """``for (var = init; var < bound; var += step) body``; ``unroll`` > 1 asks for unrolling."""

    __slots__ = ("var", "init", "bound", "body", "step", "unroll")
    FIELDS = (("var", "node"), ("init", "node"), ("bound", "node"), ("body", "node"),
              ("step", "attr"), ("unroll", "attr"))

    @staticmethod
    def _stmts_of(s: "For") -> tuple[Stmt, ...]:
        return (s.body,)

    @classmethod
    def make(cls, var: Var, init: ExprLike, bound: ExprLike, body: Stmt, step: int = 1,
             unroll: int = 1, origin=None) -> "For":
        if not var.type.is_int:
            raise TypeError(f"loop variable {var.name} must be an integer, got {var.type}")
        if step < 1 or unroll < 1:
            raise ValueError("loop step and unroll must be >= 1")
        return cls(var, as_expr(init, var.type), as_expr(bound, var.type), _stmt(body),
                   int(step), int(unroll), origin=origin)


def trip_count(loop: For) -> int | None:
    """Iterations of ``loop`` when its bounds are constants, else None."""
    if isinstance(loop.init, IntImm) and isinstance(loop.bound, IntImm):
        span = loop.bound.value - loop.init.value
        return max(0, -(-span // loop.step))
    return None


class If(Stmt):
    __slots__ = ("cond", "then", "else_")
    FIELDS = (("cond", "node"), ("then", "node"), ("else_", "opt"))

    @staticmethod
    def _stmts_of(s: "If") -> tuple[Stmt, ...]:
        return (s.then,) if s.else_ is None else (s.then, s.else_)

    @classmethod
    def make(cls, cond: ExprLike, then: Stmt, else_: Stmt | None = None, origin=None) -> "If":
        cond = as_expr(cond)
        if not cond.type.is_bool:
            raise TypeError(f"if condition must be bool, got {cond.type}")
        return cls(cond, _stmt(then), None if else_ is None else _stmt(else_), origin=origin)


class MemKind(Enum):
    """Where a buffer lives: registers of a SIMD thread, shared local memory, global memory."""

    GRF = "grf"
    SLM = "slm"
    GLOBAL = "global"


class Alloc(Stmt):
    """Allocates ``size`` bytes named ``buf`` in ``kind`` memory for the scope of ``body``.

    ``attrs`` carries placement data (e.g. ``("lanes", NestedLayout)`` on ``sm_90``).
    """

    __slots__ = ("buf", "size", "kind", "body", "attrs")
    FIELDS = (("buf", "node"), ("size", "attr"), ("kind", "attr"), ("body", "node"),
              ("attrs", "attr"))

    @staticmethod
    def _stmts_of(s: "Alloc") -> tuple[Stmt, ...]:
        return (s.body,)

    @classmethod
    def make(cls, buf: Var, size: int, kind: MemKind, body: Stmt, attrs: tuple = (),
             origin=None) -> "Alloc":
        if size < 0:
            raise ValueError(f"alloc {buf.name}: negative size {size}")
        return cls(buf, int(size), MemKind(kind), _stmt(body), tuple(attrs), origin=origin)


class Store(Stmt):
    """Writes ``value`` to buffer ``buf`` at byte ``offset``; lanes ``stride`` bytes apart.

    Lanes whose ``mask`` is false are not written (``mask`` None = all lanes).
    """

    __slots__ = ("buf", "offset", "value", "stride", "mask")
    FIELDS = (("buf", "node"), ("offset", "node"), ("value", "node"), ("stride", "attr"),
              ("mask", "opt"))

    @classmethod
    def make(cls, buf: Var, offset: ExprLike, value: Expr, stride: int | None = None,
             mask: Expr | None = None, origin=None) -> "Store":
        if not isinstance(buf, Var):
            raise TypeError(f"store needs a buffer variable, got {buf!r}")
        off = as_expr(offset)
        if mask is not None and not mask.type.is_bool:
            raise TypeError(f"store mask must be bool, got {mask.type}")
        stride = value.type.scalar.size if stride is None else int(stride)
        return cls(buf, off, value, stride, mask, origin=origin)


class FuncCall(Stmt):
    """A call of an IR function (``funcs.py``: send, dpas, barrier, ...) with arguments.

    ``args`` are positional in the function's ``OPERANDS`` order; read them by
    name through ``ops`` and replace them with ``with_ops``. ``attrs`` is a tuple of ``(name, value)`` pairs with per-call details.
    """

    __slots__ = ("func", "args", "attrs")
    FIELDS = (("func", "attr"), ("args", "nodes"), ("attrs", "attr"))

    @classmethod
    def make(cls, func: Any, args: Iterable[ExprLike] = (), attrs: tuple = (), origin=None) -> "FuncCall":
        args = tuple(as_expr(a) for a in args)
        check = getattr(func, "check_args", None)
        if check is not None:
            check(args)
        return cls(func, args, tuple(attrs), origin=origin)

    @property
    def ops(self):
        """The arguments by name (the function's ``Operands``: ``call.ops.mem_offset``)."""
        return self.func.operands(self.args)

    def with_ops(self, func: Any = None, attrs: tuple | None = None, **changes: ExprLike) -> "FuncCall":
        """This call with the named operands (and optionally the function or attrs) replaced;
        the same object when nothing changes."""
        func = self.func if func is None else func
        attrs = self.attrs if attrs is None else tuple(attrs)
        ops = self.ops
        args = ops._replace(**changes) if changes else ops
        if func == self.func and attrs == self.attrs and all(a is b for a, b in zip(args, ops)):
            return self
        return FuncCall.make(func, args, attrs, origin=self.origin)


class Seq(Stmt):
    """Statements executed in order; nested sequences are flattened on construction."""

    __slots__ = ("stmts",)
    FIELDS = (("stmts", "nodes"),)

    @staticmethod
    def _stmts_of(s: "Seq") -> tuple[Stmt, ...]:
        return s.stmts

    @classmethod
    def make(cls, stmts: Iterable[Stmt], origin=None) -> "Seq":
        flat: list[Stmt] = []
        for s in stmts:
            if s is None:
                continue
            if isinstance(s, Seq):
                flat.extend(s.stmts)
            else:
                flat.append(_stmt(s))
        return cls(tuple(flat), origin=origin)


class Group(Stmt):
    """A labelled block (``kernel {``, ``compute_loop {``, ``c_store {``) with no semantics of its own."""

    __slots__ = ("label", "body")
    FIELDS = (("label", "attr"), ("body", "node"))

    @staticmethod
    def _stmts_of(s: "Group") -> tuple[Stmt, ...]:
        return (s.body,)

    @classmethod
    def make(cls, label: str, body: Stmt, origin=None) -> "Group":
        return cls(str(label), _stmt(body), origin=origin)


def _stmt(s: Any) -> Stmt:
    if not isinstance(s, Stmt):
        raise TypeError(f"expected a statement, got {s!r}")
    return s


def seq(*stmts: Stmt) -> Stmt:
    """A sequence, or the statement itself when there is only one."""
    s = Seq.make(stmts)
    return s.stmts[0] if len(s.stmts) == 1 else s


def empty() -> Stmt:
    return Seq.make(())


TRUE = BoolImm.make(True)
