"""What the language server keeps per open document: the latest text version and the latest results."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Awaitable, Callable

MIN_DEBOUNCE_S, MAX_DEBOUNCE_S = 0.05, 0.5


@dataclass
class DocumentState:
    """One open config. ``compiled`` is the latest finished compile (a ``kdd/compile`` result) and
    ``compiled_version`` the text version it was made from; the diagnostics lists are per stage."""

    uri: str
    path: str | None
    version: int = 0
    compiled: dict | None = None
    compiled_version: int | None = None
    spec_diagnostics: list[dict] = field(default_factory=list)
    compile_diagnostics: list[dict] = field(default_factory=list)
    check_diagnostics: list[dict] = field(default_factory=list)
    check: dict | None = None
    compile_s: float | None = None  # moving average of the measured compile time
    pending: asyncio.Task | None = None
    compiled_event: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def debounce_s(self) -> float:
        """Wait a quarter of a compile before starting one: a burst of keystrokes coalesces into one
        compile, and the wait stays small beside the compile itself (50 ms to 500 ms)."""
        if self.compile_s is None:
            return MIN_DEBOUNCE_S
        return min(MAX_DEBOUNCE_S, max(MIN_DEBOUNCE_S, self.compile_s / 4))

    def schedule(self, compile: Callable[[int], Awaitable[None]]) -> bool:
        """Run ``compile(version)`` of the current version after the debounce (the language server's and
        ``kdd view``'s compiles alike). A newer version cancels a compile still waiting (it never starts);
        one already running finishes, and ``compile`` discards its result when the version moved on.
        True when a waiting compile was superseded."""
        superseded = self.pending is not None and not self.pending.done()
        if superseded:
            self.pending.cancel()
        version = self.version

        async def debounced() -> None:
            await asyncio.sleep(self.debounce_s)
            if self.version == version:
                await compile(version)
        self.pending = asyncio.ensure_future(debounced())
        return superseded

    def measured(self, seconds: float) -> None:
        self.compile_s = seconds if self.compile_s is None else 0.7 * self.compile_s + 0.3 * seconds

    def diagnostics(self) -> list[dict]:
        return self.spec_diagnostics + self.compile_diagnostics + self.check_diagnostics
