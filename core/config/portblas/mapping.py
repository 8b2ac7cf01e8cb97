"""A portBLAS ``Gemm_Launcher`` as kdd knobs for a problem and a target, argument by argument.

What each argument means is portBLAS's (``include/operations/blas3_trees.h``,
``src/operations/blas3/gemm_*.hpp``); what kdd makes of it:

- the work-group block ``ItemRows*WgRows x ItemCols*WgCols`` (M x N) is kept: portBLAS's
  ``WgRows*WgCols`` work items are ``simd``-lane threads (warps on sm_90), so ``tg`` has
  ``items / simd`` threads and ``iter`` is the block over them, as square as the FMA's shape allows
  (``WgSize`` is not passed to the kernel by ``Gemm_Launcher``: the work group is ``WgRows*WgCols``);
- ``ClSize / sizeof(element)`` elements of K per step (portBLAS's ``cl_elems``) are ``iter``'s K;
- ``gemm_memory_t::local`` stages A and B in SLM (``slm.bufs`` 1, or 2 with ``DoubleBuffer``),
  ``no_local`` reads global memory (``slm.bufs = 0``); ``ConflictA``/``ConflictB`` pad SLM rows
  (``pad_slm``);
- ``naive`` is one C element per work item; ``tall_skinny`` splits K over
  ``ceil(4 * compute_units / groups(M x N))`` groups (``GemmPartial::get_ideal_cube_depth``), as
  ``loop``'s K trips; ``standard`` covers K inside a group (``global_reduction = false``);
- ``interleaved`` batches put the ``ItemBatchs*WgBatchs`` batch block in ``iter``, the SIMD lanes along
  the batch; ``UseJointMatrix`` is the matrix instruction (``dpas`` on Xe, ``mma`` on sm_90),
  otherwise one multiply-add per lane (``mad``, ``fma``); its ``inp_jmT = sycl::half`` on float
  containers rounds A and B to half before the multiply: ``fma_type = f16``, converted in registers;
- ``TlRows``/``TlCols`` (groups walked together for cache reuse), ``SgRows``/``SgCols``,
  ``GemmVectorization`` and ``VectorSize`` (load widths) have no kdd knob: kdd walks its own grid order
  and takes the target's block messages; the hover says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.tiles import Tile
from kdd.core.config.values import Buffering
from kdd.core.ir.types import Type

from .binding import Binding, bind_problem
from .launcher import VARIABLES, Launcher


@dataclass(frozen=True)
class Step:
    """One line of the mapping: parameter ``param`` (a launcher or Tile parameter), what portBLAS does with it,
    and what kdd does (the knobs it sets, ``knobs``)."""

    param: str
    meaning: str
    kdd: str
    knobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Issue:
    """A diagnostic about parameter ``param``: ``error`` (the launcher cannot be this problem's) or ``warning``."""

    severity: str
    message: str
    param: str


@dataclass(frozen=True)
class PortblasMapping:
    """The knobs a launcher gives (``config``), the parameter each knob comes from (``sources``), the
    mapping line by line, the issues, and the dispatcher's bound variables."""

    launcher: Launcher
    config: KernelConfig
    sources: dict
    steps: tuple[Step, ...]
    issues: tuple[Issue, ...]
    binding: Binding


def _fma_kind(target, matrix: bool) -> str:
    if target.isa == "xe":
        return "dpas" if matrix else "mad"
    return "mma" if matrix else "fma"


def _unit(target, fma: str, simd: int, a, b) -> tuple[int, int, int]:
    """(M, N, K) of one FMA instruction multiplying ``a`` by ``b``, (1, simd, 1) when there is none."""
    shapes = [s for s in target.shapes(fma=fma) if s.a == a and s.b == b]
    fitting = [s for s in shapes if s.simd == simd] or shapes
    if not fitting:
        return 1, simd, 1
    s = fitting[0]
    return s.m, s.n, s.k


def _joint_matrix_type(inp_jmT: str) -> str | None:
    """kdd's name of a joint_matrix input type narrower than f32 (``sycl::half``: f16), else None."""
    name = inp_jmT.removeprefix("sycl::").removeprefix("ext::oneapi::")
    return {"half": "f16", "bfloat16": "bf16"}.get(name)


def _split(block_m: int, block_n: int, threads: int, unit_n: int) -> tuple[int, int, int, int]:
    """(threads along M, along N, iter M, iter N) with ``threads`` in all over a ``block_m x block_n``
    block: N per thread whole FMA columns (``unit_n``), the per-thread tile as square as it gets (the
    larger N share on a tie). A block narrower than one FMA's N is widened to it (the lanes past the
    problem's N compute padding) and its threads go along M."""
    best = None
    for tn in range(1, threads + 1):
        if threads % tn:
            continue
        tm = threads // tn
        if block_m % tm or block_n % tn or (block_n // tn) % unit_n:
            continue
        score = (abs(math.log((block_m // tm) / (block_n // tn))), -tn)
        if best is None or score < best[0]:
            best = (score, (tm, tn, block_m // tm, block_n // tn))
    if best is not None:
        return best[1]
    tm = math.gcd(threads, block_m)
    return tm, 1, block_m // tm, -(-block_n // unit_n) * unit_n


def map_launcher(launcher: Launcher, problem, target) -> PortblasMapping:
    """The kdd knobs of ``launcher`` for ``problem`` (a GEMM) on ``target``, with every step explained."""
    steps: list[Step] = []
    issues: list[Issue] = []
    sources: dict[str, str] = {}
    binding = bind_problem(problem)
    tile = launcher.tile
    lv = launcher.value

    def note(param, meaning, kdd, *knobs):
        steps.append(Step(param, meaning, kdd, knobs))
        for k in knobs:
            sources.setdefault(k, param)

    _bind_variables(launcher, binding, steps, issues)
    a_bytes = problem.types.src.size
    dims = problem.gemm_dims()
    batch = [name for name, _ in dims.b]
    matrix = bool(lv("UseJointMatrix"))
    fma = _fma_kind(target, matrix)
    simd = target.simd_for(fma)
    src = problem.types.src
    fma_type = _joint_matrix_type(tile["inp_jmT"]) if matrix else None
    converts = fma_type is not None and str(src) == "f32" and str(problem.types.wei) == "f32"
    mul = Type.parse(fma_type) if converts else src
    unit_m, unit_n, unit_k = _unit(target, fma, simd, mul, mul if converts else problem.types.wei)
    worker = "warp" if target.lanes.fixed else f"SIMD{simd} thread"
    note("UseJointMatrix", "joint_matrix (SYCL's matrix extension) for the multiply-adds" if matrix else
         "scalar multiply-adds per work item",
         f"fma = {fma} ({unit_m}x{unit_n}x{unit_k} per instruction), simd = {simd}", "fma", "simd")
    if matrix:
        jm = (tile["jm_M"], tile["jm_N"], tile["jm_K"])
        note("jm_M", f"joint_matrix fragment {jm[0]}x{jm[1]}x{jm[2]}, {tile['inp_jmT']} -> {tile['out_jmT']}",
             f"{fma} fragments of {unit_m}x{unit_n}x{unit_k}: {max(1, jm[0] // unit_m)}x{max(1, jm[1] // unit_n)} "
             f"of them per joint_matrix tile")
        if converts:
            note("inp_jmT", f"joint_matrix inputs {tile['inp_jmT']}: A and B read as {src} and rounded to "
                 f"{fma_type} before the multiply", f"fma_type = {fma_type}: each thread converts its {src} A and "
                 f"B tiles to {fma_type} in registers before {fma}", "fma_type")
        elif fma_type is not None and str(src) != fma_type:
            ab = f"{src}:{problem.types.wei}"
            issues.append(Issue("error", f"joint_matrix inputs {tile['inp_jmT']} from {ab} A/B: kdd converts f32 "
                                         f"A and B (fma_type), not {ab}", "inp_jmT"))

    algorithm = lv("GemmAlgorithm")
    memory = lv("GemmMemoryType")
    k_step = max(1, lv("ClSize") // a_bytes)
    items = tile["WgRows"] * tile["WgCols"]
    config: dict = {"fma": fma, "simd": simd} | ({"fma_type": fma_type} if converts else {})
    note("WgSize", f"{lv('WgSize')} work items requested", f"not passed to the kernel by Gemm_Launcher: the "
         f"work group is WgRows x WgCols = {items} items" + ("" if items == lv("WgSize") else
                                                             f" (not {lv('WgSize')})"))
    if lv("BatchType") == "interleaved":
        block_b = tile["ItemBatchs"] * tile["WgBatchs"]
        lanes_b = -(-block_b // simd) * simd
        block_m, block_n = tile["ItemRows"] * tile["WgRows"], tile["ItemCols"] * tile["WgCols"]
        tm, tn = tile["WgRows"], tile["WgCols"]
        cap = target.max_group_threads(target.registers.max_regs, simd)
        while tm * tn > cap:            # more item positions than a group holds threads: two per thread
            tm, tn = (tm // 2, tn) if tm >= tn and tm > 1 else (tm, tn // 2)
        iter_tile = {**({batch[-1]: lanes_b} if batch else {}), "m": block_m // tm, "n": block_n // tn}
        config["iter"] = Tile.of({k: v for k, v in iter_tile.items() if v > 1})
        config["tg"] = Tile.of({k: v for k, v in (("m", tm), ("n", tn)) if v > 1})
        note("ItemBatchs", f"each item computes {tile['ItemBatchs']} batch entries; a work group "
             f"{block_b} of them (ItemBatchs x WgBatchs), K one element at a time",
             f"iter {config['iter']}: the group's batch entries in one thread, its {simd} lanes along the batch "
             f"(kdd's batched {fma})" + (f", {lanes_b - block_b} of them padding" if lanes_b > block_b else ""),
             "iter")
        note("WgRows", f"work group {tile['WgRows']} x {tile['WgCols']} x {tile['WgBatchs']} items, block "
             f"{block_m} x {block_n} x {block_b}", f"tg {config['tg'] or 'x'}: {tm * tn} {worker}s over the "
             f"M x N item positions" + ("" if tm * tn == tile["WgRows"] * tile["WgCols"] else
                                         f" (at most {cap} per group on {target.name})"), "tg")
    elif algorithm == "naive":
        threads = max(1, items // simd)
        config["iter"] = Tile.of({"m": unit_m, "n": unit_n, "k": unit_k} if unit_m > 1 else {"n": unit_n})
        config["tg"] = Tile.of({"n": threads} if threads > 1 else {})
        note("GemmAlgorithm", "gemm_ref: one C element per work item, the whole K in a loop",
             f"iter {config['iter']} (one element per lane), tg {config['tg'] or 'x'}: {threads} {worker}s",
             "iter", "tg")
    else:
        block_m, block_n = tile["ItemRows"] * tile["WgRows"], tile["ItemCols"] * tile["WgCols"]
        threads = max(1, items // simd)
        tm, tn, it_m, it_n = _split(block_m, block_n, threads, unit_n)
        k_iter = max(unit_k, k_step - k_step % unit_k)
        config["iter"] = Tile.of({"m": it_m, "n": it_n, "k": k_iter})
        config["tg"] = Tile.of({k: v for k, v in (("m", tm), ("n", tn)) if v > 1})
        wide = "" if it_n * tn == block_n else f", N widened from {block_n} to one {fma}'s {it_n}"
        note("ItemRows", f"each work item computes {tile['ItemRows']} x {tile['ItemCols']} of C",
             f"a {worker} holds {simd} items: iter m{it_m} n{it_n} (the block over {tm} x {tn} {worker}s{wide})",
             "iter")
        note("WgRows", f"work group {tile['WgRows']} x {tile['WgCols']} items: block {block_m} x {block_n} of C",
             f"tg {config['tg'] or 'x'}: {items} items / {simd} lanes = {tm * tn} {worker}s", "tg")
        note("ClSize", f"{lv('ClSize')}-byte cache lines: K advances {k_step} elements per step (cl_elems)",
             f"iter k{k_iter}" + ("" if k_iter == k_step else f" (whole {fma} K steps of {unit_k})"), "iter")
    if algorithm == "tall_skinny":
        units = target.device.compute_units
        groups_mn = math.ceil(dims.m[0][1] / (tile["ItemRows"] * tile["WgRows"])) * \
            math.ceil(dims.n[0][1] / (tile["ItemCols"] * tile["WgCols"])) if dims.m and dims.n else 1
        depth = (4 * int(units.value) - 1) // groups_mn + 1
        k_size = dims.k[0][1]
        k_iter = config["iter"].get("k")
        trips = max(1, math.ceil(k_size / (k_iter * depth)))
        config["loop"] = Tile.of({"k": trips})
        config["global_reduction"] = True
        parts = math.ceil(k_size / (k_iter * trips))
        note("GemmAlgorithm", f"tall_skinny (GemmPartial): K split over ceil(4 x {int(units.value)} compute units "
             f"/ {groups_mn} groups) = {depth} groups, partial sums reduced after",
             f"loop k{trips}: {parts} groups of {trips} trips over K = {k_size}, partial sums added by kdd's "
             f"split K (docs/config.md, Split K)", "loop", "global_reduction")
    else:
        config["global_reduction"] = False
        if algorithm != "naive":
            note("GemmAlgorithm", f"{algorithm}: the whole K inside one work group",
                 "global_reduction = false (the defaults' loop covers K)", "global_reduction")
    local = memory == "local" and algorithm != "naive"
    bufs = (2 if lv("DoubleBuffer") else 1) if local else 0
    config["slm"] = Buffering(bufs)
    note("GemmMemoryType", {"local": "A and B blocks staged in local memory", "no_local": "A and B read from "
                            "global memory", "subgroup": "sub-group shuffles instead of local memory"}[memory],
         f"slm bufs = {bufs}" + (" (gemm_ref uses no local memory)" if memory == "local" and not local else ""),
         "slm")
    if memory == "subgroup":
        issues.append(Issue("warning", "gemm_memory_t::subgroup: kdd shares no data through sub-group shuffles; "
                                       "A and B are read from global memory (slm bufs = 0)", "GemmMemoryType"))
    note("DoubleBuffer", "two local-memory buffers, half the barriers" if lv("DoubleBuffer") else "one buffer",
         f"slm bufs = {bufs}" if local else "no local memory: nothing to double buffer", "slm")
    pad = bool(local and (lv("ConflictA") or lv("ConflictB")))
    config["pad_slm"] = pad
    note("ConflictA", "pad local-memory rows of A / B against bank conflicts (NbcA, NbcB)",
         f"pad_slm = {'true' if pad else 'false'}", "pad_slm")
    note("GemmVectorization", f"{lv('GemmVectorization')} vectorization, VectorSize {lv('VectorSize')} "
         "elements per load/store", "no kdd knob: kdd's loads and stores are the target's block messages "
         "(2D block loads on xehpc), as wide as the layout allows")
    if (tile["TlRows"], tile["TlCols"]) != (1, 1):
        note("TlRows", f"top-level tile: {tile['TlRows']} x {tile['TlCols']} work groups walked together for "
             "cache reuse", "not generated: kdd walks its own grid order (N on X, M on Y, batch and split K on Z)")
    if (tile["SgRows"], tile["SgCols"]) != (1, 1):
        note("SgRows", f"sub-group tile {tile['SgRows']} x {tile['SgCols']}", "read only by portBLAS's "
             "sub-group and joint-matrix kernels' fragment walk; kdd's lanes follow its FMA's layout")
    return PortblasMapping(launcher, KernelConfig(**config), sources, tuple(steps), tuple(issues), binding)


def _bind_variables(launcher: Launcher, binding: Binding, steps: list, issues: list) -> None:
    """The dispatcher's variables: each written variable is bound; each literal must agree with the problem."""
    meanings = {"TransA": "A transposed on the fly", "TransB": "B transposed on the fly",
                "SymmA": "A symmetric (SYMM)", "SymmB": "B symmetric (SYMM)",
                "is_beta_zero": "beta == 0: C is not read"}
    for param, var in VARIABLES.items():
        if var in binding.errors:
            issues.append(Issue("error", binding.errors[var], param))
            continue
        value = binding.values[var]
        written = launcher.args.get(param)
        text = written.text if written is not None else f"{var} (left out: false)"
        steps.append(Step(param, meanings[param], f"{text} = {str(value).lower()}: {binding.why[var]}"))
        if written is not None and written.kind == "bool" and written.value != value:
            issues.append(Issue("error", f"{param} is {written.text} but the problem says {var} = "
                                         f"{str(value).lower()} ({binding.why[var]})", param))
    if "C" in binding.errors:
        issues.append(Issue("error", binding.errors["C"], "TileT"))
    kind = binding.values["batch_type"]
    if "batch_type" in binding.errors:
        issues.append(Issue("error", binding.errors["batch_type"], "BatchType"))
    elif launcher.value("BatchType") != kind and binding.values["batch_size"] > 1:
        issues.append(Issue("error", f"BatchType is {launcher.value('BatchType')} but the problem's batch is "
                                     f"{kind} ({binding.why['batch_type']})", "BatchType"))
    steps.append(Step("BatchType", f"{launcher.value('BatchType')} batches",
                      f"the problem's batch: {binding.why['batch_type']}, batch_size = "
                      f"{binding.values['batch_size']}"))
