"""Every PTX opcode kdd's sm_90 generator emits, for the sm_90 examples and a matrix of small GEMMs over
the types and post-ops it lowers, is one the PTX simulator runs."""
import re
from pathlib import Path

import pytest

from kdd.core.builder import build_kernel
from kdd.core.codegen.ptx import generate_ptx
from kdd.core.config.defaults import resolve_config
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.problem import problem_from_text
from kdd.core.ptxsim.machine import supports
from kdd.core.spec import load_spec
from kdd.core.targets import get_target

ROOT = Path(__file__).resolve().parents[3]
TYPES = ["f16", "bf16", "f16:f16:f32", "bf16:bf16:f32", "s8:s8:s32", "u8:s8:u8", "s8", "u8:u8:s32", "f16:f16:s8"]
POST_OPS = "relu+linear:2:1+abs+square+sqrt+exp+elu:0.5+swish:1.5+logistic+tanh+gelu_tanh+bias+sum:0.5+add:f32:per_oc+scale:0.5"


def _opcodes(ptx: str) -> set[str]:
    body = ptx[ptx.index(".entry"):]
    ops = set()
    for line in body.splitlines():
        code = line.split("//")[0].strip()
        if not code.endswith(";") or code.startswith("."):
            continue
        code = re.sub(r"^@!?%\w+\s+", "", code)
        ops.add(code.split()[0].rstrip(";"))
    return ops


def _kernels():
    for path in sorted((ROOT / "examples").glob("sm90_*.kernel.toml")):
        spec, _ = load_spec(path.read_text(), str(path))
        yield path.name, spec.check, spec.config
    for types in TYPES:
        yield types, problem_from_text("m32n16k64", types=types, post_ops=POST_OPS), None


@pytest.mark.slow
@pytest.mark.parametrize("name, problem, config", list(_kernels()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_opcode_the_sm90_generator_emits_is_simulated(name, problem, config):
    target = get_target("sm_90")
    kernel = build_kernel(problem, resolve_config(problem, target, config), target)
    listing = generate_ptx(kernel, run_pipeline(kernel).final, target, check=False)
    ops = _opcodes(listing.asm)
    assert any(o.startswith(("mma", "wgmma.mma_async")) for o in ops)     # the tensor cores, either way
    assert sorted(o for o in ops if not supports(o)) == []
