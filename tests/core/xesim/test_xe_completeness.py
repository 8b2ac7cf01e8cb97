"""The simulator runs everything the Xe code generator can emit: its mnemonic table, every FMA form of
both Xe targets' catalogs (dpas type pairs, mad and dp4a signedness mixes), SIMD32 flags, prefetches;
and it rounds as the hardware does (a float-to-integer ``mov`` truncates, ``rnde`` rounds half to even).
Each instruction's result is compared with an independent Python/numpy computation."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from kdd.core.codegen.xe.emitter import MNEMONICS
from kdd.core.ir.types import Scalar
from kdd.core.targets import get_target
from kdd.core.xesim import alu
from kdd.core.xesim.errors import Fault, SimulatorGap
from kdd.core.xesim.machine import HANDLERS, Geometry, Machine
from kdd.core.xesim.memory import Global
from kdd.core.xesim.program import parse
from kdd.core.xesim.run import load

EOT = "(W) send.gtwy (8|M0) null r15 null:0 0x0 0x02000010 {EOT}"
IGA = {Scalar.S8: "b", Scalar.U8: "ub", Scalar.F16: "hf", Scalar.BF16: "bf", Scalar.F32: "f", Scalar.F64: "df",
       Scalar.S32: "d"}
XE = ("xehpg", "xehpc")


def machine(lines: list[str], reg_bytes: int = 32, program=None) -> Machine:
    prog = program if program is not None else parse("\n".join(lines + [EOT]))
    return Machine(prog, Geometry(1, 1, reg_bytes, 128, 64), Global([]))


def test_every_mnemonic_the_generator_emits_has_a_simulator_handler():
    missing = [mn for mn in sorted(MNEMONICS) if mn.split(".")[0] not in HANDLERS
               or (mn.startswith("math.") and mn.split(".")[1] not in alu.MATH)]
    assert missing == []


def test_a_float_to_integer_mov_truncates_and_rnde_rounds_half_to_even_first():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 200.7, -300.0], dtype=np.float32)
    m = machine(["(W) mov (8|M0) (sat)r4.0<1>:b r2.0<1;1,0>:f",
                 "(W) rnde (8|M0) r3.0<1>:f r2.0<1;1,0>:f",
                 "(W) mov (8|M0) (sat)r5.0<1>:b r3.0<1;1,0>:f",
                 "(W) rndd (8|M0) r6.0<1>:f r2.0<1;1,0>:f"])
    m.views["f"][0, 16:24] = x
    m.run()
    assert m.views["b"][0, 128:136].tolist() == [0, 1, 2, 0, -1, 2, 127, -128]
    assert m.views["b"][0, 160:168].tolist() == [0, 2, 2, 0, -2, 2, 127, -128]
    assert m.views["f"][0, 48:56].tolist() == np.floor(x).tolist()


@pytest.mark.parametrize("fn, xs, want", [("exp", [0.0, 1.0, 3.0, -1.0], [1.0, 2.0, 8.0, 0.5]),
                                          ("inv", [4.0, -2.0, 0.5, 8.0], [0.25, -0.5, 2.0, 0.125]),
                                          ("sqt", [9.0, 2.0, 0.25, 1e6], [3.0, 2.0 ** 0.5, 0.5, 1e3]),
                                          ("log", [8.0, 1.0, 0.5, 1024.0], [3.0, 0.0, -1.0, 10.0])])
def test_math_functions_are_within_their_allowed_error(fn, xs, want):
    m = machine([f"(W) math.{fn} (4|M0) r3.0<1>:f r2.0<1;1,0>:f"])
    m.views["f"][0, 16:20] = xs
    m.run()
    got = m.views["f"][0, 24:28].astype(np.float64)
    ulp = np.spacing(np.abs(np.asarray(want, dtype=np.float32))).astype(np.float64)
    assert (np.abs(got - want) <= alu.MATH_ULP[fn] * ulp).all(), (got, want)


@pytest.mark.parametrize("t1, t2", [("d", "d"), ("d", "ud"), ("ud", "d"), ("ud", "ud")])
def test_dp4a_adds_the_four_byte_products_with_each_sources_signedness(t1, t2):
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31, 8)
    b, c = rng.integers(0, 2**32, 8), rng.integers(0, 2**32, 8)
    m = machine([f"(W) dp4a (8|M0) r5.0<1>:d r2.0<1;0>:d r3.0<1;0>:{t1} r4.0<1>:{t2}"])
    m.views["d"][0, 16:24] = a
    m.views["ud"][0, 24:32] = b
    m.views["ud"][0, 32:40] = c

    def byte(v, i, t):
        x = (int(v) >> (8 * i)) & 0xFF
        return x - 256 if t == "d" and x >= 128 else x
    m.run()
    want = [(int(a[j]) + sum(byte(b[j], i, t1) * byte(c[j], i, t2) for i in range(4)) + 2**31) % 2**32 - 2**31
            for j in range(8)]
    assert m.views["d"][0, 40:48].tolist() == want


def _dpas_forms():
    for name in XE:
        t = get_target(name)
        for s in t.shapes(fma="dpas"):
            yield pytest.param(name, s, id=f"{name}-{s.a}x{s.b}-{s.math or 'plain'}")


@pytest.mark.parametrize("target, form", list(_dpas_forms()))
def test_every_dpas_form_of_the_catalog_computes_its_matrix_product(target, form):
    """``dpas.8xR``: src2 (A) holds R rows of 8 dwords of K, src1 (B) 8 dword rows of N channels, each
    dword packing 4 / element-size consecutive K values (VNNI)."""
    t = get_target(target)
    rb, n, depth, rc = t.registers.reg_bytes, form.simd, form.depth, form.m
    per = 1 if form.math == "tf32" else 4 // form.a.size
    k = depth * per
    rng = np.random.default_rng(3)
    ints = form.a.is_int
    ta = "tf32" if form.math else IGA[form.a.scalar]
    tb = "tf32" if form.math else IGA[form.b.scalar]
    tacc = IGA[form.acc.scalar]
    A = rng.integers(-4, 5, (rc, k)) if ints else rng.integers(-8, 9, (rc, k)) / 8.0
    B = rng.integers(-4, 5, (k, n)) if ints else rng.integers(-8, 9, (k, n)) / 8.0
    if not form.a.is_signed and ints:
        A = np.abs(A)
    if not form.b.is_signed and ints:
        B = np.abs(B)
    C = rng.integers(-100, 100, (rc, n)).astype(np.float64)
    acc_reg, b_reg, a_reg = 10, 30, 60
    m = machine([f"(W) dpas.{depth}x{rc} ({n}|M0) r{acc_reg}:{tacc} r{acc_reg}:{tacc} r{b_reg}:{tb} r{a_reg}:{ta}"],
                reg_bytes=rb)
    store = {"f": np.float32, "d": np.int32}[tacc]
    m.views[tacc][0, acc_reg * rb // 4: acc_reg * rb // 4 + rc * n] = C.reshape(-1).astype(store)
    dt = {"b": np.int8, "ub": np.uint8, "hf": np.float16, "tf32": np.float32}.get(ta)
    vnni_b = B.reshape(depth, per, n).transpose(0, 2, 1).reshape(-1)          # [dword row][channel][element]
    if ta == "bf":
        as_bits = lambda v: (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
        m.views["uw"][0, a_reg * rb // 2: a_reg * rb // 2 + A.size] = as_bits(A.reshape(-1))
        m.views["uw"][0, b_reg * rb // 2: b_reg * rb // 2 + B.size] = as_bits(vnni_b)
    else:
        elem = np.dtype(dt).itemsize
        view = m.file[0]
        view[a_reg * rb: a_reg * rb + A.size * elem] = A.reshape(-1).astype(dt).view(np.uint8)
        view[b_reg * rb: b_reg * rb + B.size * elem] = vnni_b.astype(dt).view(np.uint8)
    m.run()
    got = m.views[tacc][0, acc_reg * rb // 4: acc_reg * rb // 4 + rc * n].reshape(rc, n).astype(np.float64)
    assert np.array_equal(got, C + A @ B)


def test_dpasw_is_a_gap_not_a_result():
    m = machine(["(W) dpasw.8x8 (8|M0) r10:f r10:f r30:hf r60:hf"])
    with pytest.raises(SimulatorGap, match="dpasw"):
        m.run()


def test_a_simd32_compare_writes_a_whole_flag_register_and_a_subregister_faults():
    m = machine(["(W) cmp (32|M0) (lt)f1.0 null<1>:d r2.0<1;1,0>:d 16:d",
                 "(W) mov (32|M0) r6.0<1>:d 0:d",
                 "(W&f1.0) mov (32|M0) r6.0<1>:d 1:d"], reg_bytes=64)
    m.views["d"][0, 32:64] = np.arange(32)
    m.run()
    assert m.views["d"][0, 96:128].tolist() == [1] * 16 + [0] * 16
    bad = machine(["(W) cmp (32|M0) (lt)f0.1 null<1>:d r2.0<1;1,0>:d 16:d"], reg_bytes=64)
    with pytest.raises(Fault, match="whole register"):
        bad.run()


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 is not installed")
def test_a_prefetch_with_no_response_changes_nothing_and_never_faults():
    t = get_target("xehpc")
    program, _ = load("(W) mov (1|M0) r2.0<1>:uq 0x1000:uq\n"
                      "(W) load.ugm.d32x64t.a64.ca.ca (1|M0) null:0 [r2:1]\n" + EOT + "\n", t.assembler)
    m = machine([], reg_bytes=64, program=program)
    before = m.file.copy()
    m.run()
    assert m.file[0, 128:136].view(np.uint64)[0] == 0x1000       # the mov ran, nothing else wrote
    m.file[0, 128:136] = 0
    assert (m.file == before).all()


def test_the_instruction_limit_is_a_gap_of_kdd_and_scales_with_the_program(monkeypatch):
    from kdd.core.xesim import machine as mod

    monkeypatch.setattr(mod, "STEP_LIMIT", 50)
    monkeypatch.setattr(mod, "LOOP_ALLOWANCE", 2)
    straight = [f"(W) add (1|M0) r2.0<1>:d r2.0<0;1,0>:d {i}:d" for i in range(60)]
    machine(straight).run()             # 61 instructions, past STEP_LIMIT: loop-free code never trips it
    looping = machine(["L0:", "(W) add (1|M0) r2.0<1>:d r2.0<0;1,0>:d 1:d", "(W) jmpi L0"])
    with pytest.raises(SimulatorGap, match="kdd's limit"):
        looping.run()
