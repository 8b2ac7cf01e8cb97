"""``kdd hover FILE LINE COL``: the hover markdown of a kernel config at a position.

LINE and COL are 0-based and COL counts UTF-16 code units, as the Language
Server Protocol does, so a script sees exactly what an editor shows. Exit
status 0 prints the markdown; 1 means nothing is under the position (nothing
is printed); 2 means FILE cannot be read (or is not a regular file of a kernel config's size).
"""
from __future__ import annotations

import sys


def run(args) -> int:
    from kdd.core.spec import read_file
    from kdd.core.spec.hover import hover

    try:
        text = read_file(args.file)  # a FIFO or /dev/zero is refused, not waited on or read forever
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        print(f"kdd hover: error: cannot read {args.file}: {reason}", file=sys.stderr)
        return 2
    markdown = hover(text, args.line, args.col, path=args.file)
    if markdown is None:
        return 1
    print(markdown)
    return 0


def register(sub) -> None:
    p = sub.add_parser("hover", help="print the hover markdown of a kernel config at LINE COL",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("line", type=int, help="0-based line")
    p.add_argument("col", type=int, help="0-based character in UTF-16 code units")
    p.set_defaults(run=run)
