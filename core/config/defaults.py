"""The defaults heuristic: every knob a user leaves out, chosen from the problem and target.

``resolve_config(problem, target, user)`` keeps every knob ``user`` sets and
derives the rest *around* them (a user's ``iter`` changes the default
``loop``, ``tg`` and SLM buffering); ``default_config`` is the same with no
user knobs. The rules, in order:

1. **fma**: the first of the target's ``fma_preference`` (xehpg/xehpc: dpas,
   dp4a, mad; sm_90: mma, fma) that multiplies the problem's A and B types
   into its accumulator type at full precision and can keep at least half
   (``lanes.MIN_USEFUL``) of its multiply lanes useful on the problem
   (``lanes.lane_bound``: each GEMM extent against the instruction's unit),
   else the first of them (validation's warning says why lanes idle). So
   f16/bf16/s8/u8 get dpas on Xe and mma on sm_90; f32 gets mad on Xe and fma on sm_90 (never tf32:
   defaults do not lower precision); a depthwise convolution (N = 1, K =
   kh x kw per group, 2 % of a dpas) gets mad with its lanes along the groups
   (``mad_over_batch``, oneDNN's ``i=g16kw3ow8``). dpasw is never a default.
2. **simd**: the target's width for that instruction (dpas: 8 on xehpg, 16
   on xehpc; otherwise 16 on Xe; 32 on sm_90); with lanes along the batch the
   widest width up to that which divides the batch (no masked lanes).
3. **regs**: 256 (large GRF) for dpas on xehpc, 128 on other Xe
   configurations, 255 on sm_90 (the architectural cap; ptxas decides).
   A user's ``iter`` whose budget estimate exceeds that gets the smallest
   larger mode that holds it (the largest if none does), as oneDNN retries
   a kernel that runs out of registers in large-GRF mode. With no ``iter``
   either, a mode's best tile (rule 4) that issues fewer than
   ``MIN_FMAS_PER_ITER`` (8) FMA instructions per reduction iteration gives
   way to the next larger mode's best tile of at most that many, where that
   one issues more (xehpg's f16 3x3 convolutions: ``oh4ow8oc8ic16``, 4 dpas
   at 128 GRFs -> ``oh4ow8oc16ic16``, 8 dpas at 256, as oneDNN's tuned
   ``oc32ow16``-style tiles). A reduction iteration carries ALU work that
   does not shrink with the tile: a header for each of its messages, the
   padding masks of the pixel it reads, the loop counters (about 8
   operations on those convolutions, docs/passes.md), so fewer multiplies
   per iteration leave the ALU, not the multiplier, bounding the loop; the
   larger mode is asked for no more than that, since it halves the threads
   per vector engine, and its tiles rank by the A and B bytes they load per
   FMA first (the squarest: ``mb4oh2ow2oc32`` before ``mb2oh2ow2oc64``),
   since reuse is what the larger mode buys, then by the fewer A bytes (a
   convolution's A rows carry the pixels' padding masks); then by rule 4's
   score.
4. **iter** (per-thread tile): candidates are the instruction shape times
   powers of two, M and N up to 128 and not more than twice the problem, K
   moving 16..64 bytes of A per iteration. Each candidate is completed with
   rules 5-7 and kept if its register and SLM budget fits. Among those the
   pick maximizes, in order: at least half of the issued multiply lanes
   useful (``lanes.lane_use``), thread groups up to half the cores (small
   problems get small tiles, as in SYCL-BLAS's dispatch by size), then the
   group's C area, the thread's C area and its K block, each weighted by the
   fraction of the computed space that is not padding. A tile is spread over a role's dims greedily
   by the largest power-of-two divisor, so blocks divide the dims when they can;
   a power of two that divides none is split over them to pad least (``kh3kw3``
   and 16: ``kh4kw4``, not ``kw16``).
   With lanes along the batch the candidates are ``simd`` or twice ``simd`` of
   the batch, the whole N, the innermost K dim whole in registers (kw; 8 of
   it past 16) and powers of two of M.
5. **tg**: 4 x 4 threads on Xe, 2 x 2 warps on sm_90, shrunk so no thread
   row or column lies wholly outside the problem, capped by the target's
   group size, then halved (larger side first) while there are fewer groups
   than half the cores, or, with lanes along the batch, while the group's
   padding leaves fewer than half of the lanes useful.
6. **loop**: the whole reduction inside one group (no split K; K blocks of
   ``iter x tg`` when the user's ``tg`` slices K).
7. **slm**: A is buffered when several threads share it (X > 1), B when
   Y > 1 (never decompressed weights: each thread converts its own bytes in registers; never with lanes
   along the batch: a depthwise B is a few bytes per channel); 3 buffers when the loop runs 3+ iterations, else 1; 0 when nothing
   is shared; reduced until it fits the group's SLM. No prefetch. **pipeline**
   unrolls when buffers rotate (``bufs > 1``) and reuses headers otherwise.
   No unroll, no subtiles.
8. **oneDNN-only knobs** (read from oneDNN's lines): global reduction
   allowed, kdd's own walk order, no SLM padding, no bwd_d skipping,
   layouts ``any`` (the problem's).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from math import ceil, gcd, prod

from kdd.core.targets import FmaShape, Target

from .budget import estimate_budget
from .buildable import buildable
from .decompress import Decompress
from .lanes import MIN_USEFUL, lane_bound, lane_use
from .kernel_config import KernelConfig
from .operands import Operands, operands
from .tiles import Tile
from .tiling import group_count, tiling_of
from .values import MAX_BUFS, Buffering, Pipeline, Subtiles, WalkOrder

MAX_THREAD_TILE = 128
# The knobs kdd reads from oneDNN's lines without a choice of its own: their defaults (rule 8).
ONEDNN_ONLY = KernelConfig(global_reduction=True, walk_order=WalkOrder(), pad_slm=False, bwd_d_optimize="none",
                           src_layout="any", wei_layout="any", dst_layout="any", bia_layout="any")
# The schedule knobs' defaults: oneDNN's generator, and what schedule=tma takes when they are unset.
SCHEDULE = KernelConfig(schedule="classic", tile=Tile(), stages=4, cluster=Tile())
_BASE = ONEDNN_ONLY.over(SCHEDULE)
K_BYTES = (16, 64)
# FMA instructions per reduction iteration worth a larger register mode (rule 3).
MIN_FMAS_PER_ITER = 8


def default_config(problem, target: Target) -> KernelConfig:
    """The complete config kdd uses when the user sets no knob."""
    return resolve_config(problem, target, KernelConfig())


def resolve_config(problem, target: Target, user: KernelConfig | None = None) -> KernelConfig:
    """``user``'s knobs completed by the heuristic (see the module doc)."""
    plan = _Plan.make(problem, target, user or KernelConfig())
    if user is not None and user.iter is not None:
        return _fitting_mode(plan, plan.complete(user.iter), problem, target)
    plan, ranked = ranked_in_mode(plan, problem, target)
    if not ranked:  # nothing fits: the smallest tile, and validation reports the overflow
        return plan.complete(plan.iter_candidates()[-1])
    return ranked[0][1]


def _fitting_mode(plan: "_Plan", cfg: KernelConfig, problem, target: Target) -> KernelConfig:
    """A user's tile with no ``regs``: the smallest register mode that holds its estimate (the largest
    if none does), as oneDNN retries a kernel that runs out of registers in large-GRF mode."""
    if plan.user.regs is not None or estimate_budget(problem, cfg, target).reg_total <= cfg.regs:
        return cfg
    for regs in target.registers.modes:
        if regs > cfg.regs:
            cfg = replace(plan, regs=regs).complete(plan.user.iter)
            if estimate_budget(problem, cfg, target).reg_total <= regs:
                break
    return cfg


def ranked_in_mode(plan: "_Plan", problem, target: Target) -> tuple["_Plan", list]:
    """Rule 3's register mode (where the user set no ``regs``) and rule 4's ranking of the tiles in it:
    ``plan`` and its ranking, or a larger mode's plan and its ranking of tiles of at most
    ``MIN_FMAS_PER_ITER`` FMA instructions where its best issues more per iteration than ``plan``'s."""
    ranked = ranked_tiles(plan, problem, target)
    if plan.user.regs is not None:
        return plan, ranked
    have = plan.fmas_per_iter(ranked[0][2]) if ranked else 0
    for regs in target.registers.modes:
        if have >= MIN_FMAS_PER_ITER:
            break
        if regs <= plan.regs:
            continue
        larger = replace(plan, regs=regs)
        # What the larger mode buys is reuse: the fewest A and B bytes per FMA (the squarest tile) first,
        # then the fewer A bytes (A's rows carry the padding masks of a convolution's pixels).
        more = sorted(ranked_tiles(larger, problem, target, most_fmas=MIN_FMAS_PER_ITER),
                      key=lambda item: item[0][:2] + (-plan.operand_bytes_per_fma(item[2]),
                                                      -plan.operand_bytes_per_fma(item[2], "a")) + item[0][2:],
                      reverse=True)
        if more and plan.fmas_per_iter(more[0][2]) > have:
            plan, ranked, have = larger, more, plan.fmas_per_iter(more[0][2])
    return plan, ranked


def ranked_tiles(plan: _Plan, problem, target: Target,
                 most_fmas: int | None = None) -> list[tuple[tuple, KernelConfig, object]]:
    """``(score, complete config, tile)`` of every per-thread tile within the budget estimate (and of
    at most ``most_fmas`` FMA instructions per iteration when given), best first by rule 4's score
    (ties in candidate order)."""
    scored = []
    for tile in filter(plan.may_fit, plan.iter_candidates()):
        if most_fmas is not None and plan.fmas_per_iter(tile) > most_fmas:
            continue
        cfg = plan.complete(tile)
        budget = estimate_budget(problem, cfg, target)
        if not budget.within_estimate:
            continue
        t = budget.tiling
        eff = t.efficiency
        use = lane_use(problem, cfg, target, t)
        score = (use is None or use.fraction >= MIN_USEFUL, min(t.groups, target.device.cores // 2),
                 t.m_group * t.n_group * eff, t.m_thread * t.n_thread * eff, t.k_iter * eff)
        scored.append((score, cfg, tile))
    scored.sort(key=lambda item: item[0], reverse=True)
    return scored


def pick_fma(target: Target, ops: Operands, problem=None) -> str:
    """Rule 1: the preferred full-precision instruction for A x B -> acc that can keep at least half of its
    multiply lanes useful on ``problem``; where none can, the preferred one (a wider instruction idling
    most of its lanes still multiplies more per clock than a narrower one idling fewer: validation's
    warning says why the lanes idle)."""
    usable = [fma for fma in target.fma_preference if _full_precision(target, ops, fma)]
    for fma in usable if problem is not None else ():
        shape = _full_precision(target, ops, fma)[0]
        if max(lane_bound(problem, shape, target, over) for over in _lane_forms(fma)) >= MIN_USEFUL:
            return fma
    return usable[0] if usable else target.fma_preference[-1]


def _full_precision(target: Target, ops: Operands, fma: str) -> list[FmaShape]:
    """The forms of ``fma`` that multiply A x B -> acc at full precision (and build), those of its default
    width first."""
    shapes = [s for s in buildable(target.shapes(fma=fma, a=ops.a, b=ops.b, acc=ops.acc)) if not s.math]
    return sorted(shapes, key=lambda s: s.simd != target.simd_for(fma))


def _batch_simd(problem, target: Target, fma: str, simd: int) -> int:
    """Rule 2 for lanes along the batch: the widest width up to ``simd`` that divides the batch (``g40`` takes
    SIMD8: five whole chunks, no masked lanes, so its loads stay block messages), ``simd`` if none does."""
    batch = problem.gemm_dims().B
    widths = sorted({s.simd for s in target.shapes(fma=fma)}, reverse=True)
    return next((w for w in widths if w <= simd and batch % w == 0), simd)


def _lane_forms(fma: str) -> tuple[bool, ...]:
    """Where ``fma`` can put its lanes: along N, and for ``mad`` also along the batch."""
    return (False, True) if fma in ("mad", "fma") else (False,)


def default_regs(target: Target, fma: str) -> int:
    """Rule 3."""
    r = target.registers
    if not r.modes:
        return r.max_regs
    return r.modes[-1] if fma in r.large_for else r.modes[0]


def spread(total: int, dims: tuple[tuple[str, int], ...]) -> dict[str, int]:
    """Split block ``total`` over ``(name, size)`` dims: repeatedly give the dim with the largest
    ``gcd(size, remaining)`` that factor (later dims win ties); a power of two that divides no dim is padding,
    split over the dims so that it pads least (``kh3kw3`` and 16: ``kh4kw4``, 56 % of it useful, not
    ``kw16``, 19 %; later dims take more where that pads alike), and an odd rest goes to the dim with the
    most left to cover."""
    return dict(_spread(total, dims))


@lru_cache(maxsize=4096)
def _spread(total: int, dims: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """:func:`spread`'s split as items, remembered: the candidate tiles of the defaults ask it again for each
    of their combinations (and again for the ``[check]`` shape), and a padded split tries every way to
    share the padding."""
    out = {name: 1 for name, _ in dims}
    left = dict(dims)
    remaining = total
    while remaining > 1 and dims:
        # Largest common factor first; among equals the later (inner) dim.
        g, _, name = max((gcd(left[name], remaining), i, name) for i, (name, _) in enumerate(dims))
        if g == 1:
            break
        out[name] *= g
        left[name] //= g
        remaining //= g
    if remaining > 1 and dims and remaining & (remaining - 1) == 0:
        names = [name for name, _ in dims]
        best = min(_exponent_splits(remaining.bit_length() - 1, len(names)),
                   key=lambda e: (prod(ceil(left[n] / 2 ** x) * 2 ** x / left[n] for n, x in zip(names, e)),
                                  tuple(-x for x in reversed(e))))
        for name, x in zip(names, best):
            out[name] *= 2 ** x
    elif remaining > 1 and dims:
        _, _, name = max((left[name], i, name) for i, (name, _) in enumerate(dims))
        out[name] *= remaining
    return tuple(out.items())


def _exponent_splits(total: int, parts: int):
    """Every way to write ``total`` as ``parts`` non-negative integers, in order."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _exponent_splits(total - first, parts - 1):
            yield (first, *rest)


def _tile(*blocks: dict[str, int]) -> Tile:
    return Tile.of((name, size) for b in blocks for name, size in b.items() if size > 1)


def _pow2_multiples(base: int, limit: int) -> list[int]:
    """``base`` and its power-of-two multiples up to ``limit``; ``base`` even when it exceeds
    ``limit`` (an unsupported ``simd``, say), so a config can still be completed and validated."""
    out, x = [base], base * 2
    while x <= limit:
        out.append(x)
        x *= 2
    return out


@dataclass(frozen=True)
class _Plan:
    """What the heuristic fixes before choosing tiles: the knobs of rules 1-3 and the FMA shape."""

    problem: object
    target: Target
    user: KernelConfig
    ops: Operands
    fma: str
    simd: int
    regs: int
    shape: tuple[int, int, int]
    over_batch: bool = False  # mad's lanes along the batch dims (depthwise), rule 1

    @staticmethod
    def make(problem, target: Target, user: KernelConfig) -> "_Plan":
        ops = operands(problem, user)
        fma = user.fma or pick_fma(target, ops, problem)
        simd = user.simd or (target.simd_for(fma) if fma in target.fma_kinds else target.default_simd)
        regs = user.regs or default_regs(target, fma)
        shapes = (buildable(target.shapes(fma=fma, simd=simd, a=ops.a, b=ops.b, acc=ops.acc))
                  or buildable(target.shapes(fma=fma, simd=simd, a=ops.a, b=ops.b)))
        best: FmaShape | None = shapes[0] if shapes else None
        shape = (best.m, best.n, best.k) if best else (1, simd, 1)
        over_batch = bool(best) and fma in ("mad", "fma") and \
            lane_bound(problem, best, target, True) > lane_bound(problem, best, target, False)
        if over_batch and not user.simd:
            simd = _batch_simd(problem, target, fma, simd)
            shape = (1, simd, 1)
        return _Plan(problem, target, user, ops, fma, simd, regs, shape, over_batch)

    def iter_candidates(self) -> list[Tile]:
        """Rule 4's candidate per-thread tiles, largest first."""
        if self.over_batch:
            return self._batch_candidates()
        gemm = self.problem.gemm_dims()
        sm, sn, sk = self.shape
        ms = [m for m in _pow2_multiples(sm, MAX_THREAD_TILE) if m == sm or m // 2 < gemm.M]
        ns = [n for n in _pow2_multiples(sn, MAX_THREAD_TILE) if n == sn or n // 2 < gemm.N]
        ks = [k for k in _pow2_multiples(sk, max(sk, K_BYTES[1] // self.ops.a.size))
              if k == sk or (k * self.ops.a.size >= K_BYTES[0] and k // 2 < gemm.K)]
        tiles = sorted(((m * n, k, m, n) for m in ms for n in ns for k in ks), reverse=True)
        return [_tile(spread(m, gemm.m), spread(n, gemm.n), spread(k, gemm.k)) for _, k, m, n in tiles]

    def _batch_candidates(self) -> list[Tile]:
        """Rule 4 for ``mad`` with its lanes along the batch (a depthwise convolution's groups, oneDNN's
        ``i=g16kw3ow8``): ``simd`` or twice ``simd`` of the batch, the whole N (fewer than ``simd``: no lane
        along it), the innermost K dim whole (kw: the kernel row in registers, the outer K dims in the loop;
        8 of it where it is longer than 16), and M (the pixels) a power of two with at most
        ``MAX_THREAD_TILE`` elements of C per batch-and-N element."""
        gemm = self.problem.gemm_dims()
        s = self.simd
        bs = [b for b in (s, 2 * s) if b == s or b // 2 < gemm.B]
        inner = [(name, size) for name, size in gemm.k if size > 1][-1:]
        k = {name: size if size <= 16 else 8 for name, size in inner}
        n = spread(gemm.N, gemm.n)
        tiles = sorted(((b * m, m, b) for b in bs for m in _pow2_multiples(1, MAX_THREAD_TILE // (b * gemm.N or 1))
                        if m == 1 or m // 2 < gemm.M), reverse=True)
        return [_tile(spread(b, gemm.b), spread(m, gemm.m), n, k) for _, m, b in tiles]

    def fmas_per_iter(self, tile: Tile) -> int:
        """FMA instructions one thread issues per reduction iteration with per-thread tile ``tile``."""
        gemm = self.problem.gemm_dims()
        if self.over_batch:  # one instruction per simd batch elements and (m, n, k) element
            return ceil(tile.product(d for d, _ in gemm.b) / self.simd) * prod(
                tile.product(d for d, _ in getattr(gemm, role)) for role in "mnk")
        return prod(ceil(tile.product(d for d, _ in getattr(gemm, role)) / size)
                    for role, size in zip("mnk", self.shape))

    def operand_bytes_per_fma(self, tile: Tile, operands: str = "ab") -> float:
        """Bytes of ``operands`` (A and B) one thread loads per FMA instruction with per-thread tile ``tile``."""
        gemm = self.problem.gemm_dims()
        m, n, k = (tile.product(d for d, _ in getattr(gemm, role)) for role in "mnk")
        nbytes = {"a": m * k * self.ops.a.size, "b": k * n * self.ops.b.size}
        return sum(nbytes[o] for o in operands) / self.fmas_per_iter(tile)

    def may_fit(self, tile: Tile) -> bool:
        """Whether C, A, B and the reserve alone fit the registers (prunes the search)."""
        gemm = self.problem.gemm_dims()
        b, m, n, k = (tile.product(d for d, _ in getattr(gemm, role)) for role in "bmnk")
        r = self.target.registers
        need = (r.regs_for(b * m * n * self.ops.acc.size) + r.regs_for(b * m * k * self.ops.a.size)
                + r.regs_for(b * k * n * self.ops.b.size) + r.reserved)
        return need <= self.regs

    @cached_property
    def user_base(self) -> KernelConfig:
        """The user's knobs over oneDNN's own knobs and the classic schedule: what :meth:`complete` fills
        in for every candidate tile (made once per plan)."""
        return self.user.over(_BASE)

    def complete(self, iter_tile: Tile) -> KernelConfig:
        """Rules 5-7 around ``iter_tile``, keeping every knob the user set."""
        user = self.user
        gemm = self.problem.gemm_dims()
        slices = user.tg or Tile()  # a user's tg over K dims (K slicing) covers part of each K block
        loop = user.loop if user.loop is not None else _tile(
            {name: ceil(size / (iter_tile.get(name) * slices.get(name))) for name, size in gemm.k})
        tg = user.tg if user.tg is not None else self._group(iter_tile, loop)
        prefetch = user.prefetch if user.prefetch is not None else Buffering(0)
        slm = user.slm if user.slm is not None else self._slm(iter_tile, tg, loop)
        unroll = slm.bufs > 1 or prefetch.enabled
        pipeline = user.pipeline if user.pipeline is not None else Pipeline(unroll, not unroll)
        vec = user.vec if user.vec is not None else self.simd  # oneDNN's default vector: one SIMD
        decompress = user.decompress if user.decompress is not None or self.problem.decompression is None \
            else Decompress("cvt")  # the exact-most of seed 002's decompressions
        return replace(self.user_base, fma=self.fma, simd=self.simd, regs=self.regs, loop=loop, tg=tg,
                       iter=iter_tile, unroll=user.unroll if user.unroll is not None else Tile(), prefetch=prefetch,
                       subtiles=user.subtiles if user.subtiles is not None else Subtiles(), slm=slm,
                       pipeline=pipeline, vec=vec, decompress=decompress)

    def _group(self, iter_tile: Tile, loop: Tile, shape: tuple[int, int] | None = None) -> Tile:
        """Rule 5 (``shape``: threads along N and M to start from instead of the target's default)."""
        gemm = self.problem.gemm_dims()
        x, y = shape or self.target.default_group
        m_thr, n_thr = iter_tile.product(d for d, _ in gemm.m), iter_tile.product(d for d, _ in gemm.n)
        while y > 1 and m_thr * (y // 2) >= gemm.M:
            y //= 2
        while x > 1 and n_thr * (x // 2) >= gemm.N:
            x //= 2
        rest_m = tuple((name, ceil(size / iter_tile.get(name))) for name, size in gemm.m)
        rest_n = tuple((name, ceil(size / iter_tile.get(name))) for name, size in gemm.n)

        def tile(x: int, y: int) -> Tile:
            return _tile(spread(y, rest_m), spread(x, rest_n))

        def groups(x: int, y: int) -> int:
            return group_count(self.problem, iter_tile, tile(x, y), loop)

        limit = self.target.max_group_threads(self.regs, self.simd)
        while x * y > 1 and (x * y > limit or groups(x, y) < self.target.device.cores // 2
                             or self._wastes_lanes(iter_tile, tile(x, y), loop)):
            if y >= x:
                y //= 2
            else:
                x //= 2
        return tile(x, y)

    def _wastes_lanes(self, iter_tile: Tile, tg: Tile, loop: Tile) -> bool:
        """Whether lanes along the batch (depthwise) fall under half useful with group ``tg``: a padded batch
        already idles up to half of them, so a group that pads the pixels too gives way to a smaller one."""
        if not self.over_batch:
            return False
        use = lane_use(self.problem, KernelConfig(fma=self.fma, simd=self.simd, iter=iter_tile, tg=tg, loop=loop,
                                                  schedule="classic"), self.target)
        return use is not None and use.fraction < MIN_USEFUL

    def _slm(self, iter_tile: Tile, tg: Tile, loop: Tile) -> Buffering:
        """Rule 7."""
        if self.over_batch:  # a depthwise B is a few bytes per channel: each thread reads its own, cached
            return Buffering(0)
        t = tiling_of(self.problem, iter_tile, tg, loop)
        x, y, _ = t.tg_grid
        share_a, share_b = x > 1, y > 1 and not self.ops.decompressed  # decompressed B: bytes from global
        if not (share_a or share_b):
            return Buffering(0)
        bufs = MAX_BUFS if t.k_iters >= 3 else 1
        per_buf = (share_a * t.m_group * t.k_iter * self.ops.a.size
                   + share_b * t.k_iter * t.n_group * self.ops.b.size)
        while bufs > 0 and bufs * per_buf > self.target.slm.per_group:
            bufs -= 1
        return Buffering(bufs, share_a, share_b) if bufs else Buffering(0)
