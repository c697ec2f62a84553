"""``python -m benchmarks judge``: ``evalstream judge`` against the fake server, side by side
with the bare aiohttp loop it is built on; ``python -m benchmarks judge-clients``: the bare
loops of aiohttp, httpx and httpx2, to choose the HTTP client with numbers.

The fake server (``tests/judge/fake_server.py``) answers every request after ``--latency``
seconds (50 ms by default), so with C connections the ceiling is C / latency requests a
second (64 / 0.05 = 1,280). Each run is a fresh process under ``measure.py`` (wall time from
spawn to reap, CPU time and peak RSS from ``wait4``); variants are interleaved run by run, so
each sees the same machine load, and the table reports medians. Requests per second are
judge states (or requests) over the whole process's wall time: start-up, reading the input
twice and writing the verdicts included. The server's own CPU is read from /proc.

- ``aiohttp loop``: N POSTs of a judge-sized body, C in flight, nothing else.
- ``judge``: ``evalstream judge`` on N judge states with a new store (every state sent).
- ``judge, all stored``: the same command again: nothing sent, verdicts from the store.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.run import ROOT, time_command

RUBRIC = """[[rubric]]
id = "helpful"
question = '''Is assistant_response helpful to user_input? Answer status "pass" if so,
"fail" if not, "na" if nothing was asked; in reason, quote the deciding words.'''
shows = ["user_input", "assistant_response"]
"""


def prepare_states(n: int, cache: Path) -> Path:
    """A build output of ``n`` judge states (about 1.4 KB of request each), made once."""
    out = cache / f"judge-states-{n}.jsonl"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    cases, rubric = cache / f"judge-cases-{n}.jsonl", cache / "judge-rubric.toml"
    rubric.write_text(RUBRIC)
    with open(cases, "w") as f:
        for i in range(n):
            f.write(json.dumps({
                "id": f"case-{i}",
                "input": f"I need a table for {i % 12 + 1} tonight at 8pm near the station, "
                         f"booking reference {i}. " * 4,
                "output": f"Done: a table for {i % 12 + 1} at 20:00 at Station Bistro, "
                          f"confirmation #{i * 7919 % 100_000}. " * 4}) + "\n")
    subprocess.run([sys.executable, "-m", "evalstream", "build", str(cases), str(out),
                    "--rubrics", str(rubric), "-q"], cwd=ROOT, check=True)
    return out


class Server:
    """The fake server as a process; ``cpu()`` is its CPU seconds so far."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.judge.fake_server", "--latency", str(latency)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline().split()[1])}/v1"

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _judge(states: Path, out: Path, url: str, c: int) -> list[str]:
    return [sys.executable, "-m", "evalstream", "judge", str(states), str(out), "--model",
            "fake-judge-1", "--base-url", url, "--max-connections", str(c), "-q"]


def _loop(client: str, n: int, url: str, c: int) -> list[str]:
    return [sys.executable, "-m", "benchmarks.judge_clients", client, str(n),
            f"{url}/chat/completions", str(c)]


def _timed(argv: list[str], server: Server, n: int, out: Path) -> dict[str, Any]:
    before = server.cpu()
    run, stderr = time_command(argv, out, timeout=3600)
    if run.exit_code != 0:
        raise RuntimeError(f"{argv[2:4]} exited {run.exit_code}: {stderr[-500:]}")
    return {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "rss_mib": run.max_rss_mib,
            "server_cpu_s": server.cpu() - before, "n": n}


def _row(name: str, n: int, runs: list[dict[str, Any]], ceiling: float,
         baseline: float | None) -> str:
    wall = statistics.median(r["wall_s"] for r in runs)
    rate = n / wall
    cpu_us = statistics.median(r["cpu_s"] for r in runs) / n * 1e6
    server_us = statistics.median(r["server_cpu_s"] for r in runs) / n * 1e6
    rss = max(r["rss_mib"] for r in runs)
    versus = "" if baseline is None else f"{rate / baseline:.2f}"
    lo, hi = min(r["wall_s"] for r in runs), max(r["wall_s"] for r in runs)
    return (f"| {name} | {n:,} | {wall:.2f} ({lo:.2f}-{hi:.2f}) | {rate:,.0f} | "
            f"{rate / ceiling:.0%} | {versus} | {cpu_us:,.0f} | {server_us:,.0f} | {rss:.1f} |")


HEADER = ("| variant | states | median s (min-max) | per s | of C/latency | x aiohttp loop | "
          "client CPU us each | server CPU us each | peak RSS MiB |\n"
          "|---|---|---|---|---|---|---|---|---|")


def main(states: list[int], runs: int, latency: float, c: int, cache: Path) -> int:
    """Time judge and the bare loop on each number of states; print a markdown table."""
    ceiling = c / latency
    server = Server(latency)
    rows = [HEADER]
    try:
        for n in states:
            src = prepare_states(n, cache)
            results: dict[str, list[dict[str, Any]]] = {"loop": [], "judge": [], "stored": []}
            for i in range(runs):
                work = cache / f"judge-out-{n}-{i}"
                work.mkdir(exist_ok=True)
                for f in work.iterdir():
                    f.unlink()
                out = work / "verdicts.jsonl"
                results["loop"].append(_timed(_loop("aiohttp", n, server.url, c), server, n,
                                              out))
                results["judge"].append(_timed(_judge(src, out, server.url, c), server, n, out))
                results["stored"].append(_timed(_judge(src, out, server.url, c), server, n,
                                                out))
                print(f"states {n:,} run {i + 1}: " + ", ".join(
                    f"{k} {v[-1]['wall_s']:.2f} s" for k, v in results.items()),
                    file=sys.stderr, flush=True)
            base = n / statistics.median(r["wall_s"] for r in results["loop"])
            rows.append(_row("aiohttp loop", n, results["loop"], ceiling, None))
            rows.append(_row("judge", n, results["judge"], ceiling, base))
            rows.append(_row("judge, all stored", n, results["stored"], ceiling, None))
    finally:
        server.stop()
    print(f"latency {latency * 1000:.0f} ms, --max-connections {c}: ceiling {ceiling:,.0f}/s; "
          f"{runs} runs each, interleaved; {time.strftime('%Y-%m-%d')}")
    print("\n".join(rows))
    return 0


def main_clients(n: int, runs: int, latency: float, c: int, cache: Path) -> int:
    """Time the bare loop of each installed HTTP client; print a markdown table."""
    from benchmarks.judge_clients import CLIENTS

    ceiling = c / latency
    server = Server(latency)
    installed = [name for name in CLIENTS if _importable(name)]
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in installed}
    cache.mkdir(parents=True, exist_ok=True)
    try:
        for i in range(runs):
            for name in installed:
                results[name].append(_timed(_loop(name, n, server.url, c), server, n,
                                            cache / "none"))
            print(f"run {i + 1}: " + ", ".join(f"{k} {v[-1]['wall_s']:.2f} s"
                                               for k, v in results.items()),
                  file=sys.stderr, flush=True)
    finally:
        server.stop()
    print(f"{n:,} requests, latency {latency * 1000:.0f} ms, {c} connections: ceiling "
          f"{ceiling:,.0f}/s; {runs} runs each, interleaved; not installed: "
          f"{', '.join(sorted(set(CLIENTS) - set(installed))) or 'none'}")
    print(HEADER.replace("x aiohttp loop", "x aiohttp").replace("states", "requests"))
    base = n / statistics.median(r["wall_s"] for r in results["aiohttp"]) \
        if "aiohttp" in results else None
    for name, runs_ in results.items():
        print(_row(f"{name} {_version(name)}", n, runs_, ceiling, base))
    return 0


def _importable(name: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                          check=False).returncode == 0


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)
