"""The Xe instruction-level simulator: the binary ``iga64`` built, run over every thread of a launch.

Independent of the code generator it checks (it imports nothing from
``kdd.core.codegen``). ``check.check_assembly`` is what ``kdd check --asm``
runs; ``run.load`` and ``run.simulate`` are the pieces (docs/xesim.md).
"""
