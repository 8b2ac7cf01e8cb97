"""The kdd kernel generator: a pure library with no editor or protocol knowledge.

Stages (each a pure function of its inputs): ``spec`` parses a kernel config
document, ``builder`` turns problem + config into IR, ``passes`` optimize it,
``targets`` lower it to assembly, ``interp`` executes it against references.
"""
from kdd.core import generated_code as _generated_code

# Before any kdd dataclass exists: their generated methods come compiled from a table (see the module).
_generated_code.install()
