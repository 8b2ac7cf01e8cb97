"""What the assembly views show over one listing line: the instruction's documentation
(``targets/instructions``), the buffers live there, largest first (what holds the registers), and on
sm_90 the SASS instructions ptxas made of a PTX line, each with its own documentation."""
from __future__ import annotations

from kdd.core.targets.instructions import lookup


def isa_of(listing: dict) -> str:
    """The ISA a listing's lines are written in: PTX for sm_90's listing, Xe assembly otherwise."""
    return "ptx" if str(listing.get("target", "")).startswith("sm_") else "xe"


def live_by_size(listing: dict, index: int) -> list[dict]:
    """The values live on line ``index`` with the registers each holds, largest first (ties by name), from
    the listing's allocations; the line's ``live`` labels without sizes where it has no allocations."""
    registers = listing.get("registers") or {}
    reg_bytes = registers.get("reg_bytes") or 0
    sizes: dict[str, int] = {}
    for a in registers.get("allocations") or []:
        if a["first_line"] <= index <= a["last_line"]:
            sizes[a["label"]] = sizes.get(a["label"], 0) + a["bytes"]
    if sizes and reg_bytes:
        ranked = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))
        return [{"label": label, "regs": round(nbytes / reg_bytes, 3)} for label, nbytes in ranked]
    return [{"label": label, "regs": None} for label in listing["lines"][index].get("live") or []]


def line_hover(listing: dict, index: int) -> dict | None:
    """``{"line", "lines", "text", "doc", "live", "sass", "markdown"}`` for line ``index`` of a listing (the
    ``asm`` object of a compile; ``lines`` is how many it has, for views that show it under a header), or
    None past its end."""
    lines = listing.get("lines") or []
    if not 0 <= index < len(lines):
        return None
    line = lines[index]
    isa = isa_of(listing)
    doc = lookup(isa, line["text"])
    live = live_by_size(listing, index)
    sass = [{**s, "doc": d.to_dict() if (d := lookup("sass", s["text"])) else None}
            for s in listing.get("sass") or [] if s.get("ptx_line") == index]
    parts = [doc.markdown() if doc else f"`{line['text'].strip()}`"]
    if line.get("live_regs") is not None:
        parts.append(f"{line['live_regs']} registers live")
    if live:
        parts.append("live: " + ", ".join(f"{b['label']} {b['regs']:g}" if b["regs"] is not None else b["label"]
                                          for b in live))
    for s in sass:
        what = f" — {s['doc']['summary']} (pipe {s['doc']['pipe']})" if s["doc"] else ""
        parts.append(f"SASS `{s['text']}`{what}")
    return {"line": index, "lines": len(lines), "text": line["text"], "doc": doc.to_dict() if doc else None,
            "live": live, "sass": sass, "markdown": "\n\n".join(parts)}
