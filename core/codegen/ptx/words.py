"""Per-lane access to a warp's register buffers: lane maps, lane predicates, words fetched from other
lanes with ``shfl.sync``, values packed into and out of 32-bit words."""
from __future__ import annotations

import numpy as np

from kdd.core.ir.types import Type, s32

from ..errors import CodegenUnsupported
from .lanes import LANES, ROW, affine, lane_fields
from .values import GrfBuf, Value


class LaneWords:
    """The register-buffer side of :class:`~.lower.PtxLowering` (``self.em``, ``self.lane``)."""

    # -- register buffer words ----------------------------------------------------------------
    def lane_offset(self, values, active: int) -> tuple[Value, int]:
        """``values`` per lane (lanes outside ``active`` are don't-care) as a register holding their
        shape (the values less their least, so never negative) plus that constant, which addresses take as an
        immediate. A shape is computed once per straight-line block (:meth:`.Emitter.calc`): slots and
        sends whose lane maps differ by a constant share its register."""
        k = min(values[ln] for ln in range(LANES) if active >> ln & 1)
        shape = tuple(values[ln] - k if active >> ln & 1 else 0 for ln in range(LANES))
        key = ("lane shape", shape, active)
        v = self.em.known.get(key)
        if v is None:
            v = self.em.known[key] = self._lane_shape(shape, active)
        return v, k

    def lane_value(self, values, active: int) -> Value:
        """Per lane, ``values[lane]`` (lanes outside ``active`` are don't-care), as an s32 operand: the
        block's register of its shape (:meth:`lane_offset`) plus the constant."""
        v, k = self.lane_offset(values, active)
        if v.imm is not None:
            return Value(str(v.imm + k), s32, v.imm + k)
        if not k:
            return v
        return Value(self.em.calc("r", f"add.s32 {{}}, {v.text}, {k}"), s32)

    def _lane_shape(self, values, active: int) -> Value:
        """Per lane, ``values[lane]`` as an s32 operand, from the lane id: an affine form, a sum of bit
        fields, else bit by bit."""
        em = self.em
        fit = affine(values, active)
        if fit is not None:
            a, c = fit
            if a == 0:
                return Value(str(c), s32, c)
            if (a, c) == (1, 0):
                return self.lane
            return Value(em.calc("r", f"mad.lo.s32 {{}}, {self.lane.text}, {a}, {c}"), s32)
        fields = lane_fields(values, active)
        if fields is not None:          # a sum of lane-id bit fields, each times a weight
            c, parts = fields
            acc = Value(str(c), s32, c)
            for low, width, weight in parts:
                t = em.calc("r", f"bfe.u32 {{}}, {self.lane.text}, {low}, {width}")
                if acc.imm == 0:
                    r = t if weight == 1 else em.calc("r", f"mul.lo.s32 {{}}, {t}, {weight}")
                else:
                    r = em.calc("r", f"mad.lo.s32 {{}}, {t}, {weight}, {acc.text}")
                acc = Value(r, s32)
            return acc
        # Otherwise the value bit by bit from per-bit lane masks.
        vals = [v if active >> ln & 1 else 0 for ln, v in enumerate(values)]
        acc = None
        for bit in range(max(vals).bit_length()):
            mask = sum(1 << ln for ln, v in enumerate(vals) if v >> bit & 1)
            if not mask:
                continue
            t = em.calc("r", f"shr.u32 {{}}, {mask}, {self.lane.text}")
            t = em.calc("r", f"and.b32 {{}}, {t}, 1")
            if bit:
                t = em.calc("r", f"shl.b32 {{}}, {t}, {bit}")
            acc = t if acc is None else em.calc("r", f"or.b32 {{}}, {acc}, {t}")
        return Value(acc, s32) if acc is not None else Value("0", s32, 0)

    def lane_pred(self, mask: int) -> str | None:
        """A predicate true in the lanes of ``mask`` (None for all lanes), once per straight-line block."""
        if mask == (1 << LANES) - 1:
            return None
        em = self.em
        lane = self.lane.text
        low = (mask & -mask).bit_length() - 1
        span = mask >> low
        if span & (span + 1) == 0:          # contiguous lanes low .. low + n - 1
            hi = low + span.bit_length()
            if low == 0:
                return em.calc("p", f"setp.lt.u32 {{}}, {lane}, {hi}")
            if hi == LANES:
                return em.calc("p", f"setp.ge.u32 {{}}, {lane}, {low}")
            q = em.calc("p", f"setp.ge.u32 {{}}, {lane}, {low}")
            return em.calc("p", f"setp.lt.and.u32 {{}}, {lane}, {hi}, {q}")
        t = em.calc("r", f"shr.u32 {{}}, {mask}, {lane}")
        t = em.calc("r", f"and.b32 {{}}, {t}, 1")
        return em.calc("p", f"setp.ne.u32 {{}}, {t}, 0")

    def and_pred(self, a: str | None, b: str | None) -> str | None:
        if a is None or b is None:
            return a or b
        p = self.em.new("p")
        self.em.op(f"and.pred {p}, {a}, {b}")
        return p

    def gather_word(self, buf: GrfBuf, src_byte, active: int) -> str:
        """Per lane, the 32-bit word holding byte ``src_byte[lane]`` of ``buf`` (fetched from its
        lane with ``shfl.sync.idx`` where that is another lane)."""
        src = np.asarray([b if active >> ln & 1 else -1 for ln, b in enumerate(src_byte)])
        rows = sorted({int(b) // ROW for b in src if b >= 0})
        owner = [int((b % ROW) // 4) if b >= 0 else 0 for b in src]
        local = all(owner[ln] == ln for ln in range(LANES) if src[ln] >= 0)
        idx = None if local else self.lane_value(owner, active)    # one source lane for every row
        out = None
        for r in rows:
            mask = sum(1 << ln for ln in range(LANES) if src[ln] >= 0 and src[ln] // ROW == r)
            if local:
                word = buf.row(r)
            else:
                word = self.em.new("r")
                self.em.op(f"shfl.sync.idx.b32 {word}, {buf.row(r)}, {idx.text}, 31, -1")
            if out is None:
                out = word
            else:
                p = self.lane_pred(mask)
                merged = self.em.new("r")
                self.em.op(f"selp.b32 {merged}, {word}, {out}, {p}")
                out = merged
        if out is None:
            out = self.em.new("r")
            self.em.op(f"mov.b32 {out}, 0")
        return out

    def bits_to_value(self, word: str, byte, t: Type) -> Value:
        """The ``t`` value at byte ``byte`` (an int, or a per-lane operand) of a 32-bit ``word``."""
        em = self.em
        size = 1 if t.is_bool else t.size
        if size == 4:
            if t.is_float:
                f = em.new("f")
                em.op(f"mov.b32 {f}, {word}")
                return Value(f, t)
            return Value(word, t)
        pos = byte * 8 if isinstance(byte, int) else byte
        r = em.new("r")
        signed = t.is_int and t.is_signed
        em.op(f"bfe.{'s' if signed else 'u'}32 {r}, {word}, {pos}, {size * 8}")
        if t.is_bool:
            p = em.new("p")
            em.op(f"setp.ne.u32 {p}, {r}, 0")
            return Value(p, t)
        if t.is_float:
            h = em.new("h")
            em.op(f"cvt.u16.u32 {h}, {r}")
            return Value(h, t)
        return Value(r, t)

    def value_bits(self, v: Value) -> str:
        """A 32-bit register whose low bits are ``v``'s storage bytes (bools as 0/1 bytes)."""
        em = self.em
        t = v.type
        if t.is_bool:
            r = em.new("r")
            em.op(f"selp.u32 {r}, 1, 0, {self.pred(v)}")
            return r
        if t.size == 8:
            raise CodegenUnsupported("64-bit values in register buffers have no PTX lowering yet")
        r = em.new("r")
        if t.is_float and t.size == 2:
            h = self.reg(v)
            em.op(f"cvt.u32.u16 {r}, {h}")
        else:
            em.op(f"mov.b32 {r}, {v.text}")
        return r

    def write_word(self, buf: GrfBuf, row: int, byte: int, size: int, bits: str, pred: str | None) -> None:
        dst = buf.row(row)
        if size == 4:
            self.em.op(f"mov.b32 {dst}, {bits}", pred)
        else:
            self.em.op(f"bfi.b32 {dst}, {bits}, {dst}, {byte * 8}, {size * 8}", pred)

    def grf_load(self, buf: GrfBuf, src_byte, active: int, t: Type) -> Value:
        """Per lane, the ``t`` value whose first byte is ``src_byte[lane]`` of ``buf``."""
        src = [b if active >> ln & 1 else -1 for ln, b in enumerate(src_byte)]
        used = [b for b in src if b >= 0]
        if used:
            self.reads(buf.name, min(used), max(used) + t.size)
        subs = sorted({b % 4 for b in src if b >= 0})
        out = None
        for sub in subs:
            mask = sum(1 << ln for ln, b in enumerate(src) if b >= 0 and b % 4 == sub)
            v = self.bits_to_value(self.gather_word(buf, src, mask), sub, t)
            out = v if out is None else self.select(self.lane_pred(mask), v, out)
        if out is None:
            raise CodegenUnsupported(f"a load from {buf.name} with no element in any lane")
        return out
