"""``python -m benchmarks judge-faults``: ``evalstream judge`` against a fake server that
refuses as a busy provider does (issue 31), beside the same command against a fault-free
copy of the server and a bare aiohttp loop replaying the same request bodies.

The faulty server (``tests/judge/fake_server.py --first-429 0.2 --first-500 0.02``) answers
the first attempt of 20% of the request bodies with a 429 and ``Retry-After: 1``, and that of
another 2% with a 500; every later attempt, and every attempt at the fault-free copy, gets its
answer after the latency. Which bodies are refused follows from their hash, so every client
meets the same refusals; each run starts with ``POST /reset``, so each first attempt is
refused again.

The input is the issue's: ``build`` (built-in rubrics) of the first 1,500 cases of
``../shared/bench/gen_cases.py`` (up to 30 messages, 8 passages, 10 tool events), its first
``--states`` judge states (2,000); a longer run (``--states 10000``, to show the steady state
beside the 1 s ``Retry-After`` tail a short run cannot hide) builds the first ``--states``
cases instead and takes its first ``--states`` states. Each cell (a latency and a
``--max-connections``) runs four variants (six with ``--base``), interleaved run by run,
``--runs`` rounds, and reports medians:

- ``loop``, ``loop, faults``: ``benchmarks/judge_clients.py replay``, evalstream's exact
  request bodies (checked against the server's count of the bodies judge sent) sent with
  aiohttp, C in flight, each 429 or 500 asked again after its ``Retry-After`` (else 0.5 s),
  the wait outside the C;
- ``judge``, ``judge, faults``: ``python -m evalstream judge`` with a new store each run;
- with ``--base TREE`` (a copy of another commit's tree, e.g. main's), ``base judge`` and
  ``base judge, faults``: the same command run from that tree's code, in the same rounds,
  so that a change is measured against the code before it side by side.

Requests per second are states over the process's wall time (start-up and, for judge, both
passes and the verdicts included); CPU is the client process's, per state; ``rate_limited``
and ``lowest_concurrency`` are judge's report's. The machine's 1-minute load average is read
before each run (the figures: the median and range of a cell's runs).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.run import ROOT, time_command

CASES = 1_500  # the input: the first 1,500 cases of gen_cases.py (--count 106000)
VARIANTS = ("loop", "loop, faults", "judge", "judge, faults")
BASE_VARIANTS = ("base judge", "base judge, faults")


def find_generator() -> Path | None:
    """``shared/bench/gen_cases.py`` beside the repository or one of its parent folders."""
    for folder in ROOT.parents:
        candidate = folder / "shared" / "bench" / "gen_cases.py"
        if candidate.exists():
            return candidate
    return None


def cases_for(n: int) -> int:
    """The generator's cases built for ``n`` states: the issue's 1,500 up to its 2,000 states,
    else as many cases as states (a longer run, to show the steady state)."""
    return CASES if n <= 2_000 else n


def prepare(n: int, cache: Path, generator: Path) -> tuple[Path, Path]:
    """The first ``n`` judge states of build's output over the generator's first
    ``cases_for(n)`` cases, and the request body judge sends for each (one a line), made once."""
    from evalstream._judge.inputs import JudgeState, Reader
    from evalstream._judge.live import request_of
    from evalstream._judge.request import JudgeConfig

    states, bodies = cache / f"faults-states-{n}.jsonl", cache / f"faults-bodies-{n}.jsonl"
    if states.exists() and bodies.exists():
        return states, bodies
    cache.mkdir(parents=True, exist_ok=True)
    count = cases_for(n)
    cases, built = cache / f"faults-cases-{count}.jsonl", cache / f"faults-built-{count}.jsonl"
    subprocess.run([sys.executable, str(generator), "--count", str(count), "--out", str(cases)],
                   check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "evalstream", "build", str(cases), str(built), "-q",
                    "--force"], cwd=ROOT, check=True)
    with open(built, "rb") as f:
        lines = [line for line, _ in zip(f, range(n), strict=False)]
    if len(lines) < n:
        raise SystemExit(f"{built} holds {len(lines)} judge states, fewer than --states {n}")
    states.write_bytes(b"".join(lines))
    config = JudgeConfig(model="fake-judge-1", base_url="http://127.0.0.1:1/v1")
    with open(bodies, "wb") as out:
        for item in Reader().read(str(states)):
            assert isinstance(item, JudgeState), item
            # as judge asks it: a rubric that does not allow `na` asks without it
            out.write(request_of(config, item).body + b"\n")
    return states, bodies


class Server:
    """The fake server as a process (fault-free, or refusing as the module says)."""

    def __init__(self, latency: float, faults: tuple[str, ...]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.judge.fake_server", "--latency", str(latency),
             *faults], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline().split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _evalstream(base: Path | None) -> list[str]:
    """The command that runs evalstream: this tree's, or that of the tree ``base``."""
    if base is None:
        return [sys.executable, "-m", "evalstream"]
    # The run's folder is this tree (time_command): the other tree's code must come first.
    return [sys.executable, "-c", f"import runpy, sys; sys.path[0] = {str(base)!r}; "
            "runpy.run_module('evalstream', run_name='__main__', alter_sys=True)"]


def _once(variant: str, server: Server, states: Path, bodies: Path, c: int,
          work: Path, base: Path | None = None) -> dict[str, Any]:
    """One timed run of a variant against a freshly reset server."""
    for f in work.iterdir():
        f.unlink()
    server.call("POST", "/reset")
    load = os.getloadavg()[0]
    out, report = work / "verdicts.jsonl", work / "report.json"
    if variant.startswith("loop"):
        argv = [sys.executable, "-m", "benchmarks.judge_clients", "replay", str(bodies),
                f"{server.url}/chat/completions", str(c)]
    else:
        tree = base if variant.startswith("base") else None
        argv = [*_evalstream(tree), "judge", str(states), str(out), "--model",
                "fake-judge-1", "--base-url", server.url, "--max-connections", str(c), "-q",
                "--store", str(work / "store.sqlite"), "--report", str(report)]
    run, stderr = time_command(argv, out, timeout=3600)
    if run.exit_code != 0:
        raise RuntimeError(f"{variant} exited {run.exit_code}: {stderr[-500:]}")
    seen = server.call("GET", "/stats")
    result = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "rss_mib": run.max_rss_mib,
              "load": load, "requests": seen["requests"], "by_status": seen["by_status"]}
    if "judge" in variant:
        requests = json.loads(report.read_text())["requests"]
        result.update(rate_limited=requests["rate_limited"],
                      lowest_concurrency=requests["lowest_concurrency"],
                      max_in_flight=requests["max_in_flight"])
        result["bodies"] = sorted(seen["by_body"])
    return result


def _same_bodies(results: list[dict[str, Any]], bodies: Path) -> None:
    """The loop replays exactly what judge sent: the server saw the same set of bodies."""
    replayed = sorted(hashlib.sha256(b).hexdigest() for b in bodies.read_bytes().splitlines())
    for r in results:
        if r.pop("bodies") != replayed:
            raise RuntimeError(f"judge sent other bodies than {bodies} holds: remove it "
                               "(the cache) and run again")


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


HEADER = ("| latency | C | variant | per s (min-max) | x judge fault-free | x loop same server "
          "| client CPU ms a state | attempts | rate_limited | lowest_concurrency | load |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def _rows(latency: float, c: int, n: int, results: dict[str, list[dict[str, Any]]]) -> list[str]:
    rate = {v: n / _median(runs, "wall_s") for v, runs in results.items()}
    rows = []
    for variant, runs in results.items():
        lo, hi = (n / max(r["wall_s"] for r in runs), n / min(r["wall_s"] for r in runs))
        judge = "judge" in variant
        clean = "base judge" if variant.startswith("base") else "judge"
        versus_clean = f"{rate[variant] / rate[clean]:.2f}" if judge else ""
        loop = "loop, faults" if variant.endswith("faults") else "loop"
        versus_loop = f"{rate[variant] / rate[loop]:.2f}" if judge else ""
        limited = f"{_median(runs, 'rate_limited'):.0f}" if judge else ""
        lowest = (f"{_median(runs, 'lowest_concurrency'):.0f} "
                  f"({min(r['lowest_concurrency'] for r in runs)})") if judge else ""
        loads = [r["load"] for r in runs]
        rows.append(
            f"| {latency * 1000:.0f} ms | {c} | {variant} | {rate[variant]:,.0f} "
            f"({lo:,.0f}-{hi:,.0f}) | {versus_clean} | {versus_loop} | "
            f"{_median(runs, 'cpu_s') / n * 1000:.2f} | {_median(runs, 'requests'):,.0f} | "
            f"{limited} | {lowest} | {statistics.median(loads):.1f} "
            f"({min(loads):.1f}-{max(loads):.1f}) |")
    return rows


def main(n: int, runs: int, latencies: list[float], connections: list[int],
         first_429: float, first_500: float, retry_after: str, cache: Path,
         base: Path | None = None) -> int:
    """Time the four variants in every cell; print a markdown table and the raw runs."""
    generator = find_generator()
    if generator is None:
        raise SystemExit("no shared/bench/gen_cases.py beside the repository or above it")
    states, bodies = prepare(n, cache, generator)
    faults = ("--first-429", str(first_429), "--first-500", str(first_500),
              "--retry-after", retry_after)
    rows, raw = [HEADER], []
    work = cache / "faults-run"
    work.mkdir(parents=True, exist_ok=True)
    for latency in latencies:
        clean, faulty = Server(latency, ()), Server(latency, faults)
        try:
            for c in connections:
                variants = VARIANTS + (BASE_VARIANTS if base is not None else ())
                results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
                for i in range(runs):
                    for variant in variants:
                        server = faulty if variant.endswith("faults") else clean
                        results[variant].append(_once(variant, server, states, bodies, c,
                                                      work, base))
                        if "judge" in variant:  # checked at once: a run is minutes
                            _same_bodies(results[variant][-1:], bodies)
                    print(f"{latency * 1000:.0f} ms, C {c}, round {i + 1}: " + ", ".join(
                        f"{v} {r[-1]['wall_s']:.2f} s" for v, r in results.items()),
                        file=sys.stderr, flush=True)
                rows += _rows(latency, c, n, results)
                raw.append({"latency": latency, "c": c, "runs": results})
        finally:
            clean.stop()
            faulty.stop()
    print(f"{n:,} judge states; faults: first attempt 429 (Retry-After {retry_after} s) on "
          f"{first_429:.0%} of bodies, 500 on {first_500:.0%}; {runs} rounds, interleaved; "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    print("\n".join(rows))
    (cache / "judge-faults.json").write_text(json.dumps(raw, indent=1))
    return 0
