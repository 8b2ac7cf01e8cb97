"""A TOML statement recognizer that says what is wrong, in words, at the exact characters.

It reads the text statement by statement (a table header or a ``key = value``
pair, with multi-line strings and arrays), stops at the first problem of a
statement with a message about what was expected there ("expected a value
after '='", "unterminated string", "unclosed '['") and resumes at the next
line. It only recognizes; values are decoded by :mod:`.scalars` from the
tree-sitter parse.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .limits import MAX_NESTING, NESTING_MESSAGE

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
SCALAR_TOKEN = re.compile(r"[A-Za-z0-9_+\-.:]+")
DATE_TIME_GAP = re.compile(r"\d{4}-\d{2}-\d{2} \d")
_DEC = r"[+-]?(?:0|[1-9](?:_?\d)*)"
_FRAC = r"\.\d(?:_?\d)*"
_EXP = r"[eE][+-]?\d(?:_?\d)*"
SCALAR = re.compile(
    "|".join([
        _DEC,
        r"0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*", r"0o[0-7](?:_?[0-7])*", r"0b[01](?:_?[01])*",
        f"{_DEC}(?:{_FRAC}(?:{_EXP})?|{_EXP})", r"[+-]?(?:inf|nan)",
        "true", "false",
        r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?)?",
        r"\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?",
    ])
)
STATEMENT_START = re.compile(r"[ \t]*(?:\[|[A-Za-z0-9_\-\"'. \t]+=)")
ESCAPES = {"b", "t", "n", "f", "r", '"', "\\", "e"}
HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
TOKEN_STOP = " \t\r\n,]}=#"
STRAY_CR = "stray carriage return: lines end with '\\n' or '\\r\\n'"


@dataclass(frozen=True)
class Problem:
    """The first problem of one statement: ``[start, end)`` is what to underline.

    ``statement`` is the span of text the recognizer consumed for the
    statement, used to match the problem with tree-sitter's faults.
    """

    start: int
    end: int
    message: str
    statement: tuple[int, int]


class _Fail(Exception):
    def __init__(self, start: int, end: int, message: str, resume: int | None = None):
        super().__init__(message)
        self.start, self.end, self.message, self.resume = start, end, message, resume


class _Recognizer:
    """A recursive-descent TOML recognizer that only looks for the first problem per statement."""

    def __init__(self, text: str):
        self.text = text
        self.i = 0
        self.depth = 0  # arrays and inline tables open around the current value

    # -- low-level helpers -------------------------------------------------
    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def at_line_end(self) -> bool:
        return self.peek() in ("", "\n", "#") or self.text.startswith("\r\n", self.i)

    def skip_blanks(self) -> None:
        while self.peek() in (" ", "\t"):
            self.i += 1

    def skip_comment(self) -> None:
        if self.peek() == "#":
            while self.peek() not in ("", "\n") and not self.text.startswith("\r\n", self.i):
                self.i += 1

    def skip_newline(self) -> bool:
        for newline in ("\r\n", "\n"):
            if self.text.startswith(newline, self.i):
                self.i += len(newline)
                return True
        return False

    def line_end(self, index: int) -> int:
        """Index of the line break (or text end) at or after ``index``."""
        ends = [j for j in (self.text.find("\n", index), self.text.find("\r", index)) if j >= 0]
        return min(ends, default=len(self.text))

    def token_end(self, index: int) -> int:
        j = index
        while j < len(self.text) and self.text[j] not in TOKEN_STOP:
            j += 1
        return max(j, index + 1) if index < len(self.text) else index

    def describe(self, index: int) -> str:
        """A short, quoted description of the text at ``index`` for messages."""
        if index >= len(self.text):
            return "the end of the file"
        if self.text[index] in "\r\n":
            return "the end of the line"
        token = self.text[index:self.token_end(index)]
        return repr(token if len(token) <= 24 else token[:24] + "...")

    def fail_here(self, expected: str) -> _Fail:
        end = self.token_end(self.i) if self.i < len(self.text) and self.text[self.i] not in "\r\n" else self.i
        return _Fail(self.i, end, f"{expected}, got {self.describe(self.i)}")

    # -- statements ---------------------------------------------------------
    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        while True:
            self.skip_trivia()
            if self.i >= len(self.text):
                return found
            start = self.i
            self.depth = 0
            try:
                if self.peek() == "\r":
                    raise _Fail(start, start + 1, STRAY_CR, resume=start + 1)
                self.statement()
            except _Fail as fail:
                resume = fail.resume
                if resume is None:
                    # The statement owns its line break: tree-sitter often puts the fault there.
                    self.i = self.line_end(max(self.i, fail.end))
                    self.skip_newline()
                    resume = self.i
                found.append(Problem(fail.start, max(fail.end, fail.start), fail.message, (start, max(resume, start))))
                self.i = max(resume, start + 1)

    def skip_trivia(self) -> None:
        while True:
            self.skip_blanks()
            self.skip_comment()
            if not self.skip_newline():
                return

    def statement(self) -> None:
        if self.peek() == "[":
            self.header()
            what = "the table header"
        else:
            key_start = self.i
            key_end = self.key()
            if self.peek() != "=":
                key = self.text[key_start:key_end]
                if self.at_line_end():
                    raise _Fail(key_start, key_end, f"expected '=' after key {key!r}")
                raise self.fail_here(f"expected '=' after key {key!r}")
            eq = self.i
            self.i += 1
            self.skip_blanks()
            self.value(eq)
            what = "the value"
        self.end_of_line(what)

    def end_of_line(self, after: str) -> None:
        self.skip_blanks()
        self.skip_comment()
        if self.peek() == "" or self.skip_newline():
            return
        if self.peek() == "\r":
            raise _Fail(self.i, self.i + 1, STRAY_CR)
        raise _Fail(self.i, self.token_end(self.i),
                    f"unexpected {self.describe(self.i)} after {after}: put each key on its own line")

    def header(self) -> None:
        open_at = self.i
        closing = "]]" if self.text.startswith("[[", self.i) else "]"
        self.i += len(closing)
        self.skip_blanks()
        self.key()
        self.skip_blanks()
        if not self.text.startswith(closing, self.i):
            if self.at_line_end():
                raise _Fail(open_at, self.i, f"expected '{closing}' to close the table header")
            raise self.fail_here(f"expected '{closing}' to close the table header")
        self.i += len(closing)

    def key(self) -> int:
        """Recognize a (dotted) key and the blanks after it; returns where the key text ends."""
        while True:
            self.simple_key()
            end = self.i
            self.skip_blanks()
            if self.peek() != ".":
                return end
            self.i += 1
            self.skip_blanks()

    def simple_key(self) -> None:
        ch = self.peek()
        if ch in ('"', "'"):
            if self.text.startswith(ch * 3, self.i):
                raise _Fail(self.i, self.i + 3, "a key cannot be a multi-line string")
            self.single_line_string(ch)
            return
        match = BARE_KEY.match(self.text, self.i)
        if match is None:
            if self.at_line_end():
                raise _Fail(self.i, self.i, f"expected a key, got {self.describe(self.i)}")
            raise _Fail(self.i, self.i + 1, f"expected a key, got {self.describe(self.i)}")
        self.i = match.end()

    # -- values -------------------------------------------------------------
    def value(self, eq: int | None) -> None:
        """Recognize a value; ``eq`` is the index of the '=' before it (None inside arrays)."""
        ch = self.peek()
        if self.at_line_end():
            if eq is not None:
                raise _Fail(eq, eq + 1, "expected a value after '='")
            raise self.fail_here("expected a value")
        if ch in ('"', "'"):
            if self.text.startswith(ch * 3, self.i):
                self.multiline_string(ch)
            else:
                self.single_line_string(ch)
        elif ch == "[":
            self.array()
        elif ch == "{":
            self.inline_table()
        else:
            self.scalar()

    def scalar(self) -> None:
        start = self.i
        match = SCALAR_TOKEN.match(self.text, start)
        if match is None:
            raise self.fail_here("expected a value")
        end = match.end()
        if DATE_TIME_GAP.match(self.text, start) and end == start + 10:
            end = SCALAR_TOKEN.match(self.text, start + 11).end()
        token = self.text[start:end]
        if SCALAR.fullmatch(token) is None:
            raise _Fail(start, end, _bad_scalar_message(token))
        self.i = end

    def single_line_string(self, quote: str) -> None:
        open_at = self.i
        self.i += 1
        while True:
            ch = self.peek()
            if ch == quote:
                self.i += 1
                return
            if ch in ("", "\n", "\r"):
                raise _Fail(open_at, self.i, "unterminated string: add the closing " + repr(quote))
            if quote == '"' and ch == "\\":
                self.escape(multiline=False)
                continue
            self.check_control(ch)
            self.i += 1

    def multiline_string(self, quote: str) -> None:
        open_at = self.i
        self.i += 3
        while True:
            ch = self.peek()
            if ch == "":
                raise _Fail(open_at, open_at + 3, f"unterminated multi-line string: add the closing {quote * 3}")
            if self.text.startswith(quote * 3, self.i):
                self.i += 3
                # Up to two more quotes right before the delimiter belong to the content.
                for _ in range(2):
                    if self.peek() == quote:
                        self.i += 1
                return
            if quote == '"' and ch == "\\":
                self.escape(multiline=True)
                continue
            if ch not in "\r\n":
                self.check_control(ch)
            self.i += 1

    def check_control(self, ch: str) -> None:
        if (ch < " " and ch != "\t") or ch == "\x7f":
            raise _Fail(self.i, self.i + 1, f"control character U+{ord(ch):04X} is not allowed in a string; "
                                            "write it as an escape")

    def escape(self, multiline: bool) -> None:
        start = self.i
        code = self.peek(1)
        if code in ESCAPES:
            self.i += 2
            return
        if code in HEX_ESCAPES:
            width = HEX_ESCAPES[code]
            digits = self.text[start + 2:start + 2 + width]
            if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                point = int(digits, 16)
                if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
                    raise _Fail(start, start + 2 + width, f"escape '\\{code}{digits}' is not a Unicode scalar value")
                self.i += 2 + width
                return
            raise _Fail(start, start + 2 + len(digits.split('"')[0]),
                        f"escape '\\{code}' needs {width} hexadecimal digits")
        if multiline:
            j = start + 1
            while j < len(self.text) and self.text[j] in " \t":
                j += 1
            if self.text.startswith("\n", j) or self.text.startswith("\r\n", j):
                self.i = j
                return
        shown = self.text[start:start + 2] if code not in ("", "\n", "\r") else "\\"
        raise _Fail(start, start + len(shown), f"invalid escape sequence {shown!r}; "
                                               "write '\\\\' for a backslash")

    def enter(self, open_at: int) -> None:
        """One more array or inline table opens at ``open_at``; refuse nesting past the reader's bound."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Fail(open_at, open_at + 1, NESTING_MESSAGE)

    def array(self) -> None:
        open_at = self.i
        self.enter(open_at)
        self.i += 1
        while True:
            self.skip_array_trivia(open_at)
            if self.peek() == "]":
                self.i += 1
                self.depth -= 1
                return
            if self.peek() == ",":
                raise _Fail(self.i, self.i + 1, "expected a value before ','")
            self.value(None)
            self.skip_array_trivia(open_at)
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise self.fail_here("expected ',' or ']' in the array")

    def skip_array_trivia(self, open_at: int) -> None:
        """Skip blanks, comments and newlines inside an array, spotting an array never closed."""
        while True:
            self.skip_blanks()
            self.skip_comment()
            line_start = self.i
            if not self.skip_newline():
                break
            if STATEMENT_START.match(self.text, self.i) and not self.text[self.i:].lstrip(" \t").startswith("["):
                # The next line reads like a new 'key = value': the array was never closed.
                raise _Fail(open_at, open_at + 1, "unclosed '[': expected ']'", resume=line_start)
        if self.peek() == "":
            raise _Fail(open_at, open_at + 1, "unclosed '[': expected ']'")

    def inline_table(self) -> None:
        open_at = self.i
        self.enter(open_at)
        self.i += 1
        self.skip_blanks()
        if self.peek() == "}":
            self.i += 1
            self.depth -= 1
            return
        while True:
            self.skip_blanks()
            if self.at_line_end() and self.peek() != "#":
                raise _Fail(open_at, open_at + 1, "unclosed '{': an inline table must end with '}' on the same line")
            key_start = self.i
            key_end = self.key()
            if self.peek() != "=":
                raise self.fail_here(f"expected '=' after key {self.text[key_start:key_end]!r}")
            eq = self.i
            self.i += 1
            self.skip_blanks()
            self.value(eq)
            self.skip_blanks()
            if self.peek() == ",":
                comma = self.i
                self.i += 1
                self.skip_blanks()
                if self.peek() == "}":
                    raise _Fail(comma, comma + 1, "trailing comma is not allowed in an inline table")
            elif self.peek() == "}":
                self.i += 1
                self.depth -= 1
                return
            elif self.at_line_end():
                raise _Fail(open_at, open_at + 1, "unclosed '{': an inline table must end with '}' on the same line")
            else:
                raise self.fail_here("expected ',' or '}' in the inline table")


def _bad_scalar_message(token: str) -> str:
    if token.lower() in ("true", "false"):
        return f"booleans are lowercase: write {token.lower()!r}"
    if BARE_KEY.fullmatch(token) and not token[0].isdigit():
        return f"expected a value, got {token!r}: strings need quotes, \"{token}\""
    if token[:1].isdigit() or token[:1] in "+-.":
        return f"invalid number {token!r}"
    return f"expected a value, got {token!r}"


def find_problems(text: str) -> list[Problem]:
    """The first problem of every statement of ``text`` that does not read as valid TOML."""
    return _Recognizer(text).problems()
