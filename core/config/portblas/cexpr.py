"""The C++ conditions of portBLAS's backend headers, evaluated for one problem.

The headers select launchers with plain C++ over the dispatcher's arguments: ``_M <= 128 && _N <= 128``,
``batch_type == gemm_batch_type_t::interleaved``, ``!s_a && !s_b``, ``sizeof(element_in_t) == 8 ? 8 : 16``,
type traits (``is_half<typename ValueType<container_0_t>::type>::value``,
``std::is_same<typename ValueType<container_1_t>::type, float>::value``) and an environment variable
read with ``std::getenv``. This evaluates that language: integers, booleans, characters, ``NULL``,
names from an environment, ``sizeof`` and the traits over the problem's element types, ``!``, unary
``-``/``*``, ``* / % + -``, comparisons, ``&& ||`` and ``?:``, with C's precedence. Anything else
is a :class:`ValueError` naming it, never a guess.
"""
from __future__ import annotations

import re
from typing import Callable

_TOKEN = re.compile(r"\s*(?:(?P<trait>(?:std\s*::\s*)?\w+\s*<(?:[^<>]|<[^<>]*>)*>\s*::\s*value)"
                    r"|(?P<sizeof>sizeof\s*\(\s*[\w:\s]+\))"
                    r"|(?P<num>\d+)|(?P<char>'.')|(?P<name>[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)"
                    r"|(?P<op>&&|\|\||==|!=|<=|>=|[!<>*/%+\-?:()]))")
_BINARY = (("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%"))


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) of every token of ``text``; a character that starts no token is a ValueError."""
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read '{text[pos:pos + 20]}' in condition '{text}'")
        kind = m.lastgroup
        out.append((kind, re.sub(r"\s+", "", m.group(kind)) if kind != "char" else m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, names: dict, trait: Callable[[str], object], size_of: Callable[[str], int]):
        self.text, self.toks, self.i = text, tokens(text), 0
        self.names, self.trait, self.size_of = names, trait, size_of

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise ValueError(f"condition '{self.text}' ends early")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise ValueError(f"expected '{want}', got '{tok[1]}' in condition '{self.text}'")
        self.i += 1
        return tok

    def expr(self):
        cond = self.binary(0)
        if self.peek() == "?":
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            return a if cond else b
        return cond

    def binary(self, level: int):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _BINARY[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self):
        op = self.peek()
        if op in ("!", "-", "*"):
            self.take()
            v = self.unary()
            if op == "!":
                return not v
            if op == "-":
                return -v
            return v[0] if isinstance(v, str) and v else "\0"     # *p of a C string: its first character
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if text == "(":
            v = self.expr()
            self.take(")")
            return v
        if kind == "num":
            return int(text)
        if kind == "char":
            return text[1]
        if kind == "trait":
            return self.trait(text)
        if kind == "sizeof":
            return self.size_of(text[text.index("(") + 1:-1])
        if kind == "name":
            if text in ("true", "false"):
                return text == "true"
            if text == "NULL":
                return None
            if text in self.names:
                return self.names[text]
            raise ValueError(f"'{text}' in condition '{self.text}' is not a name kdd binds "
                             f"(it binds {', '.join(sorted(self.names))})")
        raise ValueError(f"unexpected '{text}' in condition '{self.text}'")


def _apply(op: str, a, b):
    if op == "||":
        return bool(a) or bool(b)
    if op == "&&":
        return bool(a) and bool(b)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    return {"<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "/": lambda: int(a / b), "%": lambda: a - int(a / b) * b}[op]()


def evaluate(text: str, names: dict, trait: Callable[[str], object], size_of: Callable[[str], int]):
    """The value of C expression ``text``: ``names`` bind identifiers, ``trait`` and ``size_of`` answer
    ``X<...>::value`` and ``sizeof(T)``. A ValueError names what cannot be read or bound."""
    p = _Parser(text, names, trait, size_of)
    v = p.expr()
    if p.i != len(p.toks):
        raise ValueError(f"unexpected '{p.toks[p.i][1]}' in condition '{text}'")
    return v
