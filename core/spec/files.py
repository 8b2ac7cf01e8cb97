"""Reading a kernel config file: regular files only, at most the document size cap.

Kept apart from the parser (it imports only :mod:`.limits`), so the command
line can read and key a config before it loads the compiler.
"""
from __future__ import annotations

import os
import stat

from .limits import MAX_DOCUMENT_CHARS


def read_file(path: str) -> str:
    """Default ``read_text``: the UTF-8 text of a regular file of at most the reader's size cap.

    Devices, pipes and directories are refused before reading (``/dev/zero``
    never ends), and so is a file too large for a kernel config.
    """
    # Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError("not a regular file")
    with os.fdopen(fd, "rb") as file:
        # UTF-8 takes at most 4 bytes a character; one byte more than that tells "too large".
        data = file.read(4 * MAX_DOCUMENT_CHARS + 1)
    if len(data) > 4 * MAX_DOCUMENT_CHARS:
        raise OSError(f"larger than {4 * MAX_DOCUMENT_CHARS} bytes, too large for a kernel config")
    return data.decode("utf-8")
