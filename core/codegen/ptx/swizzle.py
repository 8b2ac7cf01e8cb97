"""XOR-swizzled shared memory: where each 16-byte chunk of a staged tile really lies.

An ``ldmatrix`` reads eight 16-byte rows of an 8x8 matrix, one per lane group; shared memory
serves them in one pass only when the eight rows fall into different 16-byte bank groups of a
128-byte line. A dense tile whose rows are a power of two of bytes apart puts them in the same
groups (rows 64 bytes apart: 4-way conflicts, 256 bytes apart: 8-way). The lowering therefore
places byte ``a`` of such a shared buffer at

    swizzle(a) = a ^ (((a >> s) & 7) << 4)

with ``s = max(7, log2(pitch))`` for the row pitch its ``ldmatrix`` loads use: the bits that number
the eight rows of a matrix pick one of the eight chunks of the line. Only bits 4-6 change, so a
chunk stays whole, every access of at most 16 aligned bytes stays in one chunk, and each 128-byte
line maps onto itself: the map is a permutation of the buffer (whose size is a multiple of 128),
invisible to the IR, which addresses the buffer as before. Every access of the buffer (``cp.async``
copies, ``ld``/``st.shared``, ``ldmatrix``) goes through the same map.

Adding a constant ``k`` that is a multiple of ``2^(s+3)`` changes no bit the map reads or writes, so
an address ``base + k`` is swizzled as ``swizzle(base + k mod 2^(s+3)) + (k - k mod 2^(s+3))``:
the stage and row-block offsets stay immediates of the instruction, and the few distinct low
parts are loop invariants.
"""
from __future__ import annotations

CHUNK = 16          # bytes that move together (an ldmatrix row, a cp.async.cg copy)
LINE = 128          # bytes of shared memory served in one pass: eight chunks
MIN_SHIFT = 7       # below a 128-byte pitch the line number's low bits tell the rows apart


def shift_for(pitches: set[int], size: int) -> int | None:
    """The shift ``s`` for a buffer of ``size`` bytes whose ``ldmatrix`` rows are ``pitches`` bytes
    apart, or None where swizzling would not help or is not a permutation: no ``ldmatrix`` read,
    several pitches, a pitch that is not a power of two or whose eight rows already fill a line,
    or a size that is not whole lines."""
    if len(pitches) != 1 or size % LINE:
        return None
    pitch = next(iter(pitches))
    if pitch <= CHUNK or pitch & (pitch - 1):
        return None
    return max(MIN_SHIFT, pitch.bit_length() - 1)


def swizzle(a: int, s: int) -> int:
    """Where byte ``a`` of a buffer swizzled with shift ``s`` lies (the map the PTX computes)."""
    return a ^ (((a >> s) & 7) << 4)


def split(k: int, s: int) -> tuple[int, int]:
    """``(low, high)`` with ``k = low + high``, ``high`` a multiple of ``2^(s+3)`` (which the map
    passes through unchanged) and ``0 <= low < 2^(s+3)``."""
    span = 1 << (s + 3)
    low = k % span
    return low, k - low
