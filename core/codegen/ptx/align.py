"""Alignment facts: a power of two known to divide an integer expression (addresses of 4-byte words
and ``cp.async`` need them)."""
from __future__ import annotations

from kdd.core.ir.expr import Binary, Cast, IntImm, Load, Op, Ternary, Var
from kdd.core.ir.stmt import For, Let, Store
from kdd.core.ir.visitor import walk

from .values import pow2

def slot_multiples(body, known: dict[str, int]) -> dict[tuple[str, int], int]:
    """For scalars kept in register buffers (strength-reduced induction variables), a power of two
    dividing every value stored at ``(buffer, byte)``: the greatest fixpoint over the stores,
    whose values may read the slots themselves (``p = p + 128`` in a loop)."""
    lets: dict[str, list] = {}
    stores: dict[tuple[str, int], list] = {}
    for node in walk(body):
        if isinstance(node, Let):
            lets.setdefault(node.var.name, []).append(node.value)
        elif isinstance(node, For):
            lets.setdefault(node.var.name, []).extend([node.init, IntImm.make(node.var.type, node.step)])
        elif isinstance(node, Store) and isinstance(node.offset, IntImm) and node.value.type.lanes == 1 \
                and node.value.type.is_int:
            stores.setdefault((node.buf.name, node.offset.value), []).append(node.value)
    slots_m = {k: 16 for k in stores}
    for _ in range(8):
        memo: dict[str, int] = {}

        def of(e, depth=0):
            return multiple_of(e, lambda name: var(name, depth), lambda key: slots_m.get(key, 1))

        def var(name, depth):
            if name in known:
                return known[name]
            if name not in memo:
                memo[name] = 16                     # optimistic while its own value is computed
                values = lets.get(name)
                memo[name] = min((of(v, depth + 1) for v in values), default=1) if values and depth < 64 else 1
            return memo[name]
        new = {k: min(of(v) for v in vs) for k, vs in stores.items()}
        if new == slots_m:
            break
        slots_m = new
    return slots_m


def multiple_of(e, var, slot) -> int:
    """A power of two (at most 16) known to divide integer ``e``; ``var(name)`` and ``slot((buf,
    byte))`` give what is known of variables and register-buffer scalars."""
    if isinstance(e, IntImm):
        return pow2(e.value)
    if isinstance(e, Var):
        return var(e.name)
    if isinstance(e, Load) and isinstance(e.offset, IntImm) and e.type.lanes == 1:
        return slot((e.buf.name, e.offset.value))
    if isinstance(e, Cast) and e.type.is_int:
        return multiple_of(e.a, var, slot)
    if isinstance(e, Binary):
        if e.op in (Op.ADD, Op.SUB):
            return min(multiple_of(e.a, var, slot), multiple_of(e.b, var, slot))
        if e.op is Op.MUL:
            return min(16, multiple_of(e.a, var, slot) * multiple_of(e.b, var, slot))
        if e.op is Op.SHL and isinstance(e.b, IntImm):
            return min(16, multiple_of(e.a, var, slot) << min(e.b.value, 4))
    if isinstance(e, Ternary) and e.op is Op.MAD:
        return min(multiple_of(e.a, var, slot), min(16, multiple_of(e.b, var, slot) * multiple_of(e.c, var, slot)))
    if isinstance(e, Ternary) and e.op is Op.ADD3:
        return min(multiple_of(x, var, slot) for x in (e.a, e.b, e.c))
    return 1
