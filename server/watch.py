"""Files on disk, followed with watchdog: configs that are not open, and the files ``extends`` names.

A change to a file that an open document extends recompiles that document
(so a deleted parent becomes a diagnostic on the child's ``extends``, and a
restored one clears it: a parent that cannot be read is a dependency too). A
``*.kernel.toml`` under a workspace folder that is not open is compiled from
disk and gets diagnostics of its own; deleting it clears them. Events arrive
on watchdog's thread and are handed to the server's event loop, where they
are coalesced for :data:`DEBOUNCE_S`; configs that are not open are compiled
one at a time and only while no open document waits for a compile, so a
burst of files appearing never delays the document being edited. Only
directories inside the workspace roots are watched.
"""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from kdd.core.spec.confined import SUFFIX, under

DEBOUNCE_S = 0.1


class Watcher(FileSystemEventHandler):
    """Watches the workspace folders and the directories of every open document's dependencies."""

    def __init__(self, server, folders: list[str]):
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.folders = [os.path.abspath(f) for f in folders]
        self.observer = Observer()
        self.watched: dict[str, object] = {}
        self.pending: set[str] = set()  # changed paths not yet handled
        self.flush: asyncio.TimerHandle | None = None
        self.backlog: dict[str, None] = {}  # configs that are not open, to compile from disk, oldest first
        self.draining: asyncio.Task | None = None
        for folder in self.folders:
            if os.path.isdir(folder):
                self.watched[folder] = self.observer.schedule(self, folder, recursive=True)
        self.observer.start()
        self.refresh()

    def dependencies(self) -> dict[str, set[str]]:
        """Parent file -> the open documents (URIs) that extend it."""
        out: dict[str, set[str]] = {}
        for uri in list(self.server.docs):
            parsed = self.server.engine.parse(self.server.source(uri))
            for path, _ in parsed.depends_on:
                out.setdefault(os.path.abspath(path), set()).add(uri)
        return out

    def refresh(self) -> None:
        """Watch the directories of dependencies outside the workspace folders too (inside the roots)."""
        for path in self.dependencies():
            directory = os.path.dirname(path)
            covered = any(directory == f or directory.startswith(f + os.sep) for f in self.watched)
            if not covered and os.path.isdir(directory) and under(os.path.realpath(directory),
                                                                   self.server.reader.roots):
                self.watched[directory] = self.observer.schedule(self, directory, recursive=False)

    def on_any_event(self, event) -> None:
        if event.is_directory or event.event_type not in ("created", "modified", "deleted", "moved"):
            return
        paths = [event.src_path] + ([event.dest_path] if getattr(event, "dest_path", None) else [])
        for path in paths:
            self.loop.call_soon_threadsafe(self._changed, os.path.abspath(os.fsdecode(path)))

    def _changed(self, path: str) -> None:
        self.pending.add(path)
        if self.flush is None:
            self.flush = self.loop.call_later(DEBOUNCE_S, self._flush)

    def _flush(self) -> None:
        """Handle the paths changed since the last flush: their dependents now, other configs later."""
        self.flush = None
        paths, self.pending = self.pending, set()
        dependencies = self.dependencies()
        for doc_uri in set().union(*(dependencies.get(p, set()) for p in paths)):
            if doc_uri in self.server.docs:
                self.server.changed(doc_uri)
        for path in sorted(paths):
            if path.endswith(SUFFIX) and Path(path).as_uri() not in self.server.docs and any(
                    path.startswith(f + os.sep) for f in self.folders):
                self.backlog.pop(path, None)
                self.backlog[path] = None
        if self.backlog and (self.draining is None or self.draining.done()):
            self.draining = asyncio.ensure_future(self._drain())
        self.refresh()

    async def _drain(self) -> None:
        """Compile the backlog one config at a time, each after the open documents' compiles."""
        while self.backlog:
            await self.server.documents_idle()
            path = next(iter(self.backlog))
            del self.backlog[path]
            await self.server.compile_on_disk(path)

    def stop(self) -> None:
        self.observer.stop()
        if self.draining is not None:
            self.draining.cancel()


def start_watching(server, folders: list[str]) -> Watcher | None:
    """A running watcher, or None when watchdog cannot start here (the server works without it)."""
    try:
        return Watcher(server, folders)
    except OSError:
        return None
