"""``python -m benchmarks batch``: ``evalstream batch prepare`` and ``batch collect`` on N judge
states, side by side with ``evalstream build`` making those N states from their cases.

Each run is a fresh process under ``measure.py`` (wall time, CPU time and peak RSS from
``wait4``); the variants are interleaved run by run, so each sees the same machine load, and
the table reports medians and ratios to build. The judge states are ``benchmarks.judge``'s
(one rubric, ~1.6 KB a state); the results are synthesised once from the request files (one
OpenAI output line a request, every answer ``pass``, in reverse order of the requests) and
reused.

- ``build``: the cases -> the N judge states (what collect's ratio is taken against).
- ``prepare``: the N states -> request files and the manifest.
- ``collect``: the results -> a new answer store -> N verdicts.
- ``collect, all stored``: the same again, every answer already stored (a re-collect).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.judge import RUBRIC, prepare_states
from benchmarks.run import time_command

URL = "http://127.0.0.1:9/v1"  # never contacted: prepare and collect are offline
COMPLETION = (b'{"id":"chatcmpl-bench","object":"chat.completion","created":0,"model":"m",'
              b'"choices":[{"index":0,"message":{"role":"assistant","content":"{\\"status\\": '
              b'\\"pass\\", \\"reason\\": \\"The response answers what was asked, quoting the '
              b'booking reference.\\"}","refusal":null},"finish_reason":"stop","logprobs":null}],'
              b'"usage":{"prompt_tokens":412,"completion_tokens":23,"total_tokens":435}}')


def synthesise(folder: Path, out: Path) -> Path:
    """One OpenAI batch output line per request of ``folder`` (reverse order), made once."""
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp")
    prefix = len(b'{"custom_id":"')
    with open(tmp, "wb") as f:
        for path in sorted(folder.glob("requests-*.jsonl"), reverse=True):
            ids = [line[prefix:prefix + 64] for line in path.read_bytes().splitlines()]
            f.writelines(b'{"id":"batch_req_' + cid[:24] + b'","custom_id":"' + cid
                         + b'","response":{"status_code":200,"request_id":"req_' + cid[:24]
                         + b'","body":' + COMPLETION + b'},"error":null}\n'
                         for cid in reversed(ids))
    tmp.rename(out)
    return out


def _timed(argv: list[str], out: Path) -> dict[str, Any]:
    run, stderr = time_command(argv, out, timeout=7200)
    if run.exit_code != 0:
        raise RuntimeError(f"{argv[2:5]} exited {run.exit_code}: {stderr[-800:]}")
    return {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "rss_mib": run.max_rss_mib}


def _row(name: str, n: int, runs: list[dict[str, Any]], build: list[dict[str, Any]]) -> str:
    wall = statistics.median(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    bwall = statistics.median(r["wall_s"] for r in build)
    bcpu = statistics.median(r["cpu_s"] for r in build)
    lo, hi = min(r["wall_s"] for r in runs), max(r["wall_s"] for r in runs)
    rss = max(r["rss_mib"] for r in runs)
    return (f"| {name} | {n:,} | {wall:.1f} ({lo:.1f}-{hi:.1f}) | {cpu:.1f} | "
            f"{wall / bwall:.2f} | {cpu / bcpu:.2f} | {cpu / n * 1e6:.0f} | {rss:.0f} |")


HEADER = ("| variant | states | median wall s (min-max) | CPU s | x build wall | x build CPU | "
          "CPU us a state | peak RSS MiB |\n|---|---|---|---|---|---|---|---|")


def main(states: list[int], runs: int, cache: Path) -> int:
    """Time build, prepare and collect on each number of states; print a markdown table."""
    py = sys.executable
    rows = [HEADER]
    sizes = []
    for n in states:
        src = prepare_states(n, cache)
        cases = cache / f"judge-cases-{n}.jsonl"
        rubric = cache / "judge-rubric.toml"
        rubric.write_text(RUBRIC)
        work = cache / f"batch-{n}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        folder, verdicts = work / "batch", work / "verdicts.jsonl"
        results: dict[str, list[dict[str, Any]]] = {"build": [], "prepare": [], "collect": [],
                                                     "stored": []}
        result_file = None
        for i in range(runs):
            results["build"].append(_timed(
                [py, "-m", "evalstream", "build", str(cases), str(work / "states.jsonl"),
                 "--rubrics", str(rubric), "-q"], work / "states.jsonl"))
            shutil.rmtree(folder, ignore_errors=True)
            results["prepare"].append(_timed(
                [py, "-m", "evalstream", "batch", "prepare", str(src), str(folder), "--model",
                 "fake-judge-1", "--base-url", URL, "-q"], folder / "requests-00001.jsonl"))
            result_file = synthesise(folder, cache / f"batch-results-{n}.jsonl")
            for f in work.glob("verdicts.*"):
                f.unlink()
            collect = [py, "-m", "evalstream", "batch", "collect", str(folder), str(verdicts),
                       str(result_file), "-q"]
            results["collect"].append(_timed(collect, verdicts))
            results["stored"].append(_timed(collect, verdicts))
            print(f"states {n:,} run {i + 1}: " + ", ".join(
                f"{k} {v[-1]['wall_s']:.1f} s" for k, v in results.items()),
                file=sys.stderr, flush=True)
        rows.append(_row("build (cases -> states)", n, results["build"], results["build"]))
        rows.append(_row("batch prepare", n, results["prepare"], results["build"]))
        rows.append(_row("batch collect", n, results["collect"], results["build"]))
        rows.append(_row("batch collect, all stored", n, results["stored"], results["build"]))
        manifest = os.path.getsize(folder / "manifest.sqlite")
        store = os.path.getsize(work / "verdicts.judge.sqlite")
        requests = sum(p.stat().st_size for p in folder.glob("requests-*.jsonl"))
        assert result_file is not None
        sizes.append(f"{n:,} states: states file {src.stat().st_size / n:,.0f} B a state, "
                     f"request files {requests / n:,.0f} B, manifest {manifest / n:,.1f} B, "
                     f"results {result_file.stat().st_size / n:,.0f} B, answer store "
                     f"{store / n:,.0f} B")
    print(f"{runs} runs each, interleaved; {time.strftime('%Y-%m-%d')}; {os.cpu_count()} cores")
    print("\n".join(rows))
    print()
    print("\n".join(sizes))
    return 0
