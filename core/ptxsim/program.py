"""A PTX kernel's text read into instructions: ``(line, predicate, opcode, operands)`` and labels."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Instr:
    """One PTX instruction: its 1-based ``line`` in the text, the guarding predicate register
    (``!%p3`` negated) or None, the full opcode (``mad.lo.s32``) and the operand texts."""
    line: int
    text: str
    pred: str | None
    op: str
    args: tuple[str, ...]


class Program:
    """The ``.entry`` of a PTX module: its ``.param .u64`` names in order, instructions and labels."""

    def __init__(self, text: str):
        self.params = re.findall(r"\.param \.u64 (\w+)", text)
        self.ops: list[Instr] = []
        self.labels: dict[str, int] = {}
        start = text.index("{", text.index(".entry")) + 1
        first = text.count("\n", 0, start) + 1
        for n, line_text in enumerate(text[start:].splitlines()):
            line = line_text.split("//")[0].strip()
            if not line or line.startswith((".loc", ".reg", "}")):
                continue
            if line.endswith(":"):
                self.labels[line[:-1]] = len(self.ops)
                continue
            line = line.rstrip(";").strip()
            pred = None
            if line.startswith("@"):
                pred, line = line.split(None, 1)
                pred = pred[1:]
            parts = line.split(None, 1)
            self.ops.append(Instr(first + n, line_text.strip(), pred, parts[0],
                                  tuple(operands(parts[1])) if len(parts) > 1 else ()))


def operands(text: str) -> list[str]:
    """The comma-separated operands of an instruction, vectors ``{..}`` and addresses ``[..]`` whole."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out
