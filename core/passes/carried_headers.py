"""Global message headers carried across a loop's back edge (Xe).

Strength reduction leaves an unrolled loop's global addresses as sums of a
loop-carried register: ``k_iv = k_reg[0]`` at the top of the body, the headers
``hdr = inv + k_iv``, ``hdr = inv + k_iv + 64``, ... and at the bottom
``k_reg[0] = k_iv + 192``. The code generator builds each trip's first 64-bit
address again from its 32-bit offset (the sum, then the 64-bit add) and steps
the offset register at the bottom: on oneDNN's 1x1 lines with 4 ``dpas`` a step
that is a third of the loop's integer work. oneDNN's generator keeps its
address payloads live across the loop and advances them. Here each chain of
such headers (one memory, the same terms but the carried register and the
constant) becomes one header buffer ``H`` stored before the loop with the first
trip's offset, stepped by the constants' differences inside the body
(``H = H + 64``) and once more at its bottom, to the next trip's first offset;
the messages read ``H``. The code generator steps a header stored as
``H = H + d`` in place (``sends._step``), so the first address of a trip is the
last one plus a constant, and the register it was built from is left to no one:
where every read of the carried register only feeds its own step, it goes
(with its stores) too.

The offsets after the loop (a peeled trip's ``hdr = inv + k_reg[0] + c``) are
``H`` plus a constant: ``H`` holds the next trip's first offset when the loop
ends, and such stores read it, so the carried register is not needed there
either.

A register the body writes a constant more halfway (a kh wrap's ``k_reg[0] =
k_iv + 40960`` before the trip's last steps) is read after that store as
``k_iv`` plus that constant; a header buffer whose stores have different terms
(A pixels of two rows) is in one chain per terms, its messages reading the
chain of the store before them.

Exact as ``header-steps`` (its docstring): every message reading a chain's
headers is a global load or store; the chain's stores and reads are in the
body's straight line (no branch or inner loop touches them), each read after a
store of its own header in its own run; the register is written once in the
body, a constant more than its value at the top. A step is a constant whose
64-bit add is the offset's: on Xe-HPG (carry-only high dword) only forwards
and only from offsets an unmasked message read (not negative); where 64-bit
adds sign-extend (Xe-HPC) backwards too and from masked messages' offsets (the
overflow pass leaves no 32-bit offset that wraps, so the sum is the offset in
every lane). A carried header holds 64-bit addresses for its lanes across the
loop: chains are taken, longest first, while their registers fit the free
registers (``cse.register_budget``). The IR keeps its meaning (``H`` holds
offsets; the interpreter adds the steps), so every stage checks alike.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterator, Mapping

from ..ir.expr import Binary, Broadcast, Expr, IntImm, Load, Op, Var, summands
from ..ir.funcs import Send
from ..ir.names import Names
from ..ir.node import Node
from ..ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Stmt, Store, empty
from ..ir.visitor import IRMutator, distinct_nodes, statements, substitute
from .cse import register_budget
from .header_steps import covered_headers, steppable_headers
from .let_opt import remove_unused_lets
from .options import target_of
from .reduction_nest import block_slm_messages
from .tree import ReplaceNodes, StatementReads, has_load, unshare_statements, var_names

_LIMIT = 2 ** 31


def carry_headers(ir: Node, options: Mapping[str, Any]) -> Node:
    """``ir`` with the global header chains of its loops carried across their back edges and the
    loop-carried registers only they read removed (module docstring); the same object when no loop
    has such a chain or the target is not Xe."""
    target = target_of(options)
    if target is None or target.xe is None or not isinstance(ir, Stmt):
        return ir
    headers = steppable_headers(ir, masked=target.xe.native_int64)
    if not headers:
        return ir
    grf = {n.buf.name: n.size for n in distinct_nodes(ir) if isinstance(n, Alloc) and n.kind is MemKind.GRF}
    loops = _Loops(headers, covered_headers(ir, headers), grf, Names.of(ir), target.xe.native_int64,
                   lambda: register_budget(ir, options))
    out = loops.mutate(ir)
    if not any(loops.placed.values()):
        return ir
    mems: dict[str, set[str]] = {}
    for n in distinct_nodes(out):
        off = _header_read(n)
        if off is not None:
            mems.setdefault(off.buf.name, set()).add(n.ops.mem.name)
    out = _After(loops.placed, loops.covered, mems, loops.signed).mutate(out)
    for h, size in loops.allocs:        # kernel-wide, as the headers the builder allocates
        out = Group.make(out.label, Alloc.make(h, size, MemKind.GRF, out.body), origin=out.origin) \
            if isinstance(out, Group) else Alloc.make(h, size, MemKind.GRF, out)
    carried = {key[2] for chains in loops.placed.values() for key, _, _ in chains}
    out = _initial(out, carried, {h.name for h, _ in loops.allocs})
    return remove_unused_lets(_drop_self_feeding(remove_unused_lets(out), carried))


def _linear(s: Stmt) -> Iterator[Stmt]:
    """The statements of a straight-line run in program order: lets (then their bodies), stores, calls;
    a branch or a loop inside is one opaque statement."""
    todo = [s]
    while todo:
        x = todo.pop()
        if isinstance(x, Seq):
            todo.extend(reversed(x.stmts))
        elif isinstance(x, (Alloc, Group)):
            todo.append(x.body)
        elif isinstance(x, Let):
            yield x
            todo.append(x.body)
        else:
            yield x


def _writes(s: Stmt) -> set[str]:
    """The buffers a statement (and what it nests) may write: stores' and the buffers calls name."""
    out: set[str] = set()
    for n in distinct_nodes(s):
        if isinstance(n, Store):
            out.add(n.buf.name)
        elif isinstance(n, FuncCall):
            out |= {a.name for a in n.args if isinstance(a, Var)}
    return out


def _header_read(s: Stmt) -> Load | None:
    if isinstance(s, FuncCall) and isinstance(s.func, Send) and isinstance(s.ops.mem_offset, Load):
        return s.ops.mem_offset
    return None


class _Forms:
    """Header offsets as sums: the terms bound outside the run (counted), the carried register read
    (``regs``: let name -> (register, what the body added to it before the let read it)) and the constants'
    sum."""

    def __init__(self, regs: dict[str, tuple[str, int]], lets: dict[str, Expr]):
        self.regs, self.lets = regs, lets

    def of(self, e: Expr) -> tuple[frozenset, str, int] | None:
        terms: Counter = Counter()
        carried: list[str] = []
        const = 0
        todo = [e]
        while todo:
            parts, c = summands(todo.pop())
            const += c
            for x in parts:
                if isinstance(x, Var) and x.name in self.regs:
                    carried.append(self.regs[x.name][0])
                    const += self.regs[x.name][1]
                elif isinstance(x, Var) and x.name in self.lets:
                    todo.append(self.lets[x.name])
                elif has_load(x) or var_names(x) & self.lets.keys() or var_names(x) & self.regs.keys():
                    return None
                else:
                    terms[x] += 1
        if len(carried) != 1:
            return None
        return frozenset(terms.items()), carried[0], const


class _Loops(IRMutator):
    """Each loop (inner ones first) with its chains carried: ``placed[loop variable]`` lists each
    chain's (key, header, first constant); ``allocs`` the headers' buffers."""

    def __init__(self, headers: frozenset[str], covered: frozenset[str], grf: dict[str, int], names: Names,
                 signed: bool, budget):
        self.headers, self.covered, self.grf, self.names = headers, covered, grf, names
        self.budget = budget        # () -> (register model, free bytes): the estimate, made for the first chain
        self.room = self.reg_bytes = None   # free register bytes the carried headers may take, a register's
        self.signed = signed        # 64-bit adds sign-extend a step (native 64-bit integers): steps may go back
        self.placed: dict[str, list[tuple[tuple, Var, int]]] = {}
        self.allocs: list[tuple[Var, int]] = []

    def mutate_For(self, old: For, loop: For) -> Stmt:
        body = unshare_statements(loop.body)
        run = list(_linear(body))
        steps = self._steps(run)
        if not steps:
            return loop
        lets = {s.var.name: s.value for s in run if isinstance(s, Let)}
        regs = steps[1]
        chains = self._chains(run, _Forms(regs, {k: v for k, v in lets.items() if k not in regs}), steps[0])
        kept = {}
        # the code generator's compact layout holds each SLM block message's address in a register of its
        # own (``buffering``'s ring addresses): what the register estimate leaves free must take those first
        if self.room is None:
            model, free = self.budget()
            self.room, self.reg_bytes = max(free or 0, 0), model.reg_bytes
        held = block_slm_messages(body) * self.reg_bytes
        for key, chain in sorted(chains.items(), key=lambda kc: -len(kc[1])):   # the longest save the most
            size = -(-key[1].lanes * 8 // self.reg_bytes) * self.reg_bytes      # its 64-bit addresses
            if size <= self.room - (held if key[1].lanes > 1 else 0):
                self.room -= size
                kept[key] = chain
        chains = kept
        if not chains:
            return loop
        new: dict[int, Stmt] = {}
        inits: list[Stmt] = []
        tails: list[Stmt] = []
        env: dict[Expr, Expr] = {}
        for s in run:       # the body's lets as values before the loop (a carried register read as it is)
            if isinstance(s, Let):
                if s.var.name not in regs:
                    env[s.var] = substitute(s.value, env)
                else:
                    env[s.var] = _plus(s.value.buf, s.var.type, regs[s.var.name][1]) if regs[s.var.name][1] \
                        else s.value
        placed = self.placed.setdefault(loop.var.name, [])
        holder: dict[int, Var] = {}     # id of a chain's store -> the chain's header
        for key, chain in chains.items():
            bufs = {s.buf.name for _, s, _ in chain}
            first = chain[0][1]
            h = self.names.fresh(f"{first.buf.name}_carried", first.buf.type)
            t = first.value.type
            self.allocs.append((h, max(self.grf.get(b, 64) for b in bufs)))
            inits.append(Store.make(h, first.offset, substitute(first.value, env), first.stride,
                                   origin=first.origin))
            last = chain[0][2]
            for _, s, c in chain:
                new[id(s)] = _stepped(h, s, t, c - last)
                last = c
            end = steps[0][key[2]] + chain[0][2] - last
            if end:
                tails.append(Store.make(h, first.offset, _plus(h, t, end), first.stride, origin=first.origin))
            placed.append((key, h, chain[0][2]))
            holder.update((id(s), h) for _, s, _ in chain)
        latest: dict[str, Var | None] = {}     # header -> the chain's header its last store went to
        for s in run:
            off = _header_read(s)
            if isinstance(s, Store):
                latest[s.buf.name] = holder.get(id(s))
            elif off is not None and latest.get(off.buf.name) is not None:
                new[id(s)] = s.with_ops(mem_offset=Load.make(off.type, latest[off.buf.name], off.offset))
        looped = For.make(loop.var, loop.init, loop.bound, Seq.make([ReplaceNodes(new).mutate(body), *tails]), loop.step,
                          loop.unroll, origin=loop.origin)
        return Seq.make([*inits, looped])

    def _steps(self, run: list[Stmt]) -> tuple[dict[str, int], dict[str, tuple[str, int]]] | None:
        """``({register: step}, {let: (register, offset)})`` of the registers the body writes once, a
        constant more than its value at the top (``k_reg[0] = k_iv + 192``), and of the lets reading them
        (before that store: offset 0; after it: the step)."""
        reads: dict[str, dict[str, int]] = {}
        stored: Counter = Counter()
        step: dict[str, int] = {}
        for s in run:
            if isinstance(s, Let):
                v = s.value
                r = v.buf.name if isinstance(v, Load) else None
                if r in self.grf and v.type.lanes == 1 and v.type.is_int and isinstance(v.offset, IntImm) \
                        and v.offset.value == 0 and (not stored[r] or r in step):
                    reads.setdefault(r, {})[s.var.name] = step.get(r, 0)
            elif isinstance(s, Store):
                stored[s.buf.name] += 1
                parts, c = summands(s.value)
                if s.buf.name in reads and len(parts) == 1 and isinstance(parts[0], Var) \
                        and reads[s.buf.name].get(parts[0].name) == 0 and s.mask is None \
                        and isinstance(s.offset, IntImm) and s.offset.value == 0 and 0 <= c < _LIMIT:
                    step[s.buf.name] = c
            else:
                for name in _writes(s):
                    stored[name] += 2       # a call or a nested statement writing it: not a plain step
        good = {r: c for r, c in step.items() if stored[r] == 1}
        if not good:
            return None
        return good, {n: (r, k) for r in good for n, k in reads[r].items()}

    def _chains(self, run: list[Stmt], forms: _Forms, steps: dict[str, int]) -> dict[tuple, list]:
        """Key (memory, type, terms, register) -> [(position, store, constant)] of the chains the body
        can carry: every store and read of their headers in the body's straight line, each read after a
        store of its own header, the constants not decreasing, the last one within a step of the first."""
        mem: dict[str, set[str]] = {}
        for s in distinct_nodes(Seq.make(run)):
            off = _header_read(s)
            if off is not None:
                mem.setdefault(off.buf.name, set()).add(s.ops.mem.name)
        bad: set[str] = set()
        chains: dict[tuple, list] = {}
        stored: set[str] = set()
        for i, s in enumerate(run):
            off = _header_read(s)
            if off is not None:
                if off.buf.name not in stored or not isinstance(off.offset, IntImm) or off.offset.value:
                    bad.add(off.buf.name)
            elif isinstance(s, Store) and s.buf.name in self.headers:
                stored.add(s.buf.name)
                form = forms.of(s.value) if s.mask is None and isinstance(s.offset, IntImm) \
                    and s.offset.value == 0 and len(mem.get(s.buf.name, ())) == 1 else None
                if form is not None and form[1] in steps:
                    key = (next(iter(mem[s.buf.name])), s.value.type, form[0], form[1])
                    chains.setdefault(key, []).append((i, s, form[2]))
            elif not isinstance(s, (Let, Store, FuncCall)):
                bad |= {n for n in var_names(*(x for x in distinct_nodes(s) if isinstance(x, Load)))}
                bad |= _writes(s)
        out = {}
        for key, chain in chains.items():
            if any(s.buf.name in bad or s.buf.name not in self.covered for _, s, _ in chain):
                continue
            consts = [c for _, _, c in chain]
            low = -_LIMIT if self.signed else 0
            if all(low <= b - a < _LIMIT for a, b in zip(consts, consts[1:])) \
                    and low <= steps[key[3]] + consts[0] - consts[-1] < _LIMIT:
                out[key[:2] + (key[3], key[2])] = chain
        return out


def _plus(h: Var, t, d: int) -> Expr:
    imm = IntImm.make(t.base, d)
    return Binary.make(Op.ADD, Load.make(t, h, IntImm.make(t.base, 0)),
                       imm if t.lanes == 1 else Broadcast.make(imm, t.lanes))


def _stepped(h: Var, s: Store, t, d: int, into: Var | None = None) -> Stmt:
    """``into`` (else ``h``) stored with ``h``'s offset plus ``d`` (nothing where ``h`` is stored with no step)."""
    if not d and into is None:
        return empty()
    return Store.make(h if into is None else into, s.offset, _plus(h, t, d), s.stride, origin=s.origin)


def _initial(ir: Stmt, registers: set[str], heads: set[str]) -> Stmt:
    """``ir`` with each carried header's first offset reading a register's value (``H = inv + k_reg[0]``)
    where the register's last store before it (in program order) is its initial value (a store that does
    not read the register, ``k_reg[0] = cse + 128``, whose variables are bound there): that value."""
    last: dict[str, Expr | None] = {}
    new: dict[int, Node] = {}

    todo: list = [(ir, frozenset())]
    while todo:         # program order; ("after", registers) closes a branch
        s, bound = todo.pop()
        if s == "after":
            for r in bound:
                last[r] = None
        elif isinstance(s, Seq):
            todo.extend((x, bound) for x in reversed(s.stmts))
        elif isinstance(s, (Let, For, Alloc)):
            todo.append((s.body, bound | {(s.buf if isinstance(s, Alloc) else s.var).name}))
        elif isinstance(s, Group):
            todo.append((s.body, bound))
        elif isinstance(s, If):
            todo.append(("after", frozenset(registers & _writes(s))))
            if s.else_ is not None:
                todo.append((s.else_, bound))
            todo.append((s.then, bound))
        elif isinstance(s, Store):
            if s.buf.name in heads:
                mapping = {v: last[r] for v in distinct_nodes(s.value) if isinstance(v, Load)
                           and (r := v.buf.name) in registers and last.get(r) is not None
                           and isinstance(v.offset, IntImm) and v.offset.value == 0
                           and var_names(last[r]) <= bound}
                if mapping:
                    new[id(s)] = Store.make(s.buf, s.offset, substitute(s.value, mapping), s.stride, s.mask,
                                            origin=s.origin)
            if s.buf.name in registers:
                reads = var_names(s.value) | var_names(s.offset)
                last[s.buf.name] = s.value if s.buf.name not in reads and not has_load(s.value) \
                    and isinstance(s.offset, IntImm) and s.offset.value == 0 and s.mask is None else None
        else:
            for r in registers & _writes(s):
                last[r] = None
    return ReplaceNodes(new).mutate(ir) if new else ir


def _drop_self_feeding(ir: Stmt, registers: set[str]) -> Stmt:
    """``ir`` without those of ``registers`` whose every read is a let read only by the register's own
    stores (a counter that only counts itself), with those stores and lets."""
    reads = StatementReads()
    lets: dict[str, set[str]] = {r: set() for r in registers}
    other: set[str] = set()
    readers: dict[str, list[Stmt]] = {}
    for s in statements(ir):
        if isinstance(s, Let) and isinstance(s.value, Load) and s.value.buf.name in registers \
                and not var_names(s.value.offset) & registers:
            lets[s.value.buf.name].add(s.var.name)
            continue
        names = var_names(*(e for e in (s.offset, s.value, s.mask) if e is not None)) \
            if isinstance(s, Store) else reads(s)     # a store names its buffer: no read of it
        other |= names & registers
        for n in names:
            readers.setdefault(n, []).append(s)
    dead = set()
    for r in registers - other:
        if all(isinstance(x, Store) and x.buf.name == r for v in lets[r] for x in readers.get(v, ())):
            dead.add(r)
    if not dead:
        return ir
    return _DropRegister(dead, {v for r in dead for v in lets[r]}).mutate(ir)


class _DropRegister(IRMutator):
    def __init__(self, dead: set[str], lets: set[str]):
        self.dead, self.lets = dead, lets

    def mutate_Store(self, old: Store, new: Store):
        return empty() if old.buf.name in self.dead else new

    def mutate_Alloc(self, old: Alloc, new: Alloc):
        return new.body if old.buf.name in self.dead else new

    def mutate_Let(self, old: Let, new: Let):
        return new.body if old.var.name in self.lets else new


class _After(IRMutator):
    """The code after each carried loop, in program order: a header store of a chain's form, the
    register read as the loop left it (``hdr = inv + k_reg[0] + c``), stepped from the chain's header,
    which holds the next trip's first offset (``hdr = H + (c - c0)``; where ``c`` is ``c0`` the
    messages read ``H`` until the header is stored again). What follows holds until a loop or a branch
    begins or ends, or the register is written."""

    memoize = False

    def __init__(self, placed: dict[str, list[tuple[tuple, Var, int]]], covered: frozenset[str],
                 mems: dict[str, set[str]], signed: bool):
        self.placed, self.covered, self.mems, self.signed = placed, covered, mems, signed
        self.chains: dict[tuple, tuple[Var, int]] = {}
        self.regs: dict[str, tuple[str, int]] = {}
        self.lets: dict[str, Expr] = {}
        self.alias: dict[str, Var] = {}

    def _reset(self, chains=None) -> None:
        self.chains = chains or {}
        self.regs, self.lets, self.alias = {}, {}, {}

    def pre_For(self, s: For) -> None:
        self._reset()

    def mutate_For(self, old: For, new: For) -> Stmt:
        self._reset({key: (h, c0) for key, h, c0 in self.placed.get(old.var.name, ())})
        return new

    def pre_If(self, s) -> None:
        self._reset()

    def mutate_If(self, old, new) -> Stmt:
        self._reset()
        return new

    def pre_Let(self, s: Let) -> None:
        if not self.chains:
            return
        v = s.value
        registers = {key[2] for key in self.chains}
        if isinstance(v, Load) and v.buf.name in registers and isinstance(v.offset, IntImm) \
                and v.offset.value == 0 and v.type.lanes == 1:
            self.regs[s.var.name] = (v.buf.name, 0)
        else:
            self.lets[s.var.name] = v

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall) -> Stmt:
        self._written(old)
        off = _header_read(new)
        if off is not None and off.buf.name in self.alias:
            return new.with_ops(mem_offset=Load.make(off.type, self.alias[off.buf.name], off.offset))
        return new

    def _written(self, s: Stmt) -> None:
        names = _writes(s)
        if any(key[2] in names for key in self.chains):
            self._reset()

    def mutate_Store(self, old: Store, new: Store) -> Stmt:
        self._written(old)
        name = new.buf.name
        self.alias.pop(name, None)
        if not self.chains or name not in self.covered or new.mask is not None \
                or not isinstance(new.offset, IntImm) or new.offset.value:
            return new
        form = _Forms(self.regs, self.lets).of(new.value)
        mems = self.mems.get(name, set())
        hit = None if form is None or len(mems) != 1 else \
            self.chains.get((next(iter(mems)), new.value.type, form[1], form[0]))
        if hit is None or not (-_LIMIT if self.signed else 0) <= form[2] - hit[1] < _LIMIT:
            return new
        if form[2] == hit[1]:       # the chain's header holds it: its messages read that one
            self.alias[name] = hit[0]
            return empty()
        return _stepped(hit[0], new, new.value.type, form[2] - hit[1], into=new.buf)
