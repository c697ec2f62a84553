"""``python -m benchmarks.startup [--runs 5] [--base TREE]``: what each command costs to start,
on the small sample files (a few dozen cases: the run itself is a few milliseconds, the rest
is importing and setting up).

Each command is a fresh ``python -m evalstream ...`` measured by ``measure.py`` (CPU =
user + system of the process), run from the tree's root with bytecode compiled, as an
installed package has it. With ``--base`` the same commands run from another copy of the tree
(``git worktree add --detach /tmp/base main``) in the same rounds, interleaved command by
command: a change side by side with the code before it. Medians of ``--runs`` rounds; the
1-minute load average is printed beside the table, since the CPU seconds of a start-up carry
the machine's contention.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.run import ROOT, compile_bytecode, time_command

SAMPLES = "data/samples"
# name -> the arguments after `python -m evalstream` ({out}: a scratch folder of the run;
# {states}: build's output of the sample cases, made once before the rounds).
# The first two are the floors: the interpreter alone, and the msgspec baseline of `build`
# (`python -m benchmarks baseline msgspec`), whose start-up the build benchmarks carry too.
COMMANDS: dict[str, tuple[str, ...]] = {
    "python -c pass": (),
    "msgspec floor": (),
    "import evalstream": (),  # `python -c "import evalstream"`
    "--version": ("--version",),
    "--help": ("--help",),
    "build": ("build", f"{SAMPLES}/cases.jsonl", "{out}/states.jsonl"),
    "build -q": ("build", f"{SAMPLES}/cases.jsonl", "{out}/states-q.jsonl", "-q"),
    # the command of the build benchmarks (`evalstream-all`): a rubric file, the summary
    "build all-fields": ("build", f"{SAMPLES}/cases.jsonl", "{out}/states-all.jsonl",
                         "--rubrics", "benchmarks/all_fields.toml"),
    "validate": ("validate", f"{SAMPLES}/cases.jsonl"),
    "stats": ("stats", f"{SAMPLES}/cases.jsonl"),
    "convert": ("convert", f"{SAMPLES}/qa.csv", "{out}/qa.jsonl", "--map",
                "input=question,output=answer,context=passage"),
    "agree": ("agree", f"{SAMPLES}/verdicts.jsonl", f"{SAMPLES}/cases.jsonl"),
    "judge --dry-run": ("judge", "{states}", "{out}/verdicts.jsonl", "--model", "gpt-4.1-mini",
                        "--dry-run"),
}


def argv_of(name: str, out: Path, states: Path) -> list[str]:
    """The command line of ``name``."""
    if name == "python -c pass":
        return [sys.executable, "-c", "pass"]
    if name == "msgspec floor":
        return [sys.executable, "-m", "benchmarks", "baseline", "msgspec",
                f"{SAMPLES}/cases.jsonl", str(out / "floor.jsonl")]
    if name == "import evalstream":
        return [sys.executable, "-c", "import evalstream"]
    args = [a.format(out=out, states=states) for a in COMMANDS[name]]
    return [sys.executable, "-m", "evalstream", *args]


def main(argv: list[str] | None = None) -> int:
    """Measure every command (this tree, and ``--base`` beside it); print a markdown table."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--base", type=Path, metavar="TREE", help="another copy of the tree")
    p.add_argument("--commands", nargs="+", choices=list(COMMANDS), default=list(COMMANDS))
    args = p.parse_args(argv)
    trees = {"this": ROOT, **({"base": args.base.resolve()} if args.base else {})}
    # Each tree's own package: `python -m` and `-c` put the working directory first on the
    # path, and no PYTHONPATH may point at another tree.
    os.environ.pop("PYTHONPATH", None)
    cpu: dict[tuple[str, str], list[float]] = {}
    loads = []
    with tempfile.TemporaryDirectory(prefix="startup-") as scratch:
        out = Path(scratch)
        for tree in trees.values():
            compile_bytecode(tree)
        states = out / "sample-states.jsonl"
        subprocess.run([sys.executable, "-m", "evalstream", "build", f"{SAMPLES}/cases.jsonl",
                        str(states), "-q"], cwd=ROOT, check=True)
        for _ in range(args.runs):
            loads.append(os.getloadavg()[0])
            for name in args.commands:
                for label, tree in trees.items():
                    run, stderr = time_command(argv_of(name, out, states), out / "unused", 600,
                                               tree)
                    if run.exit_code not in (0, 1):
                        raise SystemExit(f"{label}: {name} exited {run.exit_code}: {stderr}")
                    cpu.setdefault((label, name), []).append(run.cpu_s)
    heads = [f"{label} CPU ms" for label in trees]
    print(f"load average (1 min) during the rounds: {min(loads):.1f}-{max(loads):.1f}; "
          f"medians of {args.runs} runs")
    print("| command | " + " | ".join(heads) + (" | this / base |" if len(trees) > 1 else " |"))
    print("|---" * (len(heads) + 1 + (len(trees) > 1)) + "|")
    for name in args.commands:
        medians = [statistics.median(cpu[(label, name)]) * 1000 for label in trees]
        cells = [f"{m:.0f}" for m in medians]
        if len(trees) > 1:
            cells.append(f"{medians[0] / medians[1]:.2f}")
        print(f"| `{name}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
