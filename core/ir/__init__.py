"""The kernel IR: immutable expression and statement trees, after Halide and oneDNN's GPU IR.

See ``node.py`` for the structural hashing/equality contract, ``visitor.py``
for traversal and rewriting, ``printer.py`` for the text form and line map,
``eval.py`` for exact expression semantics and ``simplify`` for the simplifier.
"""
from .eval import EvalError, evaluate
from .expr import (Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Op, Ramp,
                   Shuffle, Ternary, Unary, Var, as_expr, binary, common_type, const, div_up, iif,
                   land, max_, min_, ternary, unary, var, wrap_int)
from .funcs import (Barrier, BarrierSignal, BarrierWait, Dp4a, Dpas, Eltwise, Fence, Func, Mad,
                    Mma, Reduce, Reorder, Send, SendKind, SendOp)
from .node import Node
from .printer import PrintedIR, expr_to_text, print_ir, to_text
from .stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Stmt, Store, empty, seq
from .types import Scalar, Type
from .visitor import IRMutator, IRVisitor, count_nodes, free_vars, substitute, walk

__all__ = [name for name in dir() if not name.startswith("_")]
