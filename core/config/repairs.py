"""Out-of-registers repairs as the config's knobs: what each category the code generator names changes.

A code generator that runs out of registers names what to try, by category,
in the order oneDNN's generator tries them (``large-grf`` with the largest
register mode, ``split-operands``, ``reuse-headers``, ``fewer-staging-buffers``,
``drop-prefetch``, ``smaller-tile``); it knows nothing of the knobs. This table
says which knob each changes and how, in the config's own syntax, so the
message, the JSON failure and the editors' quick fixes (``spec.knob_edits``)
name a knob the user can write.
"""
from __future__ import annotations

# category -> (repair, knob, how); ``how`` may use the category's values (``regs``: the largest mode).
REPAIRS = {
    "large-grf": ("large GRF mode", "regs", "regs={regs} doubles the registers (halves threads per core)"),
    "split-operands": ("split A/B", "subtiles", "S=a2 or S=b2 loads and multiplies A or B in two halves"),
    "reuse-headers": ("reuse headers", "pipeline", "P=r keeps one message header per stream"),
    "fewer-staging-buffers": ("fewer staging buffers", "slm", "fewer global-to-SLM buffers (g=) or SLM buffers (s=)"),
    "drop-prefetch": ("drop prefetch", "prefetch", "p=x0 removes prefetch streams"),
    "smaller-tile": ("smaller thread tile", "iter", "a smaller i= shrinks C, A and B"),
}


def knob_repairs(repairs: list[dict]) -> list[dict]:
    """``{"repair", "knob", "how"}`` for each ``{"category", ...values}`` a code generator named, in its order."""
    out = []
    for r in repairs:
        repair, knob, how = REPAIRS[r["category"]]
        values = {k: v for k, v in r.items() if k != "category"}
        out.append({"repair": repair, "knob": knob, "how": how.format(**values)})
    return out
