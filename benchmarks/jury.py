"""``python -m benchmarks jury``: a jury of three judges against the fake server, beside one
judge on the same states (issue 26).

Each variant is a fresh ``python -m evalstream judge`` under ``measure.py`` (wall time from
spawn to reap, CPU and peak RSS from ``wait4``), with a new store each run, interleaved run
by run so that each sees the same machine load; the table reports medians:

- ``one judge``: ``--model`` on N states: N requests, N votes.
- ``jury of three``: a jury file of three jurors (three models at the same server): 3N
  requests, 3N votes, one verdict per state with its votes and panel.
- ``one judge, --samples 3``: the same judge asked three samples a state in one request with
  ``n`` (the fake server answers three choices): N requests, 3N votes.

Per second and CPU are per vote (a vote is one answer stored and read back into a verdict);
with C connections and the server's latency the ceiling is C / latency requests a second.
Memory: the peak RSS of the same command on the smaller and the larger number of states.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.judge import Server, _timed, prepare_states

JURORS = ("judge-a", "judge-b", "judge-c")


def _argv(states: Path, out: Path, url: str, c: int, variant: str, jury: Path) -> list[str]:
    argv = [sys.executable, "-m", "evalstream", "judge", str(states), str(out),
            "--max-connections", str(c), "-q"]
    if variant == "jury":
        return argv + ["--jury", str(jury)]
    argv += ["--model", "fake-judge-1", "--base-url", url]
    return argv + (["--samples", "3", "--temperature", "0.7"] if variant == "samples" else [])


def _jury_file(path: Path, url: str) -> Path:
    path.write_text("rule = \"majority\"\n" + "".join(
        f'\n[[judge]]\nmodel = "{m}"\nbase_url = "{url}"\n' for m in JURORS))
    return path


VARIANTS = {"one": ("one judge", 1, 1), "jury": ("jury of three", 3, 3),
            "samples": ("one judge, --samples 3 (n)", 1, 3)}  # name, requests, votes a state
HEADER = ("| variant | states | votes | median s (min-max) | votes per s | requests per s | "
          "of C/latency | client CPU us a vote | x one judge | peak RSS MiB |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def _row(variant: str, n: int, runs: list[dict[str, Any]], ceiling: float,
         one_cpu: float | None) -> str:
    name, requests, votes = VARIANTS[variant]
    wall = statistics.median(r["wall_s"] for r in runs)
    lo, hi = min(r["wall_s"] for r in runs), max(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs) / (n * votes) * 1e6
    versus = "" if one_cpu is None else f"{cpu / one_cpu:.2f}"
    rss = max(r["rss_mib"] for r in runs)
    return (f"| {name} | {n:,} | {n * votes:,} | {wall:.2f} ({lo:.2f}-{hi:.2f}) | "
            f"{n * votes / wall:,.0f} | {n * requests / wall:,.0f} | "
            f"{n * requests / wall / ceiling:.0%} | {cpu:,.0f} | {versus} | {rss:.1f} |")


def main(states: list[int], runs: int, latency: float, c: int, cache: Path) -> int:
    """Time one judge, a jury of three and three samples on each number of states; print a
    markdown table."""
    ceiling = c / latency
    server = Server(latency)
    rows = [HEADER]
    try:
        cache.mkdir(parents=True, exist_ok=True)
        jury = _jury_file(cache / "jury.toml", server.url)
        for n in states:
            src = prepare_states(n, cache)
            results: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
            for i in range(runs):
                for variant in VARIANTS:
                    work = cache / f"jury-out-{n}-{variant}-{i}"
                    work.mkdir(exist_ok=True)
                    for f in work.iterdir():
                        f.unlink()
                    out = work / "verdicts.jsonl"
                    results[variant].append(_timed(
                        _argv(src, out, server.url, c, variant, jury), server, n, out))
                print(f"states {n:,} run {i + 1}: " + ", ".join(
                    f"{k} {v[-1]['wall_s']:.2f} s" for k, v in results.items()),
                    file=sys.stderr, flush=True)
            one = statistics.median(r["cpu_s"] for r in results["one"]) / n * 1e6
            for variant in VARIANTS:
                rows.append(_row(variant, n, results[variant], ceiling,
                                 None if variant == "one" else one))
    finally:
        server.stop()
    print(f"latency {latency * 1000:.0f} ms, --max-connections {c}: ceiling {ceiling:,.0f} "
          f"requests/s; {runs} runs each, interleaved; {time.strftime('%Y-%m-%d')}")
    print("\n".join(rows))
    return 0
