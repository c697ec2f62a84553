"""Peak memory of ``agree`` and ``compare`` on generated verdict files (not a test).

``python -m tests.verdicts.measure_memory DIR [N]`` writes, into DIR (reused when present):
N verdicts (default 10,000,000) over N/4 cases and 4 rubrics with short ids and hashes, a
second run with 5% of the statuses flipped and 1% of the states changed, the cases with
one label per (case, rubric), and the first N/10 verdicts again, with and without
2,000-character rationales. Each command runs in its own process; its peak RSS comes from
``wait4`` (the same figure as ``/usr/bin/time -v``'s "Maximum resident set size"). Prints
one JSON line per run.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

RUBRICS = ("claim-support", "tool-backed-claims", "policy-compliance", "escalation")
SOURCES = ("human", "synthetic", "imported")


def verdict(i: int, status: str, state: int, rationale: str = "") -> str:
    extra = f',"rationale":"{rationale}"' if rationale else ""
    return (f'{{"case_id":"c{i // 4}","rubric_id":"{RUBRICS[i % 4]}","status":"{status}"'
            f'{extra},"judge":{{"model":"m1"}},"rubric_hash":"r{i % 4}","state_hash":"s{state}",'
            '"exposure":{"shown":["user_input","assistant_response"],"withheld":[],'
            '"never_shown":["expected"]}}\n')


def generate(folder: Path, n: int) -> dict[str, Path]:
    paths = {name: folder / f"{name}-{n}.jsonl"
             for name in ("a", "b", "cases", "rationales", "compact")}
    if all(p.exists() for p in paths.values()):
        return paths
    rnd = random.Random(7)
    statuses = ["pass" if rnd.random() < 0.6 else "fail" for _ in range(256)]
    with paths["a"].open("w") as a, paths["b"].open("w") as b:
        for i in range(n):
            status = statuses[i % 251]
            a.write(verdict(i, status, i))
            flipped = ("fail" if status == "pass" else "pass") if i % 20 == 0 else status
            b.write(verdict(i, flipped, i + 1 if i % 100 == 7 else i))
    with paths["cases"].open("w") as f:
        for c in range(n // 4):
            expected = ",".join(f'"{r}":{{"status":"{statuses[(4 * c + k + c % 3) % 251]}",'
                                f'"source":"{SOURCES[c % 3]}"}}' for k, r in enumerate(RUBRICS))
            f.write(f'{{"id":"c{c}","input":"q","output":"a","metadata":{{"scenario":'
                    f'"s{c % 7}"}},"expected":{{{expected}}}}}\n')
    text = "x" * 2000
    with paths["rationales"].open("w") as f, paths["compact"].open("w") as g:
        for i in range(n // 10):  # the same verdicts, with and without 2,000-character text
            f.write(verdict(i, statuses[i % 251], i, text))
            g.write(verdict(i, statuses[i % 251], i))
    return paths


def measure(argv: list[str]) -> dict[str, float | int]:
    """Run a command with stdout discarded; its exit code, wall time and peak RSS."""
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status, usage = os.wait4(pid, 0)
    return {"exit_code": os.waitstatus_to_exitcode(status),
            "wall_s": round(time.perf_counter() - start, 1),
            "max_rss_mib": round(usage.ru_maxrss / 1024)}


def main(args: list[str]) -> None:
    folder = Path(args[0])
    n = int(args[1]) if len(args) > 1 else 10_000_000
    folder.mkdir(parents=True, exist_ok=True)
    paths = generate(folder, n)
    py = [sys.executable, "-m", "evalstream"]
    runs = {
        "agree": [*py, "agree", str(paths["a"]), str(paths["cases"]), "--format", "json"],
        "agree --by scenario": [*py, "agree", str(paths["a"]), str(paths["cases"]), "--by",
                                "scenario", "--format", "json"],
        "compare": [*py, "compare", str(paths["a"]), str(paths["b"]), "--format", "json"],
        "agree, N/10 verdicts": [*py, "agree", str(paths["compact"]), str(paths["cases"]),
                                 "--format", "json"],
        "agree, the same N/10 verdicts with 2,000-char rationales": [
            *py, "agree", str(paths["rationales"]), str(paths["cases"]), "--format", "json"],
    }
    for name, argv in runs.items():
        sizes = {k: os.path.getsize(p) for k, p in paths.items()}
        print(json.dumps({"run": name, "verdicts": n, "file_bytes": sizes, **measure(argv)}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
