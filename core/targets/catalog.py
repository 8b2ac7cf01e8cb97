"""The targets kdd knows, with their published figures, and ``get_target``.

Each figure's ``source`` says where it comes from. Peak rates are either the
vendor's published number or derived as ``cores x ops/clock/core x clock``
from the vendor's per-clock figures; the source says which.
"""
from __future__ import annotations

from dataclasses import replace

from kdd.core.ir.types import Type, bf16, f16, f32, f64, s8, s32, u8

from .target import (Addressing, Block2D, Device, Figure, FmaShape, FusedIntOps, Int64, Lanes, MessageLimits, Peak,
                     RegisterFile, SharedMemory, Target, XeIsa)
from .xe_asm import FLAGS

KIB = 1024
_INT8 = ((s8, s8), (s8, u8), (u8, s8), (u8, u8))
_ONEDNN_RESERVED = (
    "oneDNN conv generator reserved_regs_default = 16: kernel arguments, local work IDs/sizes, "
    "signal header, temporary expressions"
)
# LSC vector sizes of non-transposed (scattered) messages: the descriptor encodes 1-4, 8, 16, 32, 64, but
# 16 and more are transposed-only (IGC's LSC legalization: "Non-transposed LSC instruction vector size is
# too large"); d8/d16 data is moved as d8u32/d16u32 one element per lane.
_LSC_VECTORS = (1, 2, 3, 4, 8)
_XEHPC_BLOCK2D = Block2D(
    elem_bytes=(1, 2, 4, 8), min_row_bytes=4, max_row_bytes=64, max_height=32, arrays=(1, 2, 4),
    max_array_bytes=8, base_align=64, pitch_align=16, min_pitch=64, min_width=64, max_surface=1 << 24, max_regs=31,
    source="Xe-HPC load_block2d (oneDNN nGEN block_2d and its GEMM generator): header = 64-bit base, surface "
           "width-1 / height-1 / pitch-1 (bytes, rows), block x (elements) / y (rows), width-1 | height-1 << 8 | "
           "array-1 << 16; width x array <= 64 bytes a row, height <= 32, array x element <= 8 bytes; base 64-byte "
           "aligned (128 on early steppings, not modelled), pitch >= 64 bytes in 16-byte steps, surface width "
           "dword-aligned; rows padded to a power of two in registers, array blocks GRF-aligned; elements outside "
           "the surface read as zero; the descriptor's response length is 5 bits: at most 31 registers (iga64 "
           "refuses `load_block2d.ugm.d16.a64 (1|M0) r10:32` with 'payload size overflow')")
_XE_FUSED_INT_OPS = FusedIntOps(
    ("add3", "mad"), max_bits=32, imm_bits=16, imm_operands=(0, 2),
    source="Xe ISA: add3 (three-source add) and integer mad on Xe-HP and later, on dwords; a ternary "
           "immediate is 16 bits in src0 or src2 (iga64 rejects 0x62000:d: GED_SetSrc2TernaryImm)")


# -- Xe -------------------------------------------------------------------------------------

_IGA = {f16: "hf", bf16: "bf", s8: "b", u8: "ub", f32: "f", f64: "df", s32: "d"}


# Xe-HPG and Xe-HPC dpas: systolic depth 8 (each stage consumes one dword per channel), repeat count
# up to 8 (rows of src2). Xe-HPC's tf32 form (iga64 -p=12p72 ``:tf32`` sources; 12p71 rejects them,
# GED_SetSrc1Precision) takes one f32 per dword, so K = 8 per instruction.
DPAS_DEPTH, DPAS_REPEAT = 8, 8


def _dpas(fma: str, exec_size: int, a: Type, b: Type, acc: Type, math: str = "") -> FmaShape:
    # k = depth * (4 bytes / element).
    depth, rcount = DPAS_DEPTH, DPAS_REPEAT
    elem = 4 if math == "tf32" else a.size
    src = {a: "tf32"} if math == "tf32" else _IGA
    spelling = f"{fma}.{depth}x{rcount} ({exec_size}|M0) :{_IGA[acc]} :{_IGA[acc]} :{src[b]} :{src[a]}"
    return FmaShape(fma, a, b, acc, m=rcount, n=exec_size, k=depth * 4 // elem, simd=exec_size,
                    spelling=spelling, math=math, depth=depth)


def _xe_vector(fma: str, simd: int, a: Type, b: Type, acc: Type) -> FmaShape:
    # mad: one MAC per lane (k=1); dp4a: a 4-element dot product per lane (k=4).
    k = 4 if fma == "dp4a" else 1
    spelling = f"{fma} ({simd}|M0) :{_IGA[acc]} :{_IGA[acc]} :{_IGA[a]} :{_IGA[b]}"
    return FmaShape(fma, a, b, acc, 1, simd, k, simd, spelling)


def _xe_fmas(dpas_simd: int, simds: tuple[int, ...], dpasw: bool, tf32: bool, fp64: bool) -> tuple[FmaShape, ...]:
    dpas_types = [(f16, f16, f32), (bf16, bf16, f32)] + [(a, b, s32) for a, b in _INT8]
    kinds = ("dpas", "dpasw") if dpasw else ("dpas",)
    shapes = [_dpas(kind, dpas_simd, a, b, acc) for kind in kinds for a, b, acc in dpas_types]
    if tf32:
        shapes.append(_dpas("dpas", dpas_simd, f32, f32, f32, math="tf32"))
    # f16 mad in mixed mode (f16 sources, f32 accumulator), as the builder generates it; 8-bit integer
    # sources of either signedness, mixed included, into an s32 accumulator.
    mad_types = [(f32, f32, f32), (f16, f16, f32), (bf16, bf16, f32)] + ([(f64, f64, f64)] if fp64 else []) \
        + [(a, b, s32) for a, b in _INT8]
    for simd in simds:
        shapes += [_xe_vector("mad", simd, a, b, acc) for a, b, acc in mad_types]
        shapes += [_xe_vector("dp4a", simd, a, b, s32) for a, b in _INT8]
    return tuple(shapes)


def _xe_peaks(cores: int, clock_ghz: float, per_clock: dict[tuple[str, str], int], source: str) -> tuple[Peak, ...]:
    return tuple(
        Peak(engine, dtype, Figure(cores * ops * clock_ghz * 1e9, "op/s",
                                   f"derived: {cores} Xe-cores x {ops} {dtype} ops/clk/Xe-core ({engine}) "
                                   f"x {clock_ghz} GHz; {source}"))
        for (engine, dtype), ops in per_clock.items()
    )


XEHPG = Target(
    name="xehpg",
    title="Intel Xe-HPG (Arc A-series, DG2)",
    isa="xe",
    registers=RegisterFile(
        reg_bytes=32, lane_bytes=None, modes=(128, 256), min_regs=128, max_regs=256, granularity=1,
        core_bytes=16 * 8 * 128 * 32, reserved=16,
        source="32-byte GRF; 128 GRFs per thread, 256 in large-GRF mode (oneDNN: large GRF from Xe-HP on); "
               "16 XVE per Xe-core x 8 threads x 128 GRF x 32 B",
        reserved_source=_ONEDNN_RESERVED,
    ),
    simd_widths=(8, 16),
    default_simd=16,
    fma_shapes=_xe_fmas(dpas_simd=8, simds=(8, 16), dpasw=True, tf32=False, fp64=False),
    fma_preference=("dpas", "dp4a", "mad"),
    slm=SharedMemory(per_group=64 * KIB, per_core=128 * KIB,
                     source="oneDNN device_info: 128 KiB SLM per Xe-core, at most 64 KiB per work-group on Xe-HPG"),
    max_group_items=1024,
    large_grf_halves_group=True,
    messages=MessageLimits(block=8 * 32, scattered_lanes=16, global_address_bits=64, shared_address_bits=32,
                           prefetch=True, vectors=_LSC_VECTORS, vector_bytes=(4, 8),
                           source="LSC on Xe-HPG: transposed block messages up to d32x64t (256 B); scattered "
                                  "messages of up to SIMD16 addresses, each moving a vector of 1, 2, 3, 4 or 8 "
                                  "d32/d64 elements (16 and more only transposed); A64 global, A32 SLM addresses"),
    lanes=Lanes(fixed=None, alu=16, source="Xe-HPG: the simd knob picks 8 or 16 lanes; SIMD16 dword ALU"),
    int64=Int64(native=False, emulated=("ADD",),
                source="Xe-HPG has no 64-bit integer ALU: kdd's Xe generator emulates a 64-bit add of a "
                       "32-bit offset (addc) and conversions, nothing else"),
    addressing=Addressing("header", "Xe-HPG send messages read their address payload from GRF (no immediate "
                                    "offset on LSC/HDC messages)"),
    fused_int_ops=_XE_FUSED_INT_OPS,
    assembler=("iga64", "-a", "-p=12p71", "-Xauto-deps", "-Wall"),
    xe=XeIsa(iga_platform="12p71", flags=tuple(FLAGS), native_int64=False,
             max_exec=16, grf_banks=2, eot_regs=16, min_message_lanes=8,
             source="Xe-HPG (DG2): two 32-bit flag registers; no 64-bit integer ALU and no 2D block "
                    "messages (oneDNN nGEN: emulation and block 2D from XeHPC); SIMD16 dword ALU over two "
                    "32-byte GRFs; EOT payload in r112-r127; a scattered message's address payload is "
                    "SIMD8 at least (iga64 -Wall: a SIMD4 A64 address takes 2 GRFs)"),
    devices=(
        Device(
            name="Arc A770 16GB", cores=32, core_name="Xe-core",
            clock_mhz=Figure(2100, "MHz", "Intel ARK, Arc A770: graphics clock 2100 MHz (boards boost to 2400)"),
            bandwidth=Figure(560e9, "B/s", "Intel ARK, Arc A770 16GB: 560 GB/s GDDR6 (256-bit, 17.5 Gbps)"),
            peaks=_xe_peaks(32, 2.1, {
                ("vector", "f32"): 16 * 16, ("vector", "f16"): 16 * 32, ("vector", "s8"): 16 * 64,
                ("matrix", "f16"): 16 * 128, ("matrix", "bf16"): 16 * 128, ("matrix", "s8"): 16 * 256,
            }, "per-engine rates from Intel's 'Introduction to the Xe-HPG Architecture' (XVE: 16 FP32 / "
               "32 FP16 / 64 INT8 ops/clk; XMX: 128 FP16/BF16, 256 INT8 ops/clk; 16 of each per Xe-core)"),
            compute_units=Figure(512, "compute units", "SYCL's max_compute_units on Intel GPUs counts vector "
                                                       "engines: 32 Xe-cores x 16 XVE"),
        ),
    ),
)

XEHPC = Target(
    name="xehpc",
    title="Intel Xe-HPC (Data Center GPU Max, Ponte Vecchio)",
    isa="xe",
    registers=RegisterFile(
        reg_bytes=64, lane_bytes=None, modes=(128, 256), min_regs=128, max_regs=256, granularity=1,
        core_bytes=8 * 8 * 128 * 64, reserved=16,
        source="64-byte GRF; 128 GRFs per thread, 256 in large-GRF mode (4 threads per XVE); "
               "8 XVE per Xe-core x 8 threads x 128 GRF x 64 B; dpas kernels default to large GRF",
        reserved_source=_ONEDNN_RESERVED, large_for=("dpas",),
    ),
    simd_widths=(8, 16, 32),
    default_simd=16,
    fma_shapes=_xe_fmas(dpas_simd=16, simds=(8, 16, 32), dpasw=False, tf32=True, fp64=True),
    fma_preference=("dpas", "dp4a", "mad"),
    slm=SharedMemory(per_group=128 * KIB, per_core=128 * KIB,
                     source="oneDNN device_info: 128 KiB SLM per Xe-core, all of it available to one work-group"),
    max_group_items=1024,
    large_grf_halves_group=True,
    messages=MessageLimits(block=8 * 64, scattered_lanes=32, global_address_bits=64, shared_address_bits=32,
                           prefetch=True, vectors=_LSC_VECTORS, vector_bytes=(4, 8),
                           source="LSC on Xe-HPC: block messages up to 512 B; scattered messages of up to "
                                  "SIMD32 addresses, each moving a vector of 1, 2, 3, 4 or 8 d32/d64 elements; "
                                  "A64 global, A32 SLM addresses",
                           block2d=_XEHPC_BLOCK2D),
    lanes=Lanes(fixed=None, alu=32, source="Xe-HPC: the simd knob picks 8, 16 or 32 lanes (oneDNN's f64 lines run "
                                           "SIMD8: 8 doubles are one 64-byte GRF); SIMD32 dword ALU"),
    int64=Int64(native=True, emulated=(), source="Xe-HPC has a 64-bit integer ALU"),
    addressing=Addressing("header", "Xe-HPC send messages read their address payload from GRF"),
    fused_int_ops=_XE_FUSED_INT_OPS,
    assembler=("iga64", "-a", "-p=12p72", "-Xauto-deps", "-Wall"),
    xe=XeIsa(iga_platform="12p72", flags=tuple(FLAGS), native_int64=True,
             max_exec=32, grf_banks=2, eot_regs=16, min_message_lanes=16,
             source="Xe-HPC (PVC): 64-bit integer ALU and 2D block messages (oneDNN nGEN hw >= XeHPC); "
                    "SIMD32 dword ALU over two 64-byte GRFs; EOT payload in the last 16 GRFs; a scattered "
                    "message's address payload is SIMD16 at least (iga64 -p=12p72 -Wall: a SIMD1 or SIMD8 A64 address "
                    "takes 2 GRFs, 'Src0.Length: should be 2'); iga64 -p=12p72 rejects a byte source of a "
                    "ternary instruction at an odd byte (GED_SetSrc1SubRegNum / GED_SetSrc2SubRegNum)",
             ternary_byte_align=2),
    devices=(
        Device(
            name="Data Center GPU Max 1550", cores=128, core_name="Xe-core",
            clock_mhz=Figure(1600, "MHz", "Intel ARK, Max 1550: max dynamic frequency 1600 MHz"),
            bandwidth=Figure(3.2768e12, "B/s", "Intel ARK, Max 1550: 3.2768 TB/s HBM2e"),
            peaks=_xe_peaks(128, 1.6, {
                ("vector", "f64"): 256, ("vector", "f32"): 256, ("vector", "f16"): 512,
                ("matrix", "tf32"): 2048, ("matrix", "f16"): 4096, ("matrix", "bf16"): 4096,
                ("matrix", "s8"): 8192,
            }, "per-Xe-core rates from Intel's Ponte Vecchio Hot Chips 33 talk (8 XVE x 512-bit, "
               "8 XMX x 4096-bit per Xe-core)"),
            compute_units=Figure(1024, "compute units", "SYCL's max_compute_units on Intel GPUs counts vector "
                                                        "engines: 128 Xe-cores x 8 XVE"),
        ),
    ),
)


# Xe2-HPG (Battlemage, Arc B-series) keeps Xe-HPC's thread model: 64-byte GRFs, SIMD16 dpas of
# depth 8, LSC with 2D block messages, a 64-bit integer add. iga64 learned it as platform "2"
# (IGC 2.x; Debian's libigc2-tools, which tools/setup.sh unpacks as iga64-xe2).
_XE2_BLOCK2D = replace(_XEHPC_BLOCK2D, source=(
    "Xe2 keeps Xe-HPC's 2D block messages (oneDNN nGEN: block 2D for hw >= XeHPC; iga64 -p=2 "
    "assembles load_block2d.ugm.d16.a64 with the same descriptor fields); " + _XEHPC_BLOCK2D.source))

XE2 = Target(
    name="xe2",
    title="Intel Xe2-HPG (Arc B-series, Battlemage)",
    isa="xe",
    registers=RegisterFile(
        reg_bytes=64, lane_bytes=None, modes=(128, 256), min_regs=128, max_regs=256, granularity=1,
        core_bytes=8 * 8 * 128 * 64, reserved=16,
        source="64-byte GRF (iga64 -p=2: SIMD16 f32 is one register, as on Xe-HPC); 128 GRFs per thread, "
               "256 in large-GRF mode (oneDNN device_info: 8 threads per XVE, 4 with large GRF, for Xe2 as "
               "Xe-HPC); 8 XVE per Xe-core (Intel, Xe2 architecture: 8 512-bit vector engines and 8 2048-bit "
               "XMX engines per Xe-core) x 8 threads x 128 GRF x 64 B; dpas kernels default to large GRF",
        reserved_source=_ONEDNN_RESERVED, large_for=("dpas",),
    ),
    simd_widths=(16, 32),
    default_simd=16,
    fma_shapes=_xe_fmas(dpas_simd=16, simds=(16, 32), dpasw=False, tf32=False, fp64=False),
    fma_preference=("dpas", "dp4a", "mad"),
    slm=SharedMemory(per_group=128 * KIB, per_core=128 * KIB,
                     source="oneDNN device_info: max_slm_size 128 KiB per Xe-core for xe2, all of it "
                            "available to one work-group (only xe_hp/xe_hpg cap a group at 64 KiB)"),
    max_group_items=1024,
    large_grf_halves_group=True,
    messages=MessageLimits(block=8 * 64, scattered_lanes=32, global_address_bits=64, shared_address_bits=32,
                           prefetch=True, vectors=_LSC_VECTORS, vector_bytes=(4, 8),
                           source="LSC on Xe2 as on Xe-HPC: block messages up to 512 B (d64x64t); scattered messages of up to SIMD32 addresses, vectors of "
                                  "1, 2, 3, 4 or 8 d32/d64 elements; A64 global, A32 SLM addresses",
                           block2d=_XE2_BLOCK2D),
    lanes=Lanes(fixed=None, alu=32, source="Xe2: SIMD16 XVE (512-bit) ALUs; a dword instruction covers 32 "
                                           "lanes over two 64-byte GRFs, as on Xe-HPC; SIMD8 is gone (the "
                                           "native width is 16)"),
    int64=Int64(native=True, emulated=(), source="oneDNN nGEN EmulationStrategy: from XeHPC on (Xe2 "
                                                 "included) 64-bit add is native; only DWxDW->QW multiply "
                                                 "and QW logic are emulated"),
    addressing=Addressing("header", "Xe2 send messages read their address payload from GRF"),
    fused_int_ops=_XE_FUSED_INT_OPS,
    assembler=("iga64-xe2", "-a", "-p=2", "-Xauto-deps", "-Wall"),
    xe=XeIsa(iga_platform="2", flags=("f0.0", "f0.1", "f1.0", "f1.1"), native_int64=True,
             max_exec=32, grf_banks=2, eot_regs=16, min_message_lanes=16,
             source="Xe2 (iga64 -p=2, IGC 2.x): 64-byte GRFs, SIMD32 dword ALU over two of them, 2D block "
                    "messages and a 64-bit add (oneDNN nGEN hw >= XeHPC); EOT payload in the last 16 GRFs; "
                    "a scattered message's address payload is SIMD16 at least, as on Xe-HPC",
             ternary_byte_align=2),
    devices=(
        Device(
            name="Arc B580", cores=20, core_name="Xe-core",
            clock_mhz=Figure(2900, "MHz", "seed 002 (the B580 optimization log): '20 Xecores @ 2.9G', its "
                                          "roofline 2.9G x 20 x 8 x 32 x 4 x 2 = 118 T/s; Intel ARK lists a "
                                          "2670 MHz graphics clock, boards boost to about 2.85-2.9 GHz"),
            bandwidth=Figure(456e9, "B/s", "Intel ARK, Arc B580: 456 GB/s (12 GB GDDR6, 192-bit, 19 Gbps)"),
            peaks=_xe_peaks(20, 2.9, {
                ("vector", "f32"): 8 * 16 * 2, ("vector", "f16"): 8 * 32 * 2,
                ("matrix", "f16"): 8 * 256, ("matrix", "bf16"): 8 * 256, ("matrix", "s8"): 8 * 512,
            }, "per-engine rates from Intel's Xe2 architecture (8 XVE of SIMD16 FMA per Xe-core, FP16 at "
               "twice FP32; 8 XMX per Xe-core, 256 FP16/BF16 and 512 INT8 ops/clk each); the seed's roofline "
               "counts the same 2048 FP16 ops/clk/Xe-core; Intel ARK's 233 INT8 TOPS is 20 x 4096 x 2.85 GHz"),
        ),
    ),
)


# -- NVIDIA Hopper --------------------------------------------------------------------------

ROW, COL = 0, 1


def _mma_fragments(a: Type, b: Type) -> tuple:
    """PTX ISA, mma.m16n8k16 / m16n8k32 fragments (groupID = lane / 4, tig = lane % 4, e = 4 / size):
    a_i of a lane: row groupID (+8 in odd registers), col tig*e + i (+k/2 in registers 2, 3);
    b_i: row tig*e + i (+k/2 in register 1), col groupID; c0, c1: row groupID, cols 2*tig + 0/1,
    c2, c3: row groupID + 8."""
    ea, eb = 4 // a.size, 4 // b.size
    return (("a", ((COL, ea, 1), (COL, 4, ea), (ROW, 8, 4 * ea), (ROW, 2, 32 * ea), (COL, 2, 64 * ea))),
            ("b", ((ROW, eb, 1), (ROW, 4, eb), (COL, 8, 4 * eb), (ROW, 2, 32 * eb))),
            ("c", ((COL, 2, 32), (COL, 4, 1), (ROW, 8, 4), (ROW, 2, 64))))


def _mma(m: int, n: int, k: int, a: Type, b: Type, acc: Type, math: str = "") -> FmaShape:
    names = {f16: "f16", bf16: "bf16", s8: "s8", u8: "u8", f32: "f32", f64: "f64", s32: "s32"}
    ab = (math, math) if math else (names[a], names[b])
    spelling = f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{names[acc]}.{ab[0]}.{ab[1]}.{names[acc]}"
    frags = _mma_fragments(a, b) if (m, n) == (16, 8) and not math else ()
    return FmaShape("mma", a, b, acc, m, n, k, 32, spelling, math, fragments=frags)


SM90_FMAS = (
    _mma(16, 8, 16, f16, f16, f32), _mma(16, 8, 16, bf16, bf16, f32), _mma(16, 8, 16, f16, f16, f16),
    *(_mma(16, 8, 32, a, b, s32) for a, b in _INT8),
    _mma(16, 8, 8, f32, f32, f32, math="tf32"),
    _mma(8, 8, 4, f64, f64, f64),
    FmaShape("fma", f32, f32, f32, 1, 32, 1, 32, "fma.rn.f32"),
    # f16/bf16 sources widened exactly (cvt.f32.f16; bf16 is an f32's top half) into an f32 fma, as Xe's mixed-mode mad
    FmaShape("fma", f16, f16, f32, 1, 32, 1, 32, "cvt.f32.f16 + fma.rn.f32"),
    FmaShape("fma", bf16, bf16, f32, 1, 32, 1, 32, "shl.b32 16 + fma.rn.f32"),
    FmaShape("fma", f64, f64, f64, 1, 32, 1, 32, "fma.rn.f64"),
)

_H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5"


def _hopper_peaks() -> tuple[Peak, ...]:
    # Dense (no sparsity) figures. NVIDIA computes tensor rates at 1830 MHz and
    # FP32/FP64 FMA rates at 1980 MHz (132 SMs).
    rows = (
        ("vector", "f64", 33.5e12, "132 SMs x 64 FP64 FMA x 2 x 1.98 GHz"),
        ("vector", "f32", 66.9e12, "132 SMs x 128 FP32 FMA x 2 x 1.98 GHz"),
        ("matrix", "f64", 66.9e12, "FP64 tensor core"),
        ("matrix", "tf32", 494.7e12, "dense; 132 SMs x 2048 ops/clk x 1.83 GHz"),
        ("matrix", "f16", 989.4e12, "dense, FP32 accumulate; 132 SMs x 4096 ops/clk x 1.83 GHz"),
        ("matrix", "bf16", 989.4e12, "dense, FP32 accumulate"),
        ("matrix", "s8", 1978.9e12, "dense; 132 SMs x 8192 ops/clk x 1.83 GHz"),
    )
    note = "; reaching it needs wgmma (sm_90a): mma.sync (fma=mma) reaches a fraction of it"
    return tuple(Peak(e, d, Figure(v, "op/s", f"{_H100_WP}: {why}" + (note if e == "matrix" else "")))
                 for e, d, v, why in rows)


SM90 = Target(
    name="sm_90",
    title="NVIDIA Hopper (H100 / H200)",
    isa="ptx",
    registers=RegisterFile(
        reg_bytes=32 * 4, lane_bytes=4, modes=(), min_regs=16, max_regs=255, granularity=8,
        core_bytes=65536 * 4, reserved=8,
        source="CUDA C Programming Guide, compute capability 9.0: 64K 32-bit registers per SM, at most 255 "
               "per thread; occupancy calculator: 256-register warp allocation unit (8 per thread)",
        reserved_source="kdd estimate: thread/block indices, loop counters and bounds kept in registers",
    ),
    simd_widths=(32,),
    default_simd=32,
    default_group=(2, 2),
    fma_shapes=SM90_FMAS,
    fma_preference=("mma", "fma"),
    slm=SharedMemory(per_group=227 * KIB, per_core=228 * KIB,
                     source="CUDA C Programming Guide, compute capability 9.0: 228 KiB shared memory per SM, "
                            "227 KiB per block (opt-in)"),
    max_group_items=1024,
    large_grf_halves_group=False,
    messages=MessageLimits(block=32 * 16, scattered_lanes=32, global_address_bits=64, shared_address_bits=32,
                           prefetch=False, vectors=(1, 2, 4), vector_bytes=(4,), source="PTX: ld/st.v4.b32 per lane, 16 B x 32 lanes per warp; 64-bit generic/global "
                                  "and 32-bit shared-window addresses; kdd stages through shared memory "
                                  "(cp.async) instead of prefetching"),
    lanes=Lanes(fixed=32, alu=32, source="a warp is 32 lanes; one instruction covers the warp"),
    int64=Int64(native=True, emulated=(), source="PTX has 64-bit integer arithmetic (.s64/.u64)"),
    addressing=Addressing("reg", "PTX ld/st/cp.async address operands are [reg], [reg+imm] or [imm]"),
    fused_int_ops=FusedIntOps(("mad",), max_bits=64, imm_bits=64, imm_operands=(0, 1, 2),
                              source="PTX has mad.lo (any operand an immediate of the type) but no three-input "
                                     "add (ptxas forms IADD3 itself)"),
    assembler=("ptxas", "-arch=sm_90"),
    devices=(
        Device(
            name="H200 SXM", cores=132, core_name="SM",
            clock_mhz=Figure(1980, "MHz", f"{_H100_WP}; H200 has H100 SXM5's compute (NVIDIA's H200 datasheet "
                                          "lists the same peak rates)"),
            bandwidth=Figure(4.8e12, "B/s", "NVIDIA H200 datasheet: 141 GB HBM3e at 4.8 TB/s"),
            peaks=_hopper_peaks(),
            compute_units=Figure(132, "compute units", "SYCL's CUDA backend reports the SM count as "
                                                       "max_compute_units: 132 SMs"),
        ),
        Device(
            name="H100 SXM", cores=132, core_name="SM",
            clock_mhz=Figure(1980, "MHz", f"{_H100_WP}: 1.98 GHz (FP32/FP64 rates), 1.83 GHz for tensor rates"),
            bandwidth=Figure(3.35e12, "B/s", "NVIDIA H100 datasheet, SXM: 80 GB HBM3 at 3.35 TB/s"),
            peaks=_hopper_peaks(),
            compute_units=Figure(132, "compute units", "SYCL's CUDA backend reports the SM count as "
                                                       "max_compute_units: 132 SMs"),
        ),
    ),
)

TARGETS: dict[str, Target] = {t.name: t for t in (XEHPG, XEHPC, XE2, SM90)}


class UnknownTargetError(KeyError):
    """Raised for a target name kdd does not know; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def get_target(name: str) -> Target:
    """The target called ``name`` (``xehpg``, ``xehpc``, ``xe2``, ``sm_90``)."""
    try:
        return TARGETS[name]
    except KeyError:
        from difflib import get_close_matches  # only for a misspelt name

        close = get_close_matches(name, TARGETS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise UnknownTargetError(
            f"unknown target '{name}' (known: {', '.join(TARGETS)}){hint}") from None
