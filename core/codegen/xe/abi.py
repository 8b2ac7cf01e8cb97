"""The kernel ABI on Xe: where the thread payload puts what the kernel reads at start.

As oneDNN's ``kernel_arg_info_t`` names the arguments and their IR variables,
this table places them in the payload registers a thread starts with:

- ``r0``: the thread header; ``group_id0`` is its dword 1, ``group_id1`` dword
  6, ``group_id2`` dword 7 (the thread group's position in the grid);
- from ``r1``: the kernel arguments, one 64-bit global address each, in ABI order;
- then, each in its own registers, the local ids of the lanes in x, y and z
  (one word per lane); a SIMD thread's ``thread_id0`` is its first lane's x id
  divided by the SIMD width, ``thread_id1``/``thread_id2`` its first lane's y, z.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.types import Type, s32, u16, u64

GROUP_ID_DWORD = {"group_id0": 1, "group_id1": 6, "group_id2": 7}
THREAD_IDS = ("thread_id0", "thread_id1", "thread_id2")


@dataclass(frozen=True)
class PayloadField:
    """``name`` lives at byte ``byte`` of the register file, ``size`` bytes of ``type``."""

    name: str
    byte: int
    size: int
    type: Type
    what: str

    def to_dict(self, reg_bytes: int) -> dict:
        return {"name": self.name, "reg": f"r{self.byte // reg_bytes}.{(self.byte % reg_bytes) // self.type.size}",
                "bytes": self.size, "type": str(self.type), "what": self.what}


def payload(arg_names: list[str], simd: int, reg_bytes: int) -> list[PayloadField]:
    """The payload table of a kernel with arguments ``arg_names`` at SIMD width ``simd``."""
    out = [PayloadField("r0", 0, reg_bytes, s32, "thread header (group ids, barrier id, scratch state)")]
    out += [PayloadField(g, 4 * d, 4, s32, "thread group index") for g, d in GROUP_ID_DWORD.items()]
    byte = reg_bytes
    for name in arg_names:
        out.append(PayloadField(name, byte, 8, u64, "global address of the argument"))
        byte += 8
    byte = -(-byte // reg_bytes) * reg_bytes
    lid_bytes = -(-simd * 2 // reg_bytes) * reg_bytes
    for d in "xyz":
        out.append(PayloadField(f"local_id_{d}", byte, lid_bytes, u16, f"local id in {d} of every lane"))
        byte += lid_bytes
    return out
