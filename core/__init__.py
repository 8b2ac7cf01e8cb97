"""The kdd kernel generator: a pure library with no editor or protocol knowledge.

Stages (each a pure function of its inputs): ``spec`` parses a kernel config
document, ``builder`` turns problem + config into IR, ``passes`` optimize it,
``targets`` lower it to assembly, ``interp`` executes it against references.
"""
