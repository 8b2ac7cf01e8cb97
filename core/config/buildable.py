"""Which instruction forms of a target kdd's builder generates.

The target catalog lists what the hardware has; the builder generates a subset
of it. Validation, the defaults heuristic and the builder ask this one module,
so what validation accepts builds and what cannot build is refused at the
``fma`` knob.
"""
from __future__ import annotations

from kdd.core.targets import FmaShape

# Matrix instructions whose operand layouts (dpas VNNI packing, mma fragments) the builder knows.
MATRIX = ("dpas", "dpasw", "mma")


def unbuilt_reason(shape: FmaShape) -> str | None:
    """Why the builder does not generate ``shape``, or None when it does.

    Matrix instructions are generated for 8-bit integer sources (either
    signedness, mixed included), f16/bf16 pairs and, on Xe, f32 data
    multiplied in tf32 (xehpc's ``dpas`` with ``:tf32`` sources: one element
    per dword); sm_90's f32 (tf32) and f64 ``mma`` forms are not.
    """
    if shape.fma not in MATRIX:
        return None
    a, b = shape.a, shape.b
    if a.size == b.size == 1 and a.is_int and b.is_int:
        return None
    if a == b and a.size == 2 and a.is_float:
        return None
    if shape.fma in ("dpas", "dpasw") and shape.math == "tf32":
        return None
    return (f"kdd generates {shape.fma} for f16, bf16 or 8-bit integer sources, not {a}*{b}"
            + (f" (computed in {shape.math})" if shape.math else ""))


def buildable(shapes) -> list[FmaShape]:
    """The forms of ``shapes`` the builder generates, in order."""
    return [s for s in shapes if unbuilt_reason(s) is None]


def dpas_rcount(shape: FmaShape, m: int, reg_bytes: int) -> int:
    """The repeat count of ``dpas`` for a thread tile of ``m`` rows: the form's largest (``shape.m``), or for
    fewer rows the next power of two; and since dpas reads each A piece (rcount rows of ``depth`` dwords)
    from a register boundary, at least the rows that fill one register (one row on Xe-HPC's 64-byte GRFs
    takes padding rows)."""
    rcount = shape.m if m >= shape.m else 1 << (max(m, 1) - 1).bit_length()
    return min(shape.m, max(rcount, reg_bytes // (4 * shape.depth)))
