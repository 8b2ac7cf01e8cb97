"""The kernel-config knobs: one table, ``KNOBS``, describing each knob once.

Every knob has a ``[config]`` TOML key (also the :class:`KernelConfig` field),
its oneDNN config-line key, a value kind, the values it allows, an example
and the documentation shown on hover and in ``docs/config.md``. Its codec
reads and writes the value in both forms.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kdd.core.targets import FMA_KINDS

from .decompress import MODES as DECOMPRESS_MODES
from .decompress import Decompress
from .errors import ConfigError
from .tiles import EMPTY, Tile
from .values import MAX_BUFS, Buffering, Pipeline, Subtiles, WalkOrder, toml_int


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known word, or ``""``."""
    from difflib import get_close_matches  # only for a misspelt word: difflib costs start-up time

    close = get_close_matches(word, list(known), n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


class Codec(ABC):
    """Reads and writes one kind of knob value in its line form and its TOML form."""

    @abstractmethod
    def parse(self, text: str, dims: Iterable[str] = ()) -> Any:
        """The value written as ``text`` in a config line (spans of errors are into ``text``)."""

    def format(self, value: Any) -> str:
        """The line form of ``value`` (``parse(format(v)) == v``)."""
        return str(value)

    def from_toml(self, value: Any, key: str, dims: Iterable[str] = ()) -> Any:
        """The value of ``[config]`` key ``key``; text values are parsed as in a line."""
        if isinstance(value, str):
            return self.parse(value, dims)
        raise ConfigError(f"{key} must be a string, got {value!r}")

    def to_toml(self, value: Any) -> Any:
        return self.format(value)


class ChoiceCodec(Codec):
    def __init__(self, choices: tuple[str, ...]):
        self.choices = choices

    def parse(self, text, dims=()):
        if text not in self.choices:
            raise ConfigError(f"unknown value '{text}' (allowed: {', '.join(self.choices)})"
                              + did_you_mean(text, self.choices), 0, max(1, len(text)))
        return text


class IntCodec(Codec):
    def __init__(self, lo: int):
        self.lo = lo

    def parse(self, text, dims=()):
        if not text.isdigit():
            raise ConfigError(f"expected a number, got '{text}'", 0, max(1, len(text)))
        return self.check(int(text), len(text))

    def check(self, value: int, width: int | None) -> int:
        if value < self.lo:
            span = (0, width) if width is not None else (None, None)
            raise ConfigError(f"value must be at least {self.lo}, got {value}", *span)
        return value

    def from_toml(self, value, key, dims=()):
        return self.check(toml_int(value, key, 0), None)

    def to_toml(self, value):
        return value


class TileCodec(Codec):
    def parse(self, text, dims=()):
        return Tile.parse(text, dims)

    def format(self, value):
        """oneDNN's form: ``x`` for the empty tile, so that a printed line never has an empty value."""
        return str(value) or EMPTY

    def from_toml(self, value, key, dims=()):
        if isinstance(value, Mapping):
            return Tile.of((str(d), toml_int(s, f"{key}.{d}", 1)) for d, s in value.items())
        return super().from_toml(value, key, dims)


class BufferingCodec(Codec):
    def __init__(self, allow_gmem: bool):
        self.allow_gmem = allow_gmem

    def parse(self, text, dims=()):
        return Buffering.parse(text, self.allow_gmem)

    def from_toml(self, value, key, dims=()):
        return Buffering.from_toml(value, self.allow_gmem, key)

    def to_toml(self, value):
        return value.to_toml()


class BufsCodec(Codec):
    """The ``bufs=N`` line shorthand: N SLM buffers for both A and B."""

    def parse(self, text, dims=()):
        if not text.isdigit() or int(text) > MAX_BUFS:
            raise ConfigError(f"bufs must be a number 0..{MAX_BUFS}, got '{text}'", 0, max(1, len(text)))
        return Buffering(int(text))


class PipelineCodec(Codec):
    def parse(self, text, dims=()):
        return Pipeline.parse(text)

    def from_toml(self, value, key, dims=()):
        return Pipeline.from_toml(value, key)


class SubtilesCodec(Codec):
    def parse(self, text, dims=()):
        return Subtiles.parse(text)

    def from_toml(self, value, key, dims=()):
        return Subtiles.from_toml(value, key)


class BoolCodec(Codec):
    """oneDNN's flags: ``0``/``1`` in a line (``true``/``false`` read too), a boolean in TOML."""

    WORDS = {"0": False, "1": True, "false": False, "true": True}

    def parse(self, text, dims=()):
        if text not in self.WORDS:
            raise ConfigError(f"expected 0 or 1, got '{text}'", 0, max(1, len(text)))
        return self.WORDS[text]

    def format(self, value):
        return str(int(value))

    def from_toml(self, value, key, dims=()):
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        return super().from_toml(value, key, dims)

    def to_toml(self, value):
        return value


class WalkOrderCodec(Codec):
    def parse(self, text, dims=()):
        return WalkOrder.parse(text)


class DecompressCodec(Codec):
    def parse(self, text, dims=()):
        return Decompress.parse(text)


class LayoutCodec(Codec):
    """A oneDNN layout tag as its config line prints it: ``axb``, ``aBx16b``, or ``compute.user``."""

    def parse(self, text, dims=()):
        m = re.fullmatch(r"[A-Za-z0-9]+(\.[A-Za-z0-9]+)?", text)
        if m is None:
            raise ConfigError(f"expected a layout tag like 'axb' or 'aBx16b.axb', got '{text}'", 0,
                              max(1, len(text)))
        return text


@dataclass(frozen=True)
class Knob:
    """One kernel parameter.

    ``key``: the ``[config]`` TOML key and :class:`KernelConfig` field.
    ``onednn``: the key in a oneDNN config line (``i`` for ``iter``).
    ``kind``: ``choice``, ``int``, ``tile``, ``buffering``, ``flags``, ``subtiles``, ``bool``, ``walk`` or
    ``layout``.
    ``allowed``: the values the knob takes in words (targets narrow them further).
    ``optional``: a complete config may leave it unset (it applies to some problems only, and the
    builder's default stands when it is unset), so it never shows in a config line unless written.
    """

    key: str
    onednn: str
    kind: str
    allowed: str
    example: str
    doc: str
    codec: Codec
    optional: bool = False

    @property
    def line_keys(self) -> tuple[str, ...]:
        """Keys that set this knob in a config line: the oneDNN key, then the long name."""
        return tuple(dict.fromkeys((self.onednn, self.key)))


SCHEDULES = ("classic", "tma", "tma_ws_cooperative")
TMA_SCHEDULES = SCHEDULES[1:]  # built by builder.hopper
EPILOGUES = ("direct", "tma")
FMA_TYPES = ("f16", "bf16")
BWD_D_OPTIMIZE = ("none", "skip_out_of_bound_w", "skip_strided_dh", "skip_strided_dhw")
_TILE_DIMS = ("Dimension names come from the problem: conv `g mb ic oc id ih iw od oh ow kd kh kw`, "
              "GEMM `m n k b0 b1..`.")

KNOBS: tuple[Knob, ...] = (
    Knob("fma", "fma", "choice", " | ".join(FMA_KINDS), "fma=dpas",
         "Multiply-add instruction of the inner product. Xe: `mad` (one MAC per lane), `dp4a` "
         "(4-element int8 dot product per lane), `dpas` (systolic 8-deep matrix multiply-add on XMX), "
         "`dpasw` (dpas sharing the A operand across a fused-EU thread pair; Xe-HPG only, needs an even "
         "X thread-group size). sm_90: `fma` (one MAC per lane), `mma` (`mma.sync` tensor-core tile, "
         "m16n8k16 for f16/bf16).", ChoiceCodec(FMA_KINDS)),
    Knob("simd", "simd", "int", "8 | 16 (xehpg), 8 | 16 | 32 (xehpc), 16 | 32 (xe2), 32 (sm_90)", "simd=8",
         "SIMD width of a thread: lanes per instruction. dpas fixes it (8 on Xe-HPG, 16 on Xe-HPC and Xe2); "
         "on sm_90 a thread is a 32-lane warp.", IntCodec(1)),
    Knob("regs", "regs", "int", "128 | 256 (Xe), 16..255 (sm_90)", "regs=256",
         "Registers per thread: the GRF mode on Xe (256 = large-GRF mode, half as many threads per "
         "vector engine), the per-thread register cap on sm_90 (`.maxnreg`). The register budget is "
         "checked against it.", IntCodec(1)),
    Knob("vec", "vec", "int", "lanes >= 1", "vec=16",
         "oneDNN's vector size (the `vec` of its execution config, printed when it differs from `simd`): "
         "the N lanes one multiply-add vector covers. Read and printed; kdd's vectors are `simd` lanes, so a "
         "value other than `simd` is a warning. Default: `simd`.", IntCodec(1)),
    Knob("loop", "l", "tile", "K dims, sizes >= 1", "l=kh3kw3ic4",
         "Loop-level blocks: how many iterations of the reduction loop a thread group runs over each "
         "K dimension, each iteration covering one `iter` block. K left over after `iter x loop` is "
         "split across the kernel grid (partial sums added atomically; where the destination is narrower than "
         "the accumulator or post-ops follow, into an f32 scratch that the last group to arrive finishes). "
         + _TILE_DIMS, TileCodec()),
    Knob("tg", "T", "tile", "M, N and K dims, sizes >= 1", "T=oc4ow4",
         "Thread-group blocks: threads of a group along each dimension. N dims form the X axis of "
         "the thread-group grid and M dims the Y axis; the group computes `iter x tg` of each. K dims "
         "form the Z axis (K slicing): each thread reduces one `iter` slice of the group's K block and "
         "the partial C tiles are summed through SLM before the epilogue. "
         + _TILE_DIMS, TileCodec()),
    Knob("iter", "i", "tile", "M, N and K dims, sizes >= 1", "i=mb32oc32ic16",
         "Iteration-level blocks: the tile one thread computes in one iteration, M x N of C "
         "accumulated over the K block. N and K must be multiples of the FMA instruction's shape; an M "
         "that is not is padded to one (loads read zeros there, stores skip it). "
         + _TILE_DIMS, TileCodec()),
    Knob("unroll", "u", "tile", "K dims, sizes >= 1", "u=ic2",
         "Per-dimension unroll factors of the reduction loop. " + _TILE_DIMS, TileCodec()),
    Knob("slm", "s", "buffering", f"x0..x{MAX_BUFS}, optional .g0..g2, .a / .b", "s=x3.g1",
         "SLM buffering of A and B tiles: `x<n>` shared-local-memory buffers (0 = load straight from "
         "global memory, 2/3 = double/triple buffering that overlaps loads with compute), `.g<n>` GRF "
         "buffers staging the global-to-SLM copy, `.a`/`.b` to buffer only A or B. Line shorthand: "
         "`bufs=3` = `s=x3`. TOML: `slm = 3` or `slm = { bufs = 3, gmem = 1, a = true, b = true }`.",
         BufferingCodec(allow_gmem=True)),
    Knob("prefetch", "p", "buffering", f"x0..x{MAX_BUFS}, optional .a / .b", "p=x3",
         "Prefetch A and B tiles `x<n>` iterations ahead into cache (Xe); `.a`/`.b` to prefetch only "
         "one. TOML: `prefetch = 3` or `prefetch = { bufs = 3, a = true, b = false }`.",
         BufferingCodec(allow_gmem=False)),
    Knob("pipeline", "P", "flags", "any of u, r", "P=ur",
         "Pipeline flags: `u` unrolls the buffered reduction loop (needed to rotate SLM/prefetch "
         "buffers without address arithmetic), `r` reuses message headers across iterations (fewer "
         "header registers, more header updates).", PipelineCodec()),
    Knob("subtiles", "S", "subtiles", "a<n> or b<n>", "S=a1b2",
         "Split the per-thread multiplication into A subtiles (`a<n>`: load A in n parts against one "
         "B) or B subtiles (`b<n>`), so only one subtile's buffer is live: fewer registers for the "
         "split operand. A bare number splits B.", SubtilesCodec()),
    Knob("global_reduction", "global-reduction", "bool", "0 | 1", "global-reduction=0",
         "Whether K may be split across the kernel grid (partial sums added atomically). With 0, a `loop` "
         "that leaves K to the grid is an error. Default 1.", BoolCodec()),
    Knob("walk_order", "walk-order", "walk", "up to 3 comma-separated axes of <dim><size> blocks, or x",
         "walk-order=oc4ow2,mb8,",
         "oneDNN's kernel-grid walk order: per grid axis X, Y, Z the blocks its thread-group index walks, "
         "innermost first. Read and printed; kdd walks its own order (N dims on X, M on Y, B and K on Z), "
         "so a non-empty walk order is a warning. `x` (the default) is kdd's order.", WalkOrderCodec()),
    Knob("pad_slm", "pad-slm", "bool", "0 | 1", "pad-slm=1",
         "oneDNN pads SLM rows against bank conflicts. Read and printed; kdd lays SLM tiles out dense, so 1 is "
         "a warning. Default 0.", BoolCodec()),
    Knob("bwd_d_optimize", "bwd-d-optimize", "choice", " | ".join(BWD_D_OPTIMIZE), "bwd-d-optimize=none",
         "oneDNN's skip conditions for backward-by-data taps that fall outside the output or between strides. "
         "Read and printed; kdd's bwd_d kernels mask those taps instead of skipping them, so any value but "
         "`none` (the default) is a warning.", ChoiceCodec(BWD_D_OPTIMIZE)),
    Knob("schedule", "schedule", "choice", " | ".join(SCHEDULES), "schedule=tma",
         "How the kernel is organised, named after CUTLASS 3's kernel schedules. `classic` (the default): "
         "oneDNN's generator, every knob above (on sm_90 `mma.sync` with `cp.async` staging). `tma` (sm_90, "
         "GEMM, convolution): CUTLASS's `KernelTma`: A and B tiles copied by the tensor memory accelerator "
         "(`cp.async.bulk.tensor`, 128-byte swizzle) into `stages` shared-memory stages that complete on "
         "transaction barriers (`mbarrier` with expect-tx), multiplied by warpgroup MMAs (`wgmma`, sm_90a) "
         "from shared memory; `tile`, `stages`, `cluster` and `epilogue` shape it (`swizzle` and `splits` too, "
         "warp-specialized) and the tiling knobs above are unused. "
         "`tma_ws_cooperative` (sm_90, GEMM): CUTLASS's `KernelTmaWarpSpecializedCooperative` with a persistent "
         "tile scheduler: a producer warpgroup issues the copies, the consumer warpgroups multiply and store, "
         "stages handed back through empty barriers, `setmaxnreg` moving registers to the consumers, one group "
         "per SM walking the tiles in L2-friendly bands. Both also run forward convolutions as implicit GEMMs "
         "(NHWC, stride 1 with any kernel and padding, or strided 1x1): per tap a TMA box of output pixels "
         "shifted by the tap, TMA's zero fill the padding, a stride the tensor map's.",
         ChoiceCodec(SCHEDULES)),
    Knob("tile", "tile", "tile", "m (64..256, multiple of 64), n (64..256, multiple of 64), k (128 bytes)",
         "tile=m128n256k64",
         "The thread group's tile of C and K block, as CUTLASS's `TileShape` (`schedule=tma`): one consumer "
         "warpgroup per 64 rows of M. Empty (the default): m128n256 (N the largest of 256, 128, 64 dividing the problem's), k the 128 bytes of a swizzled row "
         "(64 f16); `schedule=classic` does not read it (a warning says so). " + _TILE_DIMS, TileCodec()),
    Knob("stages", "stages", "int", ">= 1", "stages=4",
         "Shared-memory stages of the `schedule=tma` main loop (CUTLASS's `PipelineStages`): the tensor "
         "copies run this many K blocks ahead of the MMAs. Default 4; `schedule=classic` does not read it.", IntCodec(1)),
    Knob("cluster", "cluster", "tile", "m1n1 (larger clusters are not generated yet)", "cluster=m1n1",
         "Thread-block cluster shape (CUTLASS's `ClusterShape`, `schedule=tma`). Empty (the default): one "
         "group per cluster; `schedule=classic` does not read it.", TileCodec()),
    Knob("epilogue", "epilogue", "choice", " | ".join(EPILOGUES), "epilogue=tma",
         "How a `schedule=tma*` kernel stores C (CUTLASS's epilogue schedules): `direct` (the default) stores "
         "each warp's accumulators from registers; `tma` writes each warp's 16 rows 128 bytes of columns at "
         "a time into a swizzled shared-memory buffer (two per warp) and stores it with a TMA tensor store "
         "(`cp.async.bulk.tensor`; nothing written past M, or outside the output for a convolution's box of "
         "pixels), asynchronously: the next tile's main loop runs while the stores drain. Optional: unset is "
         "`direct`.", ChoiceCodec(EPILOGUES), optional=True),
    Knob("swizzle", "swizzle", "int", ">= 1", "swizzle=16",
         "The band of M tiles a `schedule=tma_ws_cooperative` persistent group walks before the next N tile "
         "(CUTLASS's `max_swizzle_size` of its tile scheduler): tile `t` is M tile `t / (band x tiles_n) x "
         "band + t % band`, so the groups running together read `band` M tiles of A and `132 / band` N tiles "
         "of B, sharing both in L2. It must divide the M tiles. Optional: unset is the largest of 8, 4, 2, 1 "
         "that divides them.", IntCodec(1), optional=True),
    Knob("splits", "splits", "int", ">= 1", "splits=2",
         "Split K of `schedule=tma_ws_cooperative` (CUTLASS's split-K `splits`), for problems with fewer "
         "tiles than SMs: each tile's K blocks in this many parts (it must divide them), the parts "
         "persistent work units of their own. Each consumer warp adds its partial rows into a zeroed f32 "
         "scratch copy of C with atomics and counts on its slab's counter; the last part to arrive loads "
         "the sum, runs the epilogue and zeroes its slab and counter again for the next launch. Optional: "
         "unset is 1.", IntCodec(1), optional=True),
    *(Knob(f"{t}_layout", t, "layout", "a layout tag, or compute.user", f"{t}={example}",
           f"The {what} layout oneDNN's line names (its compute layout, then `.user` when that differs). It "
           f"must agree with `[problem] {t}` when that is set; with `{t} = \"any\"` kdd uses its own choice "
           f"and warns. Default `any`.", LayoutCodec())
      for t, what, example in (("src", "source", "axb"), ("wei", "weights", "axcb"), ("dst", "destination", "axb"),
                               ("bia", "bias", "a"))),
    Knob("decompress", "decompress", "choice", " | ".join(DECOMPRESS_MODES) + ", optional .16 / .32 lanes, then optional .x2",
         "decompress=mad.32",
         "How a GEMM with weight decompression (`[problem] scales`) turns its integer weights into the FMA's "
         "operand in registers (seed 002's steps): `cvt` converts, subtracts the zero point and multiplies "
         "by the scale; `mad` does both in one `mad` with `zp x scale` precomputed in the math type (less "
         "accurate); `denorm` converts u8 through the f16 denormal (`x 32768`) and `mad`s with `scale x 512` "
         "(fewest instructions; the scaled scale loses range); `denorm_sub` converts the same way and keeps "
         "zero point and scale apart. `.lanes`: weights per decompression instruction (default: `simd`); "
         "`.x2`: two raw weight tiles in registers, the next loaded while the current converts (seed TRY3.1). "
         "Default `cvt`; other problems ignore it.", DecompressCodec(), optional=True),
    Knob("fma_type", "fma-type", "choice", " | ".join(FMA_TYPES), "fma-type=f16",
         "The type the FMA multiplies f32 A and B in: each thread converts its A and B tiles in registers "
         "(round to nearest even) before `mma`/`dpas`, as portBLAS's joint-matrix kernels do with "
         "`inp_jmT = sycl::half` (benchdnn's `--attr-fpmath=f16`). The check's reference rounds A and B "
         "the same way. Unset (the default): the FMA multiplies the problem's types.",
         ChoiceCodec(FMA_TYPES), optional=True),
)

KNOB_BY_KEY: dict[str, Knob] = {k.key: k for k in KNOBS}

# Line keys -> (knob, codec). ``bufs`` is the shorthand for SLM buffering.
LINE_KEYS: dict[str, tuple[Knob, Codec]] = {
    **{lk: (k, k.codec) for k in KNOBS for lk in k.line_keys},
    "bufs": (KNOB_BY_KEY["slm"], BufsCodec()),
}
