"""The dispatcher's variables of a portBLAS GEMM, bound from a kdd problem.

portBLAS is column-major (``make_matrix_view<col_major>``): A is M x K with M contiguous unless
``_t_a`` (then K x M, K contiguous), B is K x N (N x K with ``_t_b``), C is M x N with M contiguous.
kdd's layout tags name a tensor's dims outermost first, A's dims being ``b.. m k``: a column-major A
is ``ba``, a transposed one ``ab``; C is always ``ba``. A strided batch (``_stridea``) puts the batch
dims outermost (``acb``); an interleaved one innermost (``cba``: every element's batch copies
adjacent, portBLAS's HWN). ``is_beta_zero`` is bound from the post-ops: ``C = alpha * A B + beta * C``
is ``scale:alpha`` then ``sum:beta``, and no ``sum`` means beta is 0. The symmetric flags ``s_a`` and
``s_b`` (SYMM) are false for a GEMM.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.problem.post_ops import Scale, Sum

OPERAND_TENSORS = (("A", "src", "m", "k"), ("B", "wei", "k", "n"), ("C", "dst", "m", "n"))


@dataclass(frozen=True)
class Binding:
    """``values``: the dispatcher variables and what else portBLAS reads from the call (``batch_type``,
    ``alpha``, ``beta``, ``batch_size``); ``why``: per variable, where it came from; ``errors``: per
    variable, why the problem cannot be a portBLAS call."""

    values: dict
    why: dict
    errors: dict


def _order(tag: str, dims: list[str]) -> list[str] | None:
    """The dims of a plain tag, outermost first (``acb`` over ``b0 m k``), or None for another tag."""
    letters = [chr(ord("a") + i) for i in range(len(dims))]
    if sorted(tag) != letters:
        return None
    return [dims[ord(c) - ord("a")] for c in tag]


def _plain(nbatch: int, transposed: bool) -> str:
    """The tag of a strided-batch column-major operand (``transposed``: row-major) over ``nbatch`` batch dims."""
    return portblas_tags(nbatch, transposed, transposed, False)["src"]


def bind_problem(problem) -> Binding:
    """Bind ``_t_a``, ``_t_b``, ``s_a``, ``s_b``, ``is_beta_zero`` and the batch type from ``problem``."""
    gd = problem.gemm_dims()
    batch = [name for name, _ in gd.b]
    values = {"s_a": False, "s_b": False, "batch_size": 1}
    why = {"s_a": "a GEMM (not SYMM)", "s_b": "a GEMM (not SYMM)"}
    errors: dict[str, str] = {}
    for _, size in gd.b:
        values["batch_size"] *= size
    kinds = set()
    for operand, tensor, row, col in OPERAND_TENSORS:
        tag = problem.tags[tensor]
        dims = [*batch, row, col]
        order = _order(tag, dims)
        var = {"A": "_t_a", "B": "_t_b", "C": "C"}[operand]
        if order is None:
            errors[var] = (f"{tensor} = '{tag}' is not a portBLAS layout: portBLAS's {operand} is a plain "
                           f"column-major matrix ({tensor} = '{_plain(len(batch), False)}'"
                           + (f", or '{_plain(len(batch), True)}' transposed" if operand != "C" else "") + ")")
            continue
        inner = [d for d in order if d not in batch]
        outer_batch = order[:len(batch)] == batch
        inner_batch = order[len(order) - len(batch):] == batch
        if batch and not (outer_batch or inner_batch):
            errors[var] = (f"{tensor} = '{tag}' interleaves the batch dims with {row}/{col}: portBLAS batches "
                           f"are strided (batch outermost) or interleaved (batch innermost)")
            continue
        if batch:
            kinds.add("strided" if outer_batch else "interleaved")
        transposed = inner == [row, col]       # the column index innermost: row-major, portBLAS's transposed
        if operand == "C":
            if transposed:
                errors[var] = (f"dst = '{tag}' is row-major: portBLAS writes C column-major "
                               f"(M contiguous: dst = '{_plain(len(batch), False)}')")
            continue
        values[var] = transposed
        why[var] = f"{tensor} = '{tag}': {operand} " + (
            f"stored {col} x {row} column-major ({col} contiguous), transposed" if transposed else
            f"column-major ({row} contiguous)")
    if len(kinds) > 1:
        errors["batch_type"] = "the tensors mix strided and interleaved batches; portBLAS's call has one batch type"
    values["batch_type"] = kinds.pop() if len(kinds) == 1 else "strided"
    why["batch_type"] = ("no batch dims" if not batch else
                         f"batch dims {'outermost' if values['batch_type'] == 'strided' else 'innermost'}")
    alpha = [p.value for p in problem.post_ops if isinstance(p, Scale)]
    beta = [p.scale for p in problem.post_ops if isinstance(p, Sum)]
    values["alpha"] = alpha[0] if alpha else 1.0
    values["beta"] = beta[0] if beta else 0.0
    values["is_beta_zero"] = not beta or beta[0] == 0
    why["is_beta_zero"] = (f"post-op sum:{beta[0]:g}: beta = {beta[0]:g}" if beta else
                           "no sum post-op: beta = 0, C is not read")
    return Binding(values, why, errors)


def portblas_tags(nbatch: int, trans_a: bool, trans_b: bool, interleaved: bool) -> dict[str, str]:
    """The kdd tags of a portBLAS call's A, B and C (see the module doc): the inverse of the binding."""
    def tag(transposed: bool) -> str:
        batch = "".join(chr(ord("a") + i) for i in range(nbatch))
        row, col = chr(ord("a") + nbatch), chr(ord("a") + nbatch + 1)
        inner = row + col if transposed else col + row
        return inner + batch if interleaved else batch + inner
    return {"src": tag(trans_a), "wei": tag(trans_b), "dst": tag(False)}
