"""The byte-identity guard of a refactor: every example's IR, assembly, PTX, SASS and stats, recorded and compared.

``record`` compiles every shipped example (``examples/*.kernel.toml`` and
those in its folders: ``sm90_tuned/``, ``seed002/``) through the engine, as
``kdd compile --json`` does, and writes the SHA-256 of each artifact to ``tests/data/snapshot.json`` (with
``--out DIR`` also the artifacts' full text, one JSON file per example, to diff
against later). ``compare`` compiles them again and prints, per example, the
artifacts that changed; with ``--against DIR`` (a full recording) it prints the
first lines of each changed artifact's diff.

The artifacts: the builder's IR and the IR after every pass, the final IR, the
assembly (Xe assembly with live registers per line, or sm_90's PTX), its
listing, the SASS with live registers (sm_90), the assembler's report, the
stats (registers, main loop, metrics, instruction mix, roofline). Wall times
(a pass's ``ms``, whether it came from a cache) are not artifacts and are
dropped.

Exit status: 0 identical (or recorded), 1 an artifact differs or is missing,
2 a bad argument or an unreadable recording.

    .venv/bin/python tools/snapshot.py record --out /tmp/kdd-snapshot
    .venv/bin/python tools/snapshot.py compare --against /tmp/kdd-snapshot
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "data" / "snapshot.json"
VOLATILE = ("ms", "cached")  # a pass's wall time and whether it came from the pass cache


def examples() -> list[Path]:
    """Every shipped example config (``examples/`` and its folders), in a fixed order."""
    return sorted((ROOT / "examples").rglob("*.kernel.toml"), key=lambda p: (len(p.parts), p.as_posix()))


def _name(path: Path) -> str:
    return path.relative_to(ROOT / "examples").as_posix()


def artifacts(path: Path, engine=None) -> dict[str, str]:
    """The artifacts of one example as texts, by name (see the module docstring)."""
    from kdd.core.engine.engine import Engine

    engine = engine or Engine()
    source = engine.read(str(path))
    parsed = engine.parse(source)
    ptx = engine.resolve(parsed).target.isa == "ptx"
    out = engine.compile(source, emit="passes,stats,asm" + (",sass" if ptx else ""))
    texts: dict[str, str] = {}
    if not out.get("ok"):
        texts["failure"] = _json(out.get("failure") or out.get("error"))
    trace = out.get("trace")
    if trace:
        texts["ir:build"] = trace["build"]["ir"]
        for entry in trace["passes"]:
            texts[f"ir:{entry['name']}"] = entry["ir"]
        texts["ir:final"] = trace["passes"][-1]["ir"] if trace["passes"] else trace["build"]["ir"]
        texts["passes"] = _json([{k: v for k, v in e.items() if k not in VOLATILE and k != "ir"}
                                 for e in trace["passes"]])
    asm = out.get("asm")
    if asm:
        texts["asm"] = asm.get("asm", "")
        texts["listing"] = asm.get("listing", "")
        texts["asm:lines"] = _json(asm.get("lines"))
        texts["asm:rest"] = _json({k: v for k, v in asm.items() if k not in ("asm", "listing", "lines", "sass")})
    if "sass" in out:
        texts["sass"] = _json(out["sass"])
    if "stats" in out:
        texts["stats"] = _json(out["stats"])
    texts["diagnostics"] = _json(out.get("diagnostics"))
    return texts


def _json(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, default=str)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot(paths: list[Path], full_dir: Path | None = None, log=print) -> dict[str, dict[str, str]]:
    """The digests of every example's artifacts; with ``full_dir`` their texts are written there too."""
    from kdd.core.engine.engine import Engine

    digests: dict[str, dict[str, str]] = {}
    for path in paths:
        texts = artifacts(path, Engine())  # a fresh engine: no example's memo serves another
        name = _name(path)
        digests[name] = {k: _digest(v) for k, v in texts.items()}
        if full_dir is not None:
            target = full_dir / (name.replace("/", "__") + ".json")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(texts, indent=1, sort_keys=True))
        log(f"  {name}: {len(texts)} artifacts")
    return digests


def differences(recorded: dict[str, dict[str, str]], now: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """Per example, the artifacts whose digest changed, appeared or disappeared (``+name``, ``-name``)."""
    out: dict[str, list[str]] = {}
    for name in sorted(set(recorded) | set(now)):
        if name not in now:
            out[name] = ["-example"]
            continue
        if name not in recorded:
            out[name] = ["+example"]
            continue
        was, got = recorded[name], now[name]
        changed = [k for k in was if k in got and was[k] != got[k]]
        changed += [f"-{k}" for k in was if k not in got] + [f"+{k}" for k in got if k not in was]
        if changed:
            out[name] = changed
    return out


def _show_diff(name: str, artifact: str, against: Path, path: Path, lines: int = 30) -> None:
    recorded = against / (name.replace("/", "__") + ".json")
    try:
        before = json.loads(recorded.read_text()).get(artifact, "")
    except (OSError, ValueError):
        print(f"    (no full recording at {recorded})")
        return
    after = artifacts(path).get(artifact, "")
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "recorded", "now", lineterm="", n=1))
    for line in diff[:lines]:
        print("    " + line)
    if len(diff) > lines:
        print(f"    ... {len(diff) - lines} more diff lines")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("record", "compare"))
    ap.add_argument("--manifest", type=Path, default=MANIFEST, help="the digests' file (default %(default)s)")
    ap.add_argument("--out", type=Path, help="record: also write every artifact's text under this folder")
    ap.add_argument("--against", type=Path, help="compare: a folder written by record --out, to print diffs")
    ap.add_argument("--only", help="compare or record the examples whose name contains this text")
    args = ap.parse_args(argv)
    paths = [p for p in examples() if not args.only or args.only in _name(p)]
    print(f"{args.action}: {len(paths)} examples")
    if args.action == "record":
        digests = snapshot(paths, args.out)
        if args.only and args.manifest.exists():
            digests = {**json.loads(args.manifest.read_text()), **digests}
        args.manifest.parent.mkdir(parents=True, exist_ok=True)
        args.manifest.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        print(f"recorded {sum(len(d) for d in digests.values())} artifacts of {len(digests)} examples "
              f"to {args.manifest}")
        return 0
    try:
        recorded = json.loads(args.manifest.read_text())
    except (OSError, ValueError) as exc:
        print(f"cannot read the recording {args.manifest}: {exc}", file=sys.stderr)
        return 2
    if args.only:
        recorded = {k: v for k, v in recorded.items() if args.only in k}
    now = snapshot(paths)
    diff = differences(recorded, now)
    by_name = {_name(p): p for p in paths}
    for name, changed in diff.items():
        print(f"DIFFERS {name}: {', '.join(changed)}")
        if args.against and name in by_name:
            for artifact in changed:
                if artifact[0] not in "+-":
                    _show_diff(name, artifact, args.against, by_name[name])
    total = sum(len(d) for d in now.values())
    if diff:
        print(f"{len(diff)} of {len(recorded)} examples differ")
        return 1
    print(f"identical: {total} artifacts of {len(now)} examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
