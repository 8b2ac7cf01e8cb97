"""The Xe allocator's walk: which registers a kernel holds at every program point, without emitting code.

:class:`AllocationWalk` makes every allocation decision of the code
generator: the payload registers a thread starts with (``abi``: r0, the
kernel arguments, the local ids read once, a dword per thread id the body
reads), a register range for each ``grf`` buffer when its live segment
starts (message headers sized by their addresses, dpas operands on their
banks), a (sub-)register for each let and loop variable and the bound of a
loop that is not a constant, and the release of each after its last point
(``liveness``). :class:`~.lower.XeLowering` is this walk plus the
instructions; :func:`allocation_peak` is the walk alone, the IR register
model of Xe (``kdd.core.passes.registers``): the same intervals, packing and
reserve, less only the temporaries an instruction takes for itself.
"""
from __future__ import annotations

from collections import Counter, deque
from typing import Iterator

from kdd.core.ir.expr import Binary, FloatImm, IntImm, Load, Op, Var, summands
from kdd.core.ir.funcs import Send
from kdd.core.ir.stmt import For, Let, Store
from kdd.core.ir.visitor import walk as walk_nodes

from ..errors import OutOfRegisters
from . import sends
from .abi import THREAD_IDS, payload
from .liveness import Liveness, analyze, events
from .operand import elem_size
from .regalloc import Allocation, NoRoom, RegisterFile

CATEGORY = {"acc": "C accumulators", "a": "A/B operands", "b": "A/B operands", "header": "headers",
            "reorder": "A/B operands"}
# A send reads its header after it issues, so a value written into the registers of a header a send
# just read waits for that read (a write-after-read dependency on the message's source). The
# registers of the last HEADER_ROTATION headers released are taken last: headers rotate among a few
# registers and consecutive sends do not wait on each other's header (where the kernel fits so).
HEADER_ROTATION = 2


class AllocationWalk:
    """Register allocation of ``body`` over ``nregs`` GRFs of ``target`` for a kernel with arguments
    ``arg_names`` (ABI order) at SIMD width ``simd``; lets named in ``remat`` get no register; the
    registers of the last ``rotation`` headers released are taken last; ``compact``: the lets SIMD1 SLM
    messages read as their headers at dword 0 of a register (``liveness._header_lets``), the counters'
    buffers in sub-registers (``liveness`` ``extent``); ``linger``: a global message's one-register header
    is kept until the next header of its memory is written (:meth:`retire`)."""

    def __init__(self, body, target, arg_names, simd: int, nregs: int, remat: frozenset = frozenset(),
                 rotation: int = HEADER_ROTATION, compact: bool = False, linger: bool = False,
                 facts: BodyFacts | None = None):
        self.body, self.target, self.xe = body, target, target.xe
        self.linger = linger
        self.rb = target.registers.reg_bytes
        self.simd = simd
        self.regs = RegisterFile(nregs, self.rb, self.xe.grf_banks)
        self.arg_names = tuple(arg_names)
        facts = facts or BodyFacts(body, target, self.arg_names)
        self.remat = remat = remat | facts.recomputed
        self.payload = payload(list(self.arg_names), simd, self.rb)
        self.live = facts.liveness(remat, compact)
        self.keys: dict = {}                  # liveness key -> Allocation
        self.bufs: dict[str, Allocation] = {}  # grf buffer name -> its live Allocation
        self.bounds: list[Allocation | None] = []  # the registers of the open loops' bounds
        self.cooling: deque[Allocation] = deque(maxlen=rotation)  # the headers released last
        self.roomy = rotation > 0     # the first allocation with_remat tries (see there)
        self.barrier_header: Allocation | None = None   # the barrier message's header, for the whole kernel
        self.block2d_headers: list[Allocation] = []     # the 2D block loads' headers, for the whole kernel
        self.lingering: dict = {}     # memory -> the global header kept past its message (retire)
        self.homes: dict[str, tuple] = {}   # global header buffer -> the bytes it had (_home)
        self.home_regs: frozenset[int] = frozenset()   # their registers
        self.last_address: Allocation | None = None   # the header buffer the last message read

    # -- hooks the code generator overrides --------------------------------------------------
    def no_room(self, nbytes: int, label: str) -> Exception:
        """The exception raised when ``nbytes`` for ``label`` do not fit; its ``live`` lists what holds
        registers there (each with a ``label`` and a ``category``), as ``OutOfRegisters`` does."""
        exc = NoRoom(f"{nbytes} bytes for {label}")
        exc.live = list(self.regs.live.values())
        exc.compacted = bool(self.live.heads or self.live.extent)
        return exc

    def take_over(self, name, size, category, knob, x, p) -> Allocation | None:
        """A buffer's registers when no free range holds it (None: there are none)."""
        return None

    # -- decisions ---------------------------------------------------------------------------
    def alloc(self, nbytes: int, label: str, category: str, knob=None, whole=False, bank=None) -> Allocation:
        """Whole registers for ``whole`` values and values over half a register, else a sub-register."""
        avoid = self.cooling_regs()
        try:
            if whole or nbytes > self.rb // 2:
                return self.regs.alloc_regs(nbytes, label, category, knob, bank, avoid=avoid)
            return self.regs.alloc_sub(nbytes, label, category, knob, avoid=avoid)
        except NoRoom:
            raise self.no_room(nbytes, label) from None

    def cooling_regs(self) -> frozenset[int]:
        """The registers of the headers released last (``HEADER_ROTATION``), which sends may still be
        reading, and (``linger``) those global header buffers go back to (:meth:`_home`): taken last."""
        rb = self.rb
        out = frozenset(r for h in self.cooling for r in range(h.start // rb, (h.end - 1) // rb + 1))
        return out | self.home_regs if self.linger else out

    def reserve_payload(self) -> list[Allocation]:
        """Reserves r0, the local ids, the kernel arguments and, in a kernel that signals a barrier, the
        barrier's header (in one with 2D block loads, theirs); returns the local ids' registers, read once
        (into the thread ids, :meth:`alloc_thread_ids`) and then released (:meth:`release`)."""
        r = self.regs
        local_ids = []
        for f in self.payload:
            if f.name == "r0":
                r.reserve(0, 1, "r0 (thread header)")
            elif f.name.startswith("local_id"):
                local_ids.append(r.reserve(f.byte // self.rb, f.size // self.rb, f.name))
        args_end = max((f.byte + 8 for f in self.payload if f.name in self.arg_names), default=self.rb)
        if self.arg_names:
            r.reserve(1, -(-(args_end - self.rb) // self.rb), "kernel arguments")
        if self.live.signals and self.roomy:
            # built once, read by every barrier (oneDNN's signal header); in the roomy allocation only
            # (with_remat), else built at each barrier in a temporary
            self.barrier_header = r.alloc_regs(self.rb, "barrier header", "reserved")
        if self.live.block2d and self.roomy:
            # two registers the 2D block loads take in turn, only the fields that change rewritten
            # (sends.lower_send2d); in turn, so that a message's address is not rewritten while the one
            # before it may still be reading it (HEADER_ROTATION)
            self.block2d_headers = [r.alloc_regs(self.rb, "2D block headers", "reserved") for _ in range(2)]
        return local_ids

    def alloc_thread_ids(self) -> Iterator[tuple[int, str, Allocation]]:
        """A dword for each thread id the body reads: ``(dimension, name, register)``, each allocated when
        the previous one has been handled (its value computed)."""
        for d, name in enumerate(THREAD_IDS):
            if name in self.live.free:
                yield d, name, self.alloc(4, name, "reserved")

    def buffer_request(self, name: str) -> tuple[int, str, int | None, str | None]:
        """``(bytes, category, preferred bank, knob)`` of grf buffer ``name``: a scattered message's header
        holds its addresses (``sends.payload_bytes``); dpas operands prefer different banks."""
        roles = self.live.roles.get(name, set())
        node = self.live.allocs[name]
        size = node.size
        hdr = self.live.headers.get(name)
        if hdr is not None and hdr[2] == "scattered":
            size = sends.payload_bytes(self, size // 4, 8 if hdr[0] == "global" else 4)
        category = next((CATEGORY[r] for r in ("acc", "a", "b", "header", "reorder") if r in roles), None)
        if category is None:
            category = "SLM load buffers" if {"load_global", "store_slm"} <= roles else "buffers"
        bank = 0 if "a" in roles else 1 if "b" in roles else None
        return size, category, bank, getattr(node.origin, "knob", None)

    def alloc_buffer(self, key, x, p) -> None:
        name = key[1]
        size, category, bank, knob = self.buffer_request(name)
        small = self.live.extent.get(name)
        home = self._home(name, size)
        try:
            if home is not None:
                a = self.regs.place(home, size, name, category, knob)
            elif small is not None and small <= self.rb // 2:   # a counter's register: only its first bytes are used
                a = self.regs.alloc_sub(small, name, category, knob, avoid=self.cooling_regs())
            else:
                a = self.regs.alloc_regs(size, name, category, knob, bank, avoid=self.cooling_regs())
        except NoRoom:
            a = self.take_over(name, size, category, knob, x, p)
            if a is None:
                raise self.no_room(size, name) from None
        self.keys[key] = a
        self.bufs[name] = a
        if self.linger and self.live.headers.get(name, ("",))[0] == "global":
            self.homes[name] = (a.start, a.end)
            rb = self.rb
            self.home_regs = frozenset(r for lo, hi in self.homes.values() for r in range(lo // rb, (hi - 1) // rb + 1))

    def _home(self, name: str, size: int) -> int | None:
        """Where a global message's header buffer written again goes: the registers it had, where they are
        free (it may still hold the address the new one advances, ``addresses``), in the attempt that keeps
        headers (``linger``)."""
        start = self.homes.get(name, (None,))[0]
        if start is None:
            return None
        rb, full = self.rb, (1 << self.rb) - 1
        regs = range(start // rb, (start + max(size, 1) - 1) // rb + 1)
        last = self.last_address    # the last message's address: rewritten now, this one would wait for it
        if last is not None and last.start < regs.stop * rb and regs.start * rb < last.end:
            return None
        return start if start % rb == 0 and all(self.regs.free_mask[r] == full for r in regs) else None

    def alloc_let(self, x, p) -> Allocation | None:
        """The register of let ``x`` at point ``p``; None for a constant, a recomputed value or a copy of a
        register buffer that reads the buffer's registers (``liveness`` aliases)."""
        if x.var.name in self.remat or isinstance(x.value, (IntImm, FloatImm)) or (id(x), p) in self.live.aliases:
            return None
        t = x.var.type
        key = self.live.var_keys[id(x), p]
        base, kind = self.live.heads.get(key, (0, None))
        if kind == "head":   # a SIMD1 header's address (``liveness._header_lets``): at dword 0 of a register
            a = self.alloc_head(x.var.name)
        else:
            a = self.alloc(elem_size(t) * t.lanes, x.var.name, "scalars" if t.lanes == 1 else "vectors")
        if kind == "twin":
            self.keys["twin", p] = self.alloc_head(f"{x.var.name} + {base}")
        self.keys[key] = a
        return a

    def alloc_head(self, label: str) -> Allocation:
        """A dword at the start of a register, for a value SIMD1 messages read as their header."""
        try:
            return self.regs.alloc_head(4, label, "scalars", avoid=self.cooling_regs())
        except NoRoom:
            raise self.no_room(4, label) from None

    def alloc_loop(self, x, p) -> Allocation:
        """The register of loop ``x``'s variable (its init is evaluated into it before the bound)."""
        a = self.alloc(4, x.var.name, "scalars")
        self.keys[self.live.var_keys[id(x), p]] = a
        return a

    def alloc_bound(self, x) -> Allocation | None:
        """The register of loop ``x``'s bound, held to the loop's end (None for a constant bound)."""
        bound = None if isinstance(x.bound, IntImm) else self.alloc(4, f"{x.var.name} bound", "scalars")
        self.bounds.append(bound)
        return bound

    def end_loop(self) -> None:
        """Releases the bound of the innermost open loop (its variable dies with its liveness key)."""
        bound = self.bounds.pop()
        if bound is not None:
            self.regs.release(bound)

    def release(self, allocations) -> None:
        for a in allocations:
            self.regs.release(a)

    def retire(self, a: Allocation, name: str | None = None) -> None:
        """Releases ``a`` after its last reader; a header's registers are then taken last for a while. The
        one-register header of a global message (buffer ``name``) is kept until the next header of the
        same memory is written (:meth:`_linger`): that one's 64-bit address may be this one's plus a
        constant (``addresses``), read from these registers."""
        space = self.live.headers.get(name, ("",))
        if self.linger and space[0] == "global" and a.size <= self.rb:
            self._linger(space[1], a)
            return
        self.regs.release(a)
        if a.category == CATEGORY["header"]:
            self.cooling.append(a)

    def _linger(self, mem: str | None, a: Allocation | None = None) -> None:
        """The header kept for memory ``mem`` (every one where ``mem`` is None) released, and ``a`` kept
        in its place. Kept headers go at any jump or label, past which no address is known to hold."""
        for m in ([mem] if mem is not None else list(self.lingering)):
            old = self.lingering.pop(m, None)
            if old is not None and old is not a:
                self.retire(old)
        if a is not None:
            self.lingering[mem] = a

    def points(self) -> Iterator[tuple[int, str, object]]:
        """``(point, event kind, node)`` of the body in order, with the buffers whose live segment starts
        at the point allocated before it is yielded and the values dead after it released on resuming."""
        for p, (kind, x) in enumerate(events(self.body)):
            for key in self.live.starts.get(p, ()):
                if key[0] == "buf" and key[1] not in self.live.bare:
                    self.alloc_buffer(key, x, p)
            yield p, kind, x
            if kind == "call" and isinstance(x.func, Send) and isinstance(x.ops[1], Load):
                self.last_address = self.bufs.get(x.ops[1].buf.name)
            if kind == "store" and self.lingering:
                space = self.live.headers.get(x.buf.name, ("",))
                if space[0] == "global" and self.bufs.get(x.buf.name) is not self.lingering.get(space[1]):
                    self._linger(space[1])
            elif kind in _JUMPS and self.lingering:
                self._linger(None)
            for key in self.live.ends.get(p, ()):
                a = self.keys.pop(key, None)
                if a is not None:
                    self.retire(a, key[1] if key[0] == "buf" else None)
                    if key[0] == "buf" and self.bufs.get(key[1]) is a:
                        del self.bufs[key[1]]
        self._linger(None)


class BodyFacts:
    """What every allocation attempt of one body reads alike (:func:`with_remat` restarts the walk with
    other choices over the same body): the lets recomputed whatever the attempt
    (:func:`recomputed_lets`) and the liveness of each ``(remat, compact)`` asked (an attempt that only
    stops keeping headers, ``linger``, asks the same again)."""

    def __init__(self, body, target, arg_names):
        self.body = body
        self.arg_names = tuple(arg_names)
        self.recomputed = recomputed_lets(body, target.xe.native_int64)
        self._liveness: dict[tuple, Liveness] = {}

    def liveness(self, remat: frozenset, compact: bool) -> Liveness:
        live = self._liveness.get((remat, compact))
        if live is None:
            live = self._liveness[remat, compact] = analyze(self.body, set(self.arg_names), remat, compact)
        return live


# events after which the code generator places a label or a jump
_JUMPS = frozenset({"for", "end_for", "if", "else", "end_if"})


def recomputable(body) -> dict[str, object]:
    """Lets whose value can be recomputed where it is used instead of held (``remat``): no register-buffer
    loads (a buffer may change between the let and the use)."""
    out = {}
    for node in walk_nodes(body):
        if isinstance(node, Let) and not any(isinstance(n, Load) for n in walk_nodes(node.value)):
            out[node.var.name] = node.value
    return out


def _lets_read_only_as(body, *rules) -> list[dict[str, object]]:
    """Per rule ``(candidate, counted)``, in one walk of ``body``: ``{let: its value}`` of the lets bound once
    whose value ``candidate`` takes and every read of which is one that ``counted(node)`` names (it yields
    the names a node reads so)."""
    values: list[dict[str, object]] = [{} for _ in rules]
    wanted: list[Counter] = [Counter() for _ in rules]
    bound: Counter = Counter()      # names bound by a let or a loop (each binding's var is walked once)
    reads: Counter = Counter()
    for node in walk_nodes(body):
        t = type(node)
        if t is Var:
            reads[node.name] += 1
        elif t is Let or t is For:
            bound[node.var.name] += 1
            if t is Let:
                for (candidate, _), found in zip(rules, values):
                    if candidate(node.value):
                        found[node.var.name] = node.value
        for (_, counted), want in zip(rules, wanted):
            for name in counted(node):
                want[name] += 1
    return [{n: v for n, v in found.items() if bound[n] == 1 and reads[n] - 1 == want[n] > 0
             and all(bound[x] <= 1 for x in _summed_vars(v) or ())} for found, want in zip(values, wanted)]


def recomputed_lets(body, native_int64: bool) -> frozenset[str]:
    """The lets every allocation of ``body`` recomputes where they are read (``remat``): the
    :func:`absorbed` ones and the address lets (:class:`_AddressLets`; one walk of ``body`` for both)."""
    address = _AddressLets(body, native_int64)
    found = _lets_read_only_as(body, _ABSORBED, address.rule)
    return frozenset(found[0]) | address.kept(found[1])


def _absorbed_candidate(v) -> bool:
    return type(v) is Binary and v.op is Op.ADD and v.type.lanes == 1 and v.type.is_int and \
        v.type.scalar.bits == 32 and type(v.a) is Var and type(v.b) is IntImm and -32768 <= v.b.value < 32768


def _absorbed_counted(node):
    if type(node) is Binary and node.op is Op.ADD and node.type.is_int and node.type.scalar.bits == 32:
        return [x.name for x, other in ((node.a, node.b), (node.b, node.a))
                if type(x) is Var and type(other) is not IntImm]
    return ()


_ABSORBED = (_absorbed_candidate, _absorbed_counted)


def absorbed(body) -> frozenset[str]:
    """Scalar lets ``t = v + c`` (``c`` a 16-bit constant) every read of which is an operand of a 32-bit
    integer add whose other operand is not a constant: each such add becomes one ``add3`` of that operand,
    ``v`` and ``c`` (``isa``), so ``t`` is recomputed there (``remat``) and needs neither a register nor an
    instruction of its own (``cse = k + 32`` read by two address adds: the ``add`` of the constant goes).
    The variable read where ``t`` is recomputed is bound once too (no other binding of the name there)."""
    return frozenset(_lets_read_only_as(body, _ABSORBED)[0])


class _AddressLets:
    """The address lets of ``body``: scalar lets of variables plus constants (``b = k + 1638400``) that
    only scalar global message headers read, each header's offset a sum of variables and constants: each
    such header is its held predecessor plus a constant, or else summed from the let's value
    (``addresses``, ``sends.store_header``), so the let needs neither a register nor an instruction
    (``remat``). With 64-bit integer adds, lets of one variable read by headers of one variable (its
    address plus a constant in 64 bits); on Xe-HPG (``addc`` + ``add`` of a held address, or the 32-bit
    sum and ``addc`` + ``add``) any sums, read by headers or by other such lets (``b = k + 819200``, ``c =
    b + oc``, the headers ``c``, ``c + 256``: a step from the held address reads neither), where the
    let's constant fits an ``add3`` immediate (16 bits): a header that does not step sums it in the one
    instruction it takes anyway (``sends._flattened``), where a let of a larger constant is one ``add``
    that its headers share (``b = k + 819200`` stays, ``c = b + oc`` is recomputed). ``rule`` is the
    ``(candidate, counted)`` pair of :func:`_lets_read_only_as`; :meth:`kept` keeps those read in the
    loop they are defined in."""

    def __init__(self, body, native_int64: bool):
        self.body = body
        self.native = native_int64
        self.headers = {x.ops[1].buf.name for kind, x in events(body)
                        if kind == "call" and isinstance(x.func, Send) and x.func.space == "global"
                        and isinstance(x.ops[1], Load)}
        self.rule = (self.candidate, self.counted)

    def sums(self, v) -> bool:
        names = _summed_vars(v) if v.type.lanes == 1 and v.type.is_int else None
        return bool(names) and (len(names) == 1 or not self.native)

    def candidate(self, v) -> bool:
        return self.sums(v) and (self.native or -2**15 <= summands(v)[1] < 2**15)

    def counted(self, node):
        if type(node) is Store and node.buf.name in self.headers and node.value.type.lanes == 1:
            names = _summed_vars(node.value)
            return names if names is not None and (len(names) == 1 or not self.native) else ()
        if not self.native and type(node) is Let and self.sums(node.value):
            return _summed_vars(node.value)
        return ()

    def kept(self, found) -> frozenset[str]:
        """Those of ``found`` read in the loop they are defined in (one hoisted out of the loop would be
        recomputed in it), less any a let that is not recomputed reads (it is read as itself there)."""
        loops: list = [None]
        where: dict[str, set] = {}      # let -> the loops it is defined and read in
        chained: dict[str, list] = {}   # let of a sum -> the variables it sums (Xe-HPG)
        for kind, x in events(self.body):
            if kind == "for":
                loops.append(id(x))
            elif kind == "end_for":
                loops.pop()
            elif kind == "let" or kind == "store" and x.buf.name in self.headers:
                for name in [x.var.name] if kind == "let" else self.counted(x):
                    where.setdefault(name, set()).add(loops[-1])
                if kind == "let" and not self.native and self.sums(x.value):
                    chained[x.var.name] = _summed_vars(x.value)
        out = {n for n in found if len(where.get(n, ())) == 1}
        while True:
            kept = {v for n, names in chained.items() if n not in out for v in names} & out
            if not kept:
                return frozenset(out)
            out -= kept


def _summed_vars(e) -> list[str] | None:
    """The variables a sum of variables and constants adds (None for any other expression)."""
    parts, _ = summands(e)
    return [x.name for x in parts] if all(type(x) is Var for x in parts) else None


MAX_REMAT_ROUNDS = 8


def with_remat(attempt, body):
    """``attempt(remat, rotation, compact, linger)`` (an allocation of ``body`` that raises ``NoRoom`` or
    ``OutOfRegisters`` with the values ``live`` where it ran out) with the allocator's answers to running
    out: first the global headers kept past their messages go (``linger``, ``AllocationWalk.retire``), then
    the compact layout gives way (``compact``: the SIMD1 headers' lets each hold a register's
    first dword, counters' buffers take sub-registers, ``AllocationWalk``; the later attempts allocate as
    before it, since what rematerialization picks follows where values are), then the roomy allocation
    (``rotation`` 0: headers stop rotating, since a header taking registers apart from the last ones can
    split the free range a large buffer needs, and the barrier's and 2D loads' headers are built at each
    message instead of holding registers), then rematerialization: the values live at the failing point
    that can be recomputed (vector lets first, then scalars) are recomputed at each use instead of held,
    and the attempt restarts; after a few rounds every recomputable vector is. The last failure is raised
    when nothing is left to recompute."""
    try:
        return attempt(frozenset(), HEADER_ROTATION, True, True)
    except (NoRoom, OutOfRegisters):
        pass
    for compact in (True, False):
        try:
            return attempt(frozenset(), HEADER_ROTATION, compact, False)
        except (NoRoom, OutOfRegisters) as exc:
            if not getattr(exc, "compacted", True):   # nothing compacted: without it the attempt is the same
                break
    remat: frozenset = frozenset()
    candidates = None
    last = None
    for round_ in range(MAX_REMAT_ROUNDS):
        try:
            return attempt(remat, 0, False, False)
        except (NoRoom, OutOfRegisters) as exc:
            last = exc
        if candidates is None:
            candidates = recomputable(body)
        live = [b for b in last.live if b.label in candidates and b.label not in remat]
        pick = [b.label for b in live if b.category == "vectors"]
        if round_ >= 2:
            pick += [n for n, v in candidates.items() if v.type.lanes > 1 and n not in remat]
        pick = pick or [b.label for b in live]
        if not pick:
            raise last
        remat = remat | frozenset(pick)
    raise last


def _walk_peak(body, target, arg_names, simd: int, nregs: int, remat: frozenset, rotation: int,
               compact: bool = False, linger: bool = False, facts: BodyFacts | None = None) -> int:
    walk = AllocationWalk(body, target, arg_names, simd, nregs, remat, rotation, compact, linger, facts)
    local_ids = walk.reserve_payload()
    for _ in walk.alloc_thread_ids():
        pass
    peak = walk.regs.busy
    walk.release(local_ids)
    for p, kind, x in walk.points():
        if kind == "let":
            walk.alloc_let(x, p)
        elif kind == "for":
            walk.alloc_loop(x, p)
            walk.alloc_bound(x)
        peak = max(peak, walk.regs.busy)
        if kind == "end_for":
            walk.end_loop()
    return peak


def allocation_peak(body, target, arg_names, simd: int, budget: int | None = None) -> int:
    """The most registers the Xe allocator holds at once for ``body`` (the walk of :class:`AllocationWalk`
    without code: reserve, buffers, lets, loop variables and bounds). In ``budget`` registers it
    rematerializes as the allocator does (:func:`with_remat`); where that does not fit either, or without a
    budget, the walk runs in a register file as large as it needs, every recomputable vector recomputed
    when there is a budget (without one, in the compact layout the first attempt takes, headers kept as
    there)."""
    facts = BodyFacts(body, target, arg_names)
    if budget is not None:
        try:
            return with_remat(lambda remat, rotation, compact, linger: _walk_peak(
                body, target, arg_names, simd, budget, remat, rotation, compact, linger, facts), body)
        except NoRoom:
            pass
    remat = frozenset() if budget is None else frozenset(
        n for n, v in recomputable(body).items() if v.type.lanes > 1)
    nregs = 256
    while True:
        try:
            return _walk_peak(body, target, arg_names, simd, nregs, remat, 0, compact=budget is None,
                              linger=budget is None, facts=facts)
        except NoRoom:
            nregs *= 2
