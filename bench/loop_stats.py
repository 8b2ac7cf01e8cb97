"""The steady-state main loop per reduction iteration, for every example and every ResNet-50 1x1/3x3 layer.

For each ``examples/*.kernel.toml`` (its real problem shape, its own config)
and each 1x1 and 3x3 layer of ``../shared/data/benchdnn/conv/shapes_resnet_50``
(fwd, f16, xehpg, the default config), the engine builds and runs the passes
and the table shows the ``loop`` object of ``kdd compile FILE --emit stats
--json`` (the code generator is not run): multiply instructions per reduction iteration (``dpas``, ``mma``, or
``mad``/``dp4a``), sends and the fewest sends their bytes need at the
target's largest block message (and the ratio), integer, float and move
operations and their sum against the multiplies, operand reorders; and the
registers: the IR register model of the final IR (on Xe the allocator's walk; a compile reports the
allocation beside it), the floor that can refuse a config before the build (C, A and B tiles), the budget.

Prints the table and writes the rows as JSON (default
``bench/results/loop_stats.json``).

    .venv/bin/python bench/loop_stats.py [--batch PATH] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from kdd.core.engine import Engine, Source
from kdd.core.engine.artifacts import stats_artifact
from kdd.core.engine.failure import StageFailed
from kdd.core.problem.batch_file import read_batch_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RESNET = ROOT.parent / "shared" / "data" / "benchdnn" / "conv" / "shapes_resnet_50"
LAYER_DOC = '[problem]\nop = "conv"\nprop = "fwd"\nshape = "{shape}"\ntypes = "f16"\n\n[target]\nhw = "xehpg"\n'
COLUMNS = ("dpas", "sends", "min_sends", "send_bytes", "int_ops", "float_ops", "moves", "operand_reorders")


def example_sources() -> list[tuple[str, Source]]:
    return [(p.name[: -len(".kernel.toml")], Source(p.read_text(), str(p)))
            for p in sorted(EXAMPLES.glob("*.kernel.toml"))]


def layer_sources(batch: Path) -> list[tuple[str, Source]]:
    """The batch file's 1x1 and 3x3 convolutions, each as a document (fwd, f16, xehpg, default config)."""
    out = []
    for entry in read_batch_file(batch, op="conv"):
        shape = entry.problem.shape
        if (shape.kh, shape.kw) not in ((1, 1), (3, 3)):
            continue
        name = (shape.name or entry.text).split(":")[-1].split("*")[0]
        desc = shape.canonical().split('n"')[0]
        out.append((name, Source(LAYER_DOC.format(shape=desc), f"{name}.kernel.toml")))
    return out


def row(engine: Engine, name: str, source: Source) -> dict:
    """The ``stats`` object of a compile, without the code generator's figures (the engine's stages:
    parse, resolve, build, passes; then the same artifact ``kdd compile --emit stats`` returns)."""
    try:
        parsed = engine.parse(source)
        r = engine.resolve(parsed)
        kernel = engine.kernel(r, parsed.sources())
        stats = stats_artifact(r, kernel, engine.trace(kernel))
    except StageFailed as exc:
        return {"name": name, "ok": False, "error": exc.failure.message}
    regs = stats["registers"]
    return {"name": name, "ok": True, "config": r.config.line(), "target": r.target.name, "loop": stats["loop"],
            "registers": {"floor": sum(regs["floor"].values()), "ir": regs["ir"], "budget": regs["budget"]}}


def table(rows: list[dict]) -> str:
    head = (f"{'kernel':<22}{'fma':>6}{'mul':>7}{'sends':>8}{'min':>5}{'x':>6}{'bytes':>8}{'int':>8}"
            f"{'float':>7}{'moves':>7}{'alu/mul':>8}{'reord':>6}   regs IR/floor/budget")
    lines = [head]
    for r in rows:
        if not r["ok"]:
            lines.append(f"{r['name']:<22}  failed: {r['error'][:90]}")
            continue
        loop, regs = r["loop"], r["registers"]
        reg_text = f"{regs['ir']}/{regs['floor']}/{regs['budget']}"
        if loop is None:
            lines.append(f"{r['name']:<22}{'(no main loop)':>40}   {reg_text}")
            continue
        alu = loop["int_ops"] + loop["float_ops"] + loop["moves"]
        lines.append(
            f"{r['name']:<22}{loop['fma']:>6}{loop['dpas']:>7g}{loop['sends']:>8g}{loop['min_sends']:>5}"
            f"{loop['sends'] / loop['min_sends']:>6.1f}{loop['send_bytes']:>8.0f}{loop['int_ops']:>8g}"
            f"{loop['float_ops']:>7g}{loop['moves']:>7g}{alu / loop['dpas']:>8.1f}{loop['operand_reorders']:>6g}"
            f"   {reg_text}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=Path, default=RESNET, help="benchdnn conv batch file (its 1x1 and 3x3 layers)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "loop_stats.json")
    args = parser.parse_args()
    engine = Engine()
    examples = [row(engine, name, src) for name, src in example_sources()]
    layers = [row(engine, name, src) for name, src in layer_sources(args.batch)]
    print("Main loop per reduction iteration (per SIMD thread); x = sends / min; alu/mul = (int + float + moves) "
          "/ multiplies")
    print("\nexamples (their real shapes and configs)")
    print(table(examples))
    print(f"\n{args.batch.name}: 1x1 and 3x3 layers, fwd f16 xehpg, default config")
    print(table(layers))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": platform.node(), "examples": examples, "layers": layers},
                                    indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
