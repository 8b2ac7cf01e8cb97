"""``ldmatrix``: shared-memory -> fragment loads of 8x8 matrices of 16-bit elements.

A warp's ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`` loads up
to four 8x8 matrices, one destination register per matrix; lanes ``8j..8j+7``
give the shared-memory addresses of matrix ``j``'s eight 16-byte rows. Lane
``l`` receives, of each matrix (rows ``R[0..7]``):

- plain: the 32-bit word at ``R[l // 4] + 4 * (l % 4)`` (the A fragment of
  ``mma.m16n8k16``: two consecutive K elements of one M row);
- ``.trans``: the elements at ``R[2 * (l % 4)] + 2 * (l // 4)`` (low half) and
  ``R[2 * (l % 4) + 1] + 2 * (l // 4)`` (high half) (the B fragment: two
  consecutive K rows of one N column, stored N-contiguous).

:func:`matrix_rows` recognizes either form from the per-lane source byte of
each half of a destination word; the lowering then issues one ``ldmatrix``
for up to four such words instead of a load (or two loads and a merge) per
word per lane.
"""
from __future__ import annotations

from .lanes import LANES

ROW_BYTES = 16


def matrix_rows(low: list[int], high: list[int]) -> tuple[bool, list[int]] | None:
    """``(trans, R)`` when lane ``l``'s word has its low half at byte ``low[l]`` and its high half at
    ``high[l]`` of one 8x8 matrix with 16-byte aligned rows at ``R[0..7]``, else None."""
    if len(low) != LANES or len(high) != LANES:
        return None
    for trans in (False, True):
        rows: list[int | None] = [None] * 8
        ok = True
        for ln in range(LANES):
            if trans:
                picks = ((2 * (ln % 4), low[ln] - 2 * (ln // 4)), (2 * (ln % 4) + 1, high[ln] - 2 * (ln // 4)))
            else:
                picks = ((ln // 4, low[ln] - 4 * (ln % 4)),)
                ok = high[ln] == low[ln] + 2
            for i, r in picks:
                if rows[i] is None:
                    rows[i] = r
                ok = ok and rows[i] == r and r % ROW_BYTES == 0
            if not ok:
                break
        if ok:
            return trans, [int(r) for r in rows]
    return None


def lane_addresses(matrices: list[list[int]]) -> list[int]:
    """Per lane, the row address it gives ``ldmatrix`` for ``matrices`` (1, 2 or 4 row lists): lane
    ``l`` gives row ``l % 8`` of matrix ``l // 8``; lanes past the last matrix repeat its rows (their
    addresses are not read)."""
    return [matrices[min(ln // 8, len(matrices) - 1)][ln % 8] for ln in range(LANES)]
