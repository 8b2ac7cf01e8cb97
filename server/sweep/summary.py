"""The summary table of a sweep's rows: per target, prop and type, how many tasks end how, and their time.

Refusals and errors are counted by class (the failure's code), so like causes group together; wall
and CPU seconds are the tasks' own, summed (a run's elapsed time is printed beside the table).
"""
from __future__ import annotations

from collections import Counter, defaultdict

OUTCOMES = ("ok", "wrong", "refused", "error", "lost")


def table(rows: list[dict]) -> list[dict]:
    """One entry per (target, prop, type): counts per outcome, classes of the others, seconds."""
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in rows:
        t = r["task"]
        groups[(t["target"], t["prop"], t["type"])].append(r)
    out = []
    for (target, prop, typ), rs in sorted(groups.items()):
        counts = Counter(r["verdict"]["outcome"] for r in rs)
        classes = Counter(f"{r['verdict']['outcome']} {r['verdict']['class']}" for r in rs
                          if r["verdict"]["outcome"] != "ok")
        out.append({"target": target, "prop": prop, "type": typ, "tasks": len(rs),
                    **{o: counts.get(o, 0) for o in OUTCOMES}, "classes": dict(classes.most_common()),
                    "wall_s": round(sum(r["wall_s"] for r in rs), 1), "cpu_s": round(sum(r["cpu_s"] for r in rs), 1)})
    return out


def render(rows: list[dict]) -> str:
    """The table as text, with a total line and the classes of everything not ok."""
    entries = table(rows)
    lines = [f"{'target':7} {'prop':6} {'type':10} {'tasks':>6} {'ok':>6} {'wrong':>6} {'refused':>7} "
             f"{'error':>6} {'lost':>5} {'wall s':>9} {'CPU s':>9}"]
    for e in entries:
        lines.append(f"{e['target']:7} {e['prop']:6} {e['type']:10} {e['tasks']:6} {e['ok']:6} {e['wrong']:6} "
                     f"{e['refused']:7} {e['error']:6} {e['lost']:5} {e['wall_s']:9.1f} {e['cpu_s']:9.1f}")
    total = {k: sum(e[k] for e in entries) for k in ("tasks", *OUTCOMES, "wall_s", "cpu_s")}
    lines.append(f"{'all':25} {total['tasks']:6} {total['ok']:6} {total['wrong']:6} {total['refused']:7} "
                 f"{total['error']:6} {total['lost']:5} {total['wall_s']:9.1f} {total['cpu_s']:9.1f}")
    classes = Counter()
    for e in entries:
        classes.update(e["classes"])
    if classes:
        lines.append("not ok, by class (outcome class: tasks):")
        lines += [f"  {name}: {n}" for name, n in classes.most_common()]
    return "\n".join(lines) + "\n"
