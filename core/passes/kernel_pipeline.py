"""The kernel optimization pipeline: the ordered list of passes from built IR to optimized IR.

The order is the documentation (``docs/passes.md`` explains each step); it
follows the seed generator's flow (seed 000, "More Optimizations and IR
Passes"):

build -> buffering -> simplify -> send lowering -> CSE / hoisting ->
strength reduction -> let optimization -> unrolling -> peephole -> barriers

with eight additions: ``inner-loops`` marks the innermost loops of a
reduction nest no pipeline flattened for complete unrolling (a conv's kh
and kw), ``register-loops`` marks the loops that must be
unrolled for register operands to be constants (before anything decides
what stays a loop), ``overflow`` widens 32-bit addresses that could wrap
(before send lowering picks the address width), ``simplify-unrolled``
folds the constants that unrolling exposes, ``predicate`` turns the
branches left around messages into their predicate, ``cse-unrolled`` computes once
what the folded copies repeat, ``hoist-unrolled`` moves out of the
remaining loops what they left invariant, and ``cse-hoisted`` computes
once what hoisting left equal (a load's mask and its SLM stores'). ``buffering`` (SLM) and
``prefetch`` (no SLM) are alternatives; the one the config does not ask for
leaves the IR unchanged.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from ..ir.node import Node
from .barrier_opt import remove_redundant_barriers
from .buffering import multi_buffer, slm_bytes
from .cse import eliminate
from .carried_headers import carry_headers
from .header_steps import step_headers
from .hoist import hoist_invariants
from .let_opt import merge_register_copies, optimize_lets
from .options import kernel_options
from .overflow import widen_overflowing_offsets
from .peephole import fuse_arith
from .ping_pong import ping_pong
from .pipeline import Pass, PassCache, Pipeline, Trace
from .predicate import predicate_messages
from .prefetch import prefetch_pipeline
from .reduction_nest import unroll_inner_loops
from .register_loops import mark_register_loops
from .send_headers import lower_sends
from .simplify_pass import simplify_kernel
from .strength_reduce import reduce_strength
from .unroll import unroll_loops



def _cse_with_notes(ir: Node, options: Mapping[str, Any]) -> tuple[Node, dict]:
    """CSE's output and its report (what it named, what it skipped and why) as the pass's notes."""
    out, report = eliminate(ir, options, rounds=1)
    return out, report.to_dict()


def _cse_rounds_with_notes(ir: Node, options: Mapping[str, Any]) -> tuple[Node, dict]:
    """``_cse_with_notes``, again while a round leaves lets copying a name (the last CSE: what the
    registers left after hoisting hold is what those rounds take)."""
    out, report = eliminate(ir, options)
    return out, report.to_dict()


def _buffering(ir: Node, options: Mapping[str, Any]) -> Node:
    """SLM and GRF staging buffers (``multi_buffer``), then the raw weight tiles' ping-pong."""
    return ping_pong(multi_buffer(ir, options), options)


KERNEL_PASSES: tuple[Pass, ...] = (
    Pass("buffering", _buffering, reads=("slm_bufs", "gmem_bufs", "pipeline_unroll", "raw_bufs", "target", "regs"),
         version=2,
         doc="single SLM buffering to double/triple buffering with a split barrier; GRF staging buffers; "
             "raw weight tiles ping-pong"),
    Pass("prefetch", prefetch_pipeline, reads=("slm_bufs", "prefetch_bufs", "prefetch_buffers"),
         doc="without SLM: prefetch the tiles of later iterations into cache"),
    Pass("inner-loops", unroll_inner_loops, reads=("target", "regs", "slm_bufs", "gmem_bufs", "prefetch_bufs"),
         doc="the innermost loops of a reduction nest no pipeline flattened marked for complete unrolling "
             "(a loop of one step per trip: by 4, 3 or 2)"),
    Pass("register-loops", mark_register_loops,
         doc="mark loops whose index selects registers for complete unrolling"),
    Pass("simplify", simplify_kernel, reads=("var_ranges",), version=3, doc="expression simplification"),
    Pass("overflow", widen_overflowing_offsets, reads=("var_ranges",),
         doc="32-bit address arithmetic that can wrap is redone in 64 bits"),
    Pass("send-lowering", lower_sends, reads=("target", "reg_bytes", "reuse_headers"), version=2,
         doc="byte offsets to message headers (Xe) or address registers (sm_90)"),
    Pass("cse", _cse_with_notes, reads=("target", "regs"), notes=True, version=2,
         doc="common subexpressions named once, within the free registers"),
    Pass("hoist", hoist_invariants, reads=("target", "regs"), version=5,
         doc="loop-invariant lets and sums moved in front of their loop"),
    Pass("strength-reduce", reduce_strength, reads=("target", "regs", "reg_bytes"), version=5,
         doc="loop-linear address sums become induction variables"),
    Pass("let-opt", optimize_lets, doc="trivial and redundant lets inlined, unused lets removed"),
    Pass("unroll", unroll_loops, doc="loops unrolled as marked (config unroll knobs, register loops)"),
    Pass("simplify-unrolled", simplify_kernel, reads=("var_ranges",), version=3,
         doc="fold the constants unrolled copies expose"),
    Pass("predicate", predicate_messages, reads=("target",),
         doc="branches around messages become the messages' predicate (Xe)"),
    Pass("cse-unrolled", _cse_with_notes, reads=("target", "regs"), notes=True, version=2,
         doc="what the unrolled copies repeat, computed once"),
    Pass("hoist-unrolled", hoist_invariants, reads=("target", "regs"), version=5,
         doc="hoist what the unrolled copies leave invariant in the loops that stay"),
    Pass("cse-hoisted", _cse_rounds_with_notes, reads=("target", "regs"), notes=True,
         doc="what hoisting left equal (a load's mask and its SLM store's), computed once"),
    Pass("copies", merge_register_copies,
         doc="an unrolled copy's reads of a loop-carried register no copy between stored: one value"),
    Pass("carried-headers", carry_headers, reads=("target", "regs"),
         doc="a loop's global header chains carried across its back edge, the counters only they read gone (Xe)"),
    Pass("header-steps", step_headers, reads=("target",),
         doc="a global header stored again with a constant more: stepped from its last value (Xe)"),
    Pass("peephole", fuse_arith, reads=("target", "var_ranges"), version=4,
         doc="add + add -> add3, mul + add -> mad; divisions of non-negative values by powers of two as shifts"),
    Pass("barrier-opt", remove_redundant_barriers, doc="remove barriers that order no SLM access"),
)

KERNEL_PIPELINE = Pipeline(KERNEL_PASSES)


def run_pipeline(kernel, pipeline: Pipeline = KERNEL_PIPELINE, cache: PassCache | None = None) -> Trace:
    """Run ``pipeline`` on a built kernel's body with the kernel's options."""
    return pipeline.run(kernel.body, kernel_options(kernel), cache)


def with_body(kernel, body: Node):
    """``kernel`` with another body (the IR after some pass), its SLM size recomputed."""
    return replace(kernel, body=body, slm_bytes=slm_bytes(body))
