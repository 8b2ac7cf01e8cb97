"""Lowering Hopper's IR functions (sm_90a): tensor copies, transaction barriers, warpgroup MMAs.

- ``tensor_load`` is ``cp.async.bulk.tensor.Nd`` (tile mode) issued by lane 0, its tensor map a kernel parameter
  (``.param .align 64 .b8 tmap_N[128]``, ``__grid_constant__`` in CUDA's words) that the launcher encodes
  with the driver's ``cuTensorMapEncodeTiled`` from :attr:`HopperLowering.tensor_maps`;
- ``tensor_store`` is the store form (``.global.shared::cta.bulk_group``) and a ``cp.async.bulk.commit_group``,
  both lane 0's (bulk groups are per thread); ``tensor_store.wait`` is lane 0's ``cp.async.bulk.wait_group.read``
  and a ``bar.warp.sync``, so that no lane writes the SLM before lane 0 knows the store read it;
- ``mbarrier.init`` / ``arrive.expect_tx`` run on lane 0; ``mbarrier.wait`` is a ``try_wait.parity`` loop
  that every lane runs;
- ``wgmma`` is ``wgmma.mma_async`` with shared-memory matrix descriptors (128-byte swizzle; A K-major,
  B N-major with ``imm-trans-b = 1`` or K-major with 0), after a ``wgmma.fence`` where the accumulators were touched since
  the last wait; ``wgmma.wait`` commits the group and waits with ``wgmma.wait_group``.

SLM buffers that tensor copies write or MMAs read are 1024-byte aligned (the swizzle's period).
"""
from __future__ import annotations

from kdd.core.ir.expr import IntImm
from kdd.core.ir.funcs import (HOPPER_FUNCS, MbarrierExpectTx, MbarrierInit, MbarrierWait, SetMaxNreg, TensorBox,
                               TensorLoad, TensorStore, TensorStoreWait, Wgmma, WgmmaWait)
from kdd.core.ir.stmt import FuncCall
from kdd.core.ir.types import s32, u32
from kdd.core.ir.visitor import walk

from ..errors import CodegenUnsupported

SWIZZLE_ALIGN = 1024
# Descriptor fields above the address: swizzle mode 1 (128 bytes) at bits 62-63; the stride byte offset
# (bits 32-45, in 16-byte units) is the 1024 bytes between 8-row groups.
_DESC_HIGH = (1 << 62) | ((SWIZZLE_ALIGN >> 4) << 32)
_PTX_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "f32"}
# cuTensorMapEncodeTiled's data types, by kdd type
TMA_DTYPES = {"f16": "FLOAT16", "bf16": "BFLOAT16", "f32": "FLOAT32"}


def hopper_buffers(body) -> tuple[set[str], bool]:
    """The SLM buffers that tensor copies write or read or warpgroup MMAs read, and whether ``body`` calls
    any Hopper function."""
    names, any_call = set(), False
    for s in walk(body):
        if isinstance(s, FuncCall) and isinstance(s.func, HOPPER_FUNCS):
            any_call = True
            ops = s.ops
            if isinstance(s.func, TensorBox):
                names.add(ops.slm.name)
            elif isinstance(s.func, Wgmma):
                names.update((ops.a.name, ops.b.name))
    return names, any_call


class HopperLowering:
    """Mixed into :class:`.lower.PtxLowering`: the Hopper functions' rules."""

    def hopper_entry(self) -> None:
        """Lane 0's predicate and the always-true MMA scale predicate, when the kernel has Hopper calls."""
        self.tma_slm, self.sm90a = hopper_buffers(self.body)
        self.tensor_maps: list[dict] = []
        self.wgmma_fenced = False
        if self.sm90a:
            self.lane0 = self.em.new("p")
            self.em.op(f"setp.eq.u32 {self.lane0}, {self.lane.text}, 0")
            self.true_pred = self.em.new("p")
            self.em.op(f"setp.eq.u32 {self.true_pred}, 0, 0")

    def hopper_call(self, call: FuncCall) -> bool:
        """Lower ``call`` if it is a Hopper function; whether it was."""
        f = call.func
        if not isinstance(f, HOPPER_FUNCS):
            return False
        self.flush()
        if isinstance(f, MbarrierInit):
            bar = self._shared_address(call.ops.bar, call.ops.bar_offset)
            self.em.op(f"mbarrier.init.shared::cta.b64 [{bar}], {f.count}", self.lane0)
            self.em.op("fence.mbarrier_init.release.cluster")
        elif isinstance(f, MbarrierExpectTx):
            bar = self._shared_address(call.ops.bar, call.ops.bar_offset)
            state = self.em.new("rd")
            if f.tx_bytes:
                self.em.op(f"mbarrier.arrive.expect_tx.shared::cta.b64 {state}, [{bar}], {f.tx_bytes}", self.lane0)
            else:
                self.em.op(f"mbarrier.arrive.shared::cta.b64 {state}, [{bar}]", self.lane0)
        elif isinstance(f, SetMaxNreg):
            # relative to the cap ptxas gives each thread at entry (.maxntid with .minnctapersm 1)
            threads = 32 * self.kernel.tg[0] * self.kernel.tg[1] * self.kernel.tg[2]
            entry = min(255, 65536 // threads) & ~7
            self.em.op(f"setmaxnreg.{'dec' if f.regs < entry else 'inc'}.sync.aligned.u32 {f.regs}")
        elif isinstance(f, MbarrierWait):
            self._wait(call)
        elif isinstance(f, TensorLoad):
            self._tensor_load(call)
        elif isinstance(f, TensorStore):
            self._tensor_store(call)
        elif isinstance(f, TensorStoreWait):
            self.em.op(f"cp.async.bulk.wait_group.read {f.pending}", self.lane0)
            self.em.op("bar.warp.sync -1")
        elif isinstance(f, Wgmma):
            self._wgmma(call)
        elif isinstance(f, WgmmaWait):
            self.em.op("wgmma.commit_group.sync.aligned")
            self.em.op(f"wgmma.wait_group.sync.aligned {f.pending}")
            self.wgmma_fenced = False
        return True

    def _shared_address(self, buf, off) -> str:
        """A u32 register holding the shared-window address of byte ``off`` of SLM buffer ``buf``."""
        if buf.name not in self.slm:
            raise CodegenUnsupported(f"{buf.name} is not a shared buffer")
        v = self.convert(self.ev(off), s32)
        base = self.slm[buf.name]
        if v.imm is not None:
            return self.em.calc("r", f"add.u32 {{}}, {self.smem}, {base + v.imm}")
        r = self.em.calc("r", f"add.u32 {{}}, {self.smem}, {self.reg(v)}")
        return self.em.calc("r", f"add.u32 {{}}, {r}, {base}") if base else r

    def _wait(self, call: FuncCall) -> None:
        bar = self._shared_address(call.ops.bar, call.ops.bar_offset)
        parity = self.reg(self.convert(self.ev(call.ops.parity), u32))
        em = self.em
        top = em.label("wait")
        em.place(top)
        done = em.new("p")
        em.op(f"mbarrier.try_wait.parity.shared::cta.b64 {done}, [{bar}], {parity}")
        em.op(f"bra.uni {top}", f"!{done}")

    def _tensor_map(self, f: TensorBox, ops) -> str:
        """The parameter of the tensor map of ``f``'s tensor and box (one per distinct map)."""
        entry = {"buffer": ops.mem.name, "dtype": TMA_DTYPES[f.type.scalar.short], "dims": list(f.dims),
                 "strides": list(f.strides), "box": list(f.box), "swizzle": f.swizzle}
        for m in self.tensor_maps:
            if {k: v for k, v in m.items() if k != "param"} == entry:
                return m["param"]
        entry["param"] = f"tmap_{len(self.tensor_maps)}"
        self.tensor_maps.append(entry)
        return entry["param"]

    def _box(self, call: FuncCall) -> tuple[str, str, str]:
        """The tensor map's generic address, the box's SLM address and its corner's registers."""
        f: TensorBox = call.func
        ops = call.ops
        if ops.mem.name not in self.globals:
            raise CodegenUnsupported(f"{f.NAME} copies {ops.mem.name}, not a kernel argument")
        param = self.em.calc("rd", f"mov.u64 {{}}, {self._tensor_map(f, ops)}")
        tmap = self.em.calc("rd", f"cvta.param.u64 {{}}, {param}")     # the map's generic address
        slm = self._shared_address(ops.slm, ops.slm_offset)
        corner = ", ".join(self.reg(self.convert(self.ev(e), s32))
                           for e in (ops.x0, ops.x1, ops.x2, ops.x3, ops.x4)[:f.rank])
        return tmap, slm, corner

    def _tensor_load(self, call: FuncCall) -> None:
        tmap, dst, corner = self._box(call)
        bar = self._shared_address(call.ops.bar, call.ops.bar_offset)
        self.em.op(f"cp.async.bulk.tensor.{call.func.rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                   f"[{dst}], [{tmap}, {{{corner}}}], [{bar}]", self.lane0)

    def _tensor_store(self, call: FuncCall) -> None:
        tmap, src, corner = self._box(call)
        self.em.op(f"cp.async.bulk.tensor.{call.func.rank}d.global.shared::cta.tile.bulk_group "
                   f"[{tmap}, {{{corner}}}], [{src}]", self.lane0)
        self.em.op("cp.async.bulk.commit_group", self.lane0)

    def _descriptor(self, buf, off, lead: int) -> str:
        """A 64-bit shared-memory matrix descriptor of the tile at byte ``off`` of ``buf``."""
        addr = self._shared_address(buf, off)
        em = self.em
        low = em.calc("r", f"bfe.u32 {{}}, {addr}, 4, 14")
        wide = em.calc("rd", f"cvt.u64.u32 {{}}, {low}")
        return em.calc("rd", f"or.b64 {{}}, {wide}, {_DESC_HIGH | ((lead >> 4) << 16)}")

    def _wgmma(self, call: FuncCall) -> None:
        f: Wgmma = call.func
        ops = call.ops
        at, bt, ct = (_PTX_TYPES.get(t.scalar.short) for t in (f.a_type, f.b_type, f.c_type))
        if None in (at, bt) or ct != "f32" or f.a_type != f.b_type:
            raise CodegenUnsupported(f"{f}: kdd's wgmma takes f16 or bf16 A and B and f32 accumulators")
        if ops.d.name not in self.grf or not isinstance(ops.d_offset, IntImm) or ops.d_offset.value % 128:
            raise CodegenUnsupported("wgmma D must be a register buffer at a whole-row offset")
        buf = self.grf[ops.d.name]
        r0, n = ops.d_offset.value // 128, f.n // 2
        self.reads(buf.name, r0 * 128, (r0 + n) * 128)
        self.writes(buf.name, r0 * 128, (r0 + n) * 128)
        a = self._descriptor(ops.a, ops.a_offset, 16)
        b = self._descriptor(ops.b, ops.b_offset, f.b_block if f.b_major == "n" else 16)
        if not self.wgmma_fenced:       # the accumulators' registers were written outside the MMAs
            self.em.op("wgmma.fence.sync.aligned")
            self.wgmma_fenced = True
        regs = ", ".join(buf.row(r0 + i) for i in range(n))
        self.em.op(f"wgmma.mma_async.sync.aligned.m64n{f.n}k16.f32.{at}.{bt} {{{regs}}}, {a}, {b}, "
                   f"{self.true_pred}, 1, 1, 0, {1 if f.b_major == 'n' else 0}")
