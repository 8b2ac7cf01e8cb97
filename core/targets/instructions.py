"""What each instruction kdd emits does: a one-line description, its operand types and the pipe it
issues to, for the Xe assembly, the PTX and the SASS ptxas makes of it (hover in the assembly views).

The descriptions are kdd's own words, written from these references (:data:`SOURCES`):

- Xe: Intel's Xe ISA as the Intel Graphics Compiler documents it (the vISA and IGA instruction
  references of intel/intel-graphics-compiler, and the Xe-HPG / Xe-HPC programmer's reference
  manuals' EU and LSC chapters); pipes as ``xe_asm.pipe`` gives them (seed 002's table); an Xe line
  read by ``xe_syntax``.
- PTX: NVIDIA's "Parallel Thread Execution ISA" (version 8.x), section 9.7 (instructions).
- SASS: NVIDIA's "CUDA Binary Utilities" (the Hopper instruction set table) for the meanings, and
  Nsight Compute's kernel profiling guide (its "Pipelines" section) for the pipe names.

PTX is a virtual ISA: its instructions issue nowhere themselves, so a PTX entry's pipe is the pipe of
the SASS it usually becomes on sm_90 (the hover shows the SASS each PTX line did become).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .xe_syntax import Instruction, parse_line

SOURCES = {
    "xe": "Intel Graphics Compiler: vISA and IGA instruction references; Xe-HPG/Xe-HPC PRM, EU and LSC chapters",
    "ptx": "NVIDIA PTX ISA 8.x, section 9.7 (docs.nvidia.com/cuda/parallel-thread-execution)",
    "sass": "NVIDIA CUDA Binary Utilities, Hopper instruction set; Nsight Compute profiling guide, Pipelines",
}


@dataclass(frozen=True)
class InstructionDoc:
    """One mnemonic of one ISA: what it does, what its operands are, where it issues."""

    isa: str
    mnemonic: str
    summary: str
    operands: str
    pipe: str

    def to_dict(self) -> dict:
        return {"isa": self.isa, "mnemonic": self.mnemonic, "summary": self.summary, "operands": self.operands,
                "pipe": self.pipe, "source": SOURCES[self.isa]}

    def markdown(self) -> str:
        return (f"**`{self.mnemonic}`** ({self.isa}): {self.summary}  \n"
                f"operands: {self.operands}  \npipe: {self.pipe}")


_ALU = "int or float (by the destination type)"

# Xe (IGA syntax). Keys are the mnemonic up to its first dot, or the first two parts where the second
# names a different operation (math.exp, sync.bar).
_XE = {
    "mov": ("copy the source to the destination, converting between the two types", "dst, src (any type)", _ALU),
    "add": ("lane-wise sum of two sources", "dst, src0, src1 (integer or float)", _ALU),
    "add3": ("lane-wise sum of three integer sources in one instruction", "dst, src0, src1, src2 (d/ud/w/uw)", "int"),
    "addc": ("integer add that also writes the carry out to the accumulator (the low half of a 64-bit add)",
             "dst, src0, src1 (ud), acc0 implicit", "int"),
    "mul": ("lane-wise product; with acc0 as destination, the low 32x16 part of a full 32-bit product",
            "dst, src0, src1", _ALU),
    "mach": ("multiply-accumulate high: the upper 32 bits of a 32x32 product, finishing a mul into acc0",
             "dst, src0, src1 (d/ud), acc0 implicit", "int"),
    "mad": ("fused multiply-add src1*src2 + src0 per lane", "dst, src0, src1, src2 (float or integer)", _ALU),
    "and": ("bitwise AND", "dst, src0, src1 (integer)", "int"),
    "or": ("bitwise OR", "dst, src0, src1 (integer)", "int"),
    "xor": ("bitwise exclusive OR", "dst, src0, src1 (integer)", "int"),
    "not": ("bitwise complement", "dst, src (integer)", "int"),
    "shl": ("shift left, zeros shifted in", "dst, src0, shift count (integer)", "int"),
    "shr": ("logical shift right, zeros shifted in", "dst, src0, shift count (unsigned integer)", "int"),
    "asr": ("arithmetic shift right, the sign bit shifted in", "dst, src0, shift count (signed integer)", "int"),
    "cmp": ("compare two sources per lane with the condition modifier (eq, ne, lt, le, gt, ge) into a flag",
            "(cond) flag, dst or null, src0, src1", _ALU),
    "sel": ("select per lane: src0 where the predicate (or condition) holds, else src1; min/max with (lt)/(ge)",
            "dst, src0, src1", _ALU),
    "math.exp": ("extended math: 2 to the power of the source (exp2), on the math box", "dst, src (f/hf)", "float"),
    "math.inv": ("extended math: reciprocal 1/x", "dst, src (f/hf)", "float"),
    "math.sqt": ("extended math: square root", "dst, src (f/hf)", "float"),
    "math": ("extended math function (exp, inv, sqt, log, ...) on the math box", "dst, src (f/hf)", "float"),
    "dp4a": ("4-element int8 dot product per lane added to an int32 accumulator",
             "dst, src0 (d), src1, src2 (packed 4 x b/ub)", "int"),
    "dpas": ("systolic matrix multiply-add on XMX: dst = src0 + src1 x src2, sdepth x rcount per instruction",
             "dst/src0 (f/d accumulators), src1 (B, packed), src2 (A, packed)", "xmx"),
    "dpasw": ("dpas with the A operand shared across a fused thread pair", "as dpas", "xmx"),
    "send": ("a raw message to a shared function (gateway: barriers and end of thread; fences)",
             "payload register(s), descriptors", "send"),
    "load": ("LSC load: global (ugm) or SLM (slm) memory into registers, block or scattered",
             "dst registers, [address registers] (a32/a64)", "send"),
    "store": ("LSC store: registers into global (ugm) or SLM (slm) memory", "[address registers], data registers",
              "send"),
    "load_block2d": ("LSC 2D block load: a rectangle of a 2D surface into registers (optionally transposed or "
                     "VNNI-packed)", "dst registers, [block header: base, width, height, pitch, x, y]", "send"),
    "atomic_fadd": ("LSC atomic float add to memory per lane", "dst or null, [addresses], data", "send"),
    "atomic_iadd": ("LSC atomic integer add to memory per lane", "dst or null, [addresses], data", "send"),
    "fence": ("LSC fence: earlier memory writes made visible before later accesses", "scope", "send"),
    "sync.bar": ("wait at the thread-group barrier until every thread signalled it", "null", "control"),
    "sync.nop": ("wait for the dependencies named in the software scoreboard", "null", "control"),
    "sync": ("synchronization (barrier wait, scoreboard wait)", "null", "control"),
    "jmpi": ("jump (all lanes together), optionally under a flag: loop back edges and skips", "label", "control"),
}

# PTX: keys are the opcode up to its first dot, or two or three parts for the compound opcodes.
_PTX = {
    "add": ("sum per lane (wrapping for integers, rounded for floats)", "d, a, b (.s32 .u32 .f32 ...)", "alu / fma"),
    "sub": ("difference per lane", "d, a, b", "alu / fma"),
    "mul": ("product per lane; .lo/.hi/.wide pick the low half, high half or the double-width result",
            "d, a, b", "fma (IMAD) / fmaheavy"),
    "mad": ("multiply-add a*b + c per lane; .lo/.hi/.wide as for mul", "d, a, b, c (integer)", "fma (IMAD)"),
    "fma": ("fused multiply-add a*b + c with one rounding", "d, a, b, c (.f32 .f16 .f64)", "fma"),
    "div": ("quotient (integers: truncating; floats: rounded or approximate)", "d, a, b", "several SASS instructions"),
    "abs": ("absolute value", "d, a", "alu / fma"),
    "neg": ("negation", "d, a", "alu / fma"),
    "min": ("smaller of two values", "d, a, b", "alu"),
    "max": ("larger of two values", "d, a, b", "alu"),
    "and": ("bitwise AND (also of predicates)", "d, a, b (.b32 .pred)", "alu (LOP3)"),
    "or": ("bitwise OR", "d, a, b (.b32 .pred)", "alu (LOP3)"),
    "xor": ("bitwise exclusive OR", "d, a, b (.b32 .pred)", "alu (LOP3)"),
    "not": ("bitwise complement", "d, a", "alu (LOP3)"),
    "shl": ("shift left", "d, a, b (.b32 .b64)", "alu (SHF) / fma (IMAD.SHL)"),
    "shr": ("shift right (arithmetic for .s types, logical otherwise)", "d, a, b", "alu (SHF)"),
    "bfe": ("extract a bit field (position, length), sign- or zero-extended", "d, a, pos, len", "alu"),
    "bfi": ("insert a bit field of a into b at (position, length)", "f, a, b, pos, len", "alu"),
    "selp": ("select a or b by a predicate", "d, a, b, p", "alu (SEL)"),
    "setp": ("compare and write a predicate (optionally combined with another)", "p[|q], a, b", "alu (ISETP/FSETP)"),
    "cvt": ("convert between types (rounding and saturation modifiers)", "d, a (.f16 .f32 .s32 ...)",
            "alu / xu (F2F, F2I, I2F)"),
    "cvta": ("convert a generic address to a state-space address (or back)", "d, a (.u64)", "alu"),
    "mov": ("copy a register, an immediate or a special register", "d, a", "alu / uniform"),
    "ld": ("load from a state space (.param .global .shared .local)", "d, [address]", "lsu"),
    "st": ("store to a state space", "[address], a", "lsu"),
    "ldmatrix": ("load 8x8 b16 matrices from shared memory into the fragments mma expects (.trans transposes)",
                 "{d0..d3}, [shared address]", "lsu (LDSM)"),
    "mma.sync": ("warp-wide matrix multiply-accumulate on the tensor cores (m16n8k16 for f16/bf16)",
                 "{d}, {a}, {b}, {c} (fragments)", "tensor (HMMA)"),
    "cp.async": ("asynchronous copy global -> shared, bypassing registers (.cg: 16 B, cached in L2 only); "
                 "commit_group / wait_group / wait_all order them", "[shared], [global], bytes", "lsu (LDGSTS)"),
    "cp.async.bulk": ("Hopper's tensor memory accelerator: .tensor.Nd (N = 2..5) copies a box of a tensor (its "
                      "tensor map, a kernel parameter encoded at launch) into shared memory through the map's "
                      "swizzle, zeros where the box leaves the tensor; the bytes complete on an mbarrier. "
                      ".tensor.Nd.global.shared::cta stores a box back (nothing written outside the tensor) as "
                      "a bulk group: .commit_group ends one, .wait_group.read N waits until at most N still "
                      "read shared memory",
                      "[shared], [tensor map, {x0, .., xN-1}], [mbarrier] | [tensor map, {..}], [shared]",
                      "tma (UTMALDG, UTMASTG)"),
    "mbarrier.init": ("initialize a transaction barrier in shared memory for N arrivals per phase", "[bar], N",
                      "lsu (SYNCS)"),
    "mbarrier.arrive": ("arrive at a transaction barrier; .expect_tx also adds the bytes the phase waits for",
                        "state, [bar][, bytes]", "lsu (SYNCS.ARRIVE)"),
    "mbarrier.try_wait": ("whether the barrier's phase of the given parity completed (loop until true)",
                          "p, [bar], parity", "lsu (SYNCS.PHASECHK)"),
    "wgmma.mma_async": ("warpgroup matrix multiply-accumulate (sm_90a): 4 warps, A and B from shared memory "
                        "through matrix descriptors, D in registers; asynchronous until wgmma.wait_group",
                        "{d}, desc-a, desc-b, scale-d, imm-scale-a, imm-scale-b, trans-a, trans-b",
                        "tensor (HGMMA)"),
    "wgmma.fence": ("order register accesses before the warpgroup MMAs that follow", "", "tensor (WARPGROUP.ARRIVE)"),
    "wgmma.commit_group": ("end the group of warpgroup MMAs issued since the last commit", "",
                           "tensor (WARPGROUP.DEPBAR)"),
    "wgmma.wait_group": ("wait until at most N groups of warpgroup MMAs are still running", "N",
                         "tensor (WARPGROUP.DEPBAR)"),
    "setmaxnreg": ("resize the warpgroup's registers per thread (.inc takes, .dec gives back; sm_90a)", "N",
                   "cbu"),
    "bar.sync": ("thread-block barrier: wait until every thread of the block arrives", "barrier id", "cbu (BAR)"),
    "bar": ("thread-block barrier", "barrier id", "cbu (BAR)"),
    "fence": ("memory fence: orders this thread's memory accesses at a scope", "(.cta .gpu .sys)", "lsu (MEMBAR)"),
    "atom": ("atomic read-modify-write, returning the old value", "d, [address], b", "lsu (ATOMG/ATOMS)"),
    "red": ("atomic reduction without a result", "[address], b", "lsu (RED)"),
    "shfl.sync": ("exchange registers between lanes of a warp (idx, up, down, bfly)", "d[|p], a, lane, clamp, mask",
                  "lsu (SHFL)"),
    "sqrt": ("square root", "d, a (.f32)", "xu (MUFU)"),
    "bra": ("branch (uniform with .uni), optionally under a predicate", "label", "cbu"),
    "ret": ("return from the kernel", "", "cbu"),
}

# SASS (sm_90, as nvdisasm prints it): keys are the opcode before its first dot.
_SASS = {
    "HMMA": ("half-precision matrix multiply-accumulate on the tensor cores", "Rd, Ra, Rb, Rc", "tensor"),
    "HGMMA": ("warpgroup half-precision matrix multiply-accumulate (wgmma), operands through shared-memory "
              "descriptors (gdesc)", "Rd, gdesc[URa], Rc", "tensor"),
    "WARPGROUP": ("warpgroup MMA ordering: .ARRIVE (wgmma.fence), .DEPBAR (wgmma.wait_group)", "", "tensor"),
    "R2UR": ("copy a register to a uniform register (an operand every lane shares: descriptors, addresses)",
             "URd, Ra", "alu"),
    "USETMAXREG": ("resize the warpgroup's registers per thread (setmaxnreg)", "count", "cbu"),
    "ELECT": ("elect one active lane of the warp into a predicate", "Pd, URd, mask", "alu"),
    "VOTEU": ("warp vote into a uniform register or predicate", "URd, Pa", "alu"),
    "FENCE": ("proxy or view fence (fence.proxy.async, fence.mbarrier_init)", "", "lsu"),
    "IABS": ("integer absolute value", "Rd, Ra", "alu"),
    "UISETP": ("uniform integer compare into a uniform predicate", "UPd, UPq, URa, URb, UPc", "uniform"),
    "ULOP3": ("uniform three-input bitwise function", "URd, URa, URb, URc, lut", "uniform"),
    "USGXT": ("uniform sign- or zero-extend from a bit position", "URd, URa, bits", "uniform"),
    "USHF": ("uniform funnel shift", "URd, URa, shift, URb", "uniform"),
    "UTMALDG": ("tensor memory accelerator load: a box of a tensor into shared memory (cp.async.bulk.tensor)",
                "[URa], [URb]", "tma"),
    "SYNCS": ("transaction-barrier operations (mbarrier): arrive, expect-tx, phase check", "[URa], Rb", "lsu"),
    "IMAD": ("integer multiply-add (also moves and shifts as .MOV, .SHL, .WIDE, .HI)", "Rd, Ra, Rb, Rc", "fmaheavy"),
    "IADD3": ("three-input integer add with carries", "Rd, Ra, Rb, Rc", "alu"),
    "VIADD": ("integer add of a register and an immediate", "Rd, Ra, imm", "alu"),
    "LOP3": ("any three-input bitwise function given by a lookup table", "Rd, Ra, Rb, Rc, lut", "alu"),
    "SHF": ("funnel shift of a register pair", "Rd, Ra, shift, Rb", "alu"),
    "SGXT": ("sign- or zero-extend from a bit position", "Rd, Ra, bits", "alu"),
    "LEA": ("shifted add for address arithmetic (a << s) + b", "Rd, Ra, Rb, shift", "alu"),
    "PRMT": ("permute bytes of two registers", "Rd, Ra, selector, Rb", "alu"),
    "SEL": ("select one of two registers by a predicate", "Rd, Ra, Rb, P", "alu"),
    "ISETP": ("integer compare into a predicate", "Pd, Pq, Ra, Rb, Pc", "alu"),
    "FSETP": ("float compare into a predicate", "Pd, Pq, Ra, Rb, Pc", "alu"),
    "FMNMX": ("float minimum or maximum", "Rd, Ra, Rb, P", "alu"),
    "IMNMX": ("integer minimum or maximum", "Rd, Ra, Rb, P", "alu"),
    "FFMA": ("fp32 fused multiply-add", "Rd, Ra, Rb, Rc", "fma"),
    "FADD": ("fp32 add", "Rd, Ra, Rb", "fma"),
    "FMUL": ("fp32 multiply", "Rd, Ra, Rb", "fma"),
    "MUFU": ("multi-function unit: reciprocal, sqrt, exp2, log2, sin, cos, tanh", "Rd, Ra", "xu"),
    "F2F": ("convert between float widths", "Rd, Ra", "xu"),
    "F2FP": ("convert and pack two floats into a 32-bit register of two halves", "Rd, Ra, Rb", "alu"),
    "F2I": ("convert float to integer", "Rd, Ra", "xu"),
    "I2F": ("convert integer to float", "Rd, Ra", "xu"),
    "MOV": ("copy a register or a constant", "Rd, Ra", "alu"),
    "CS2R": ("copy a special register (clock, or zero to a pair) to registers", "Rd, SR", "alu"),
    "S2R": ("read a special register (thread id, lane id, ...)", "Rd, SR", "adu"),
    "S2UR": ("read a special register into a uniform register", "URd, SR", "adu"),
    "LDC": ("load from constant memory (kernel parameters)", "Rd, c[bank][offset]", "lsu (IDC)"),
    "ULDC": ("load from constant memory into a uniform register", "URd, c[bank][offset]", "uniform"),
    "UMOV": ("uniform register copy", "URd, URa", "uniform"),
    "UIADD3": ("uniform three-input integer add", "URd, URa, URb, URc", "uniform"),
    "ULEA": ("uniform shifted add", "URd, URa, URb, shift", "uniform"),
    "LDG": ("load from global memory", "Rd, [Ra]", "lsu"),
    "STG": ("store to global memory", "[Ra], Rb", "lsu"),
    "LDS": ("load from shared memory", "Rd, [Ra]", "lsu"),
    "STS": ("store to shared memory", "[Ra], Rb", "lsu"),
    "LDSM": ("load 8x8 matrices from shared memory into tensor-core fragments (ldmatrix)", "Rd, [Ra]", "lsu"),
    "LDGSTS": ("asynchronous copy global -> shared (cp.async)", "[shared], [global]", "lsu"),
    "LDGDEPBAR": ("close a group of LDGSTS copies (cp.async.commit_group)", "", "lsu"),
    "DEPBAR": ("wait until at most N dependency groups are in flight (cp.async.wait_group)", "SB, N", "cbu"),
    "LDL": ("load from thread-local memory: a register spill reload", "Rd, [Ra]", "lsu"),
    "STL": ("store to thread-local memory: a register spill", "[Ra], Rb", "lsu"),
    "ATOMG": ("atomic on global memory returning the old value", "Rd, [Ra], Rb", "lsu"),
    "RED": ("atomic reduction on global memory", "[Ra], Rb", "lsu"),
    "REDG": ("atomic reduction on global memory", "[Ra], Rb", "lsu"),
    "SHFL": ("exchange registers between lanes of a warp", "Pd, Rd, Ra, lane, clamp", "lsu"),
    "BAR": ("thread-block barrier", "barrier id", "cbu"),
    "MEMBAR": ("memory barrier at a scope", "scope", "lsu"),
    "BRA": ("branch", "target", "cbu"),
    "EXIT": ("end of the thread", "", "cbu"),
    "NOP": ("no operation (padding)", "", "cbu"),
    "BSSY": ("push a convergence barrier for a divergent region", "B, target", "cbu"),
    "BSYNC": ("reconverge the warp at a convergence barrier", "B", "cbu"),
    "WARPSYNC": ("wait until the named lanes of the warp converge", "mask", "cbu"),
    "PLOP3": ("three-input logic on predicates", "Pd, Pq, Pa, Pb, Pc, lut", "alu"),
    "P2R": ("pack predicates into a register", "Rd, PR, Ra, mask", "alu"),
    "R2P": ("unpack a register into predicates", "PR, Ra, mask", "alu"),
}

_TABLES = {"xe": _XE, "ptx": _PTX, "sass": _SASS}
DOCS: dict[str, dict[str, InstructionDoc]] = {
    isa: {m: InstructionDoc(isa, m, *row) for m, row in table.items()} for isa, table in _TABLES.items()}

_PREDICATE = re.compile(r"^@!?%?\w+\s+")


def mnemonic(isa: str, text: str) -> str | None:
    """The opcode of one listing line (predicates and Xe's ``(W)`` head left out), or None for a comment,
    a label, a directive or a brace."""
    if isa == "xe":
        try:
            line = parse_line(text)
        except ValueError:
            return None
        return line.mnemonic if isinstance(line, Instruction) else None
    text = _PREDICATE.sub("", text.strip())
    if not text or text.startswith(("//", ".", "{", "}", "$")) or text.endswith(":"):
        return None
    word = text.split()[0].rstrip(";")
    return word or None


def lookup(isa: str, text: str) -> InstructionDoc | None:
    """The entry of the instruction on a listing line: its two-part name when the table has it (``math.exp``,
    ``cp.async``), else its first part (``load`` of ``load.ugm.d32x8.a64``)."""
    word = mnemonic(isa, text)
    if word is None:
        return None
    table = DOCS[isa]
    parts = word.split(".")
    return table.get(".".join(parts[:3])) or table.get(".".join(parts[:2])) or table.get(parts[0])
