"""``python -m benchmarks view [--size 1GB] [--tiny N] [--runs 3] [--rationale N]``:
``evalstream view`` on generated cases and verdicts, beside the floors of reading the same
files.

Inputs (made once in the cache folder): cases from ``benchmarks.generate`` (normal profile),
build's judge states for them with the built-in rubrics, or with ``--tiny N`` N tiny cases
(an input, an output, a scenario) and their states built with ``all_fields.toml`` (one
check a case: 10^6 tiny cases are 10^6 checks, ~1 GB of states and of verdicts); and one
verdict per judge state from a pretend judge (status from the state hash, a rationale of
about ``--rationale`` characters, usage, the state's hashes and exposure: the shape
``evalstream judge`` writes). With ``--rationale 3800`` the verdict file is about as large
as the cases.

Each run is a fresh ``evalstream view VERDICTS --cases CASES --no-browser --port 0``
process: with a fresh index, then with ``--keep-index`` twice (the run that indexes and
keeps it, the run that reuses it). Measured: from spawn to the first page (the start URL's,
as a browser opens it first), wall time and the server's CPU time then (``/proc``, its
workers' included); the time of each first request after it (wall time to the full response,
on a new connection), and the server's peak RSS (``VmHWM``) after them. Beside it, each in
its own process (``measure.py``: wall time, CPU and peak RSS): ``read`` reads every line of
both files (the I/O floor), ``decode`` decodes every line with the typed msgspec decoders
(the floor of any reader that checks records: the target's baseline), ``load-all`` keeps
every record of both files in memory as ``json.loads`` objects (a viewer that holds the
files). Runs are interleaved.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.run import ROOT, compile_bytecode, ensure_input, time_command, warm_page_cache

ALL_FIELDS = ROOT / "benchmarks" / "all_fields.toml"
FLOORS = ("read", "decode", "load-all")
PAGES = [
    ("overview", "/"),
    ("disagreements", "/list/disagreements"),
    ("verdicts, page 1", "/list/verdicts"),
    ("verdicts, last page", "/list/verdicts?page=1000000"),
    ("unscored", "/list/unscored"),
    ("skipped", "/list/skipped"),
    ("filtered: rubric + label source", "/list/verdicts?rubric=policy-compliance&source=human"),
    ("search: one case id", "/list/verdicts?case=case-00000042"),
    ("check page (first disagreement)", None),
]
RATIONALE_WORDS = ("The response claims the booking went through, yet the last "
                   "book_appointment call failed with SLOT_UNAVAILABLE; ").split()


class State(msgspec.Struct):
    """What a pretend verdict copies from a judge state."""

    case_id: str
    rubric_id: str
    rubric_hash: str
    state_hash: str | None = None
    exposure: msgspec.Raw = msgspec.Raw(b"null")
    kind: str | None = None


def verdicts_for(states: Path, out: Path, rationale: int) -> None:
    """One verdict per judge state of ``states`` (exact verdicts pass through)."""
    import xxhash

    decode = msgspec.json.Decoder(State).decode
    encode = msgspec.json.Encoder().encode
    text = " ".join(RATIONALE_WORDS)
    body = (text * (rationale // len(text) + 1))[:rationale]
    with open(states, "rb") as src, open(out, "wb") as dst:
        for line in src:
            s = decode(line)
            if s.kind == "exact":
                dst.write(line)
                continue
            h = xxhash.xxh3_64_intdigest((s.state_hash or "").encode())
            status = ("fail", "pass", "pass", "pass", "na", "pass", "fail", "pass")[h % 8]
            if h % 97 == 0:
                status = "unscored"
            record = {"case_id": s.case_id, "rubric_id": s.rubric_id, "status": status,
                      "rationale": None if status == "unscored" else body,
                      "judge": {"model": "judge-bench", "provider": "openai",
                                "base_url": "api.openai.com", "temperature": 0.0,
                                "config_hash": "0" * 32},
                      "usage": None if status == "unscored" else
                      {"input_tokens": 800 + h % 4000, "output_tokens": 40 + h % 90},
                      "request_id": None if status == "unscored" else f"req_{h:016x}",
                      "rubric_hash": s.rubric_hash, "state_hash": s.state_hash,
                      "exposure": s.exposure}
            if status == "unscored":
                record["error"] = {"cause": "timeout", "detail": "no complete answer within "
                                                                 "120 s (after 5 attempts)"}
            dst.write(encode(record) + b"\n")


def tiny_cases(path: Path, count: int) -> None:
    """``count`` small cases (an input, an output, a scenario; a label on every third): a
    file of as many checks as cases, where reading each record costs most."""
    import random

    encode = msgspec.json.Encoder().encode
    rng = random.Random(0)
    with open(path, "wb") as f:
        for i in range(count):
            case: dict[str, Any] = {
                "id": f"case-{i:08d}", "input": "Book a flight to Paris for Thursday, please.",
                "output": "Done: booked AF1234 on Thursday at 9:40.",
                "metadata": {"scenario": rng.choice("abcd")}}
            if i % 3 == 0:
                case["expected"] = {"all-fields": {"status": rng.choice(["pass", "fail"]),
                                                   "source": "human"}}
            f.write(encode(case) + b"\n")


def ensure_tiny(cache: Path, count: int, rationale: int) -> tuple[Path, Path]:
    """Tiny cases, their judge states built with ``all_fields.toml`` (one check a case) and
    one verdict a state."""
    cases = cache / f"tiny-{count}.jsonl"
    cache.mkdir(parents=True, exist_ok=True)
    if not cases.exists():
        tiny_cases(cases.with_suffix(".tmp"), count)
        cases.with_suffix(".tmp").rename(cases)
    return _states_and_verdicts(cases, rationale, ["--rubrics", str(ALL_FIELDS)])


def ensure_inputs(cache: Path, size: int, rationale: int) -> tuple[Path, Path]:
    cases = ensure_input(cache, "normal", size, 0).path
    return _states_and_verdicts(cases, rationale, [])


def _states_and_verdicts(cases: Path, rationale: int, rubrics: list[str]) -> tuple[Path, Path]:
    states = cases.with_suffix(".states.jsonl")
    if not states.exists():
        subprocess.run([sys.executable, "-m", "evalstream", "build", str(cases), str(states),
                        "-q", "--report", str(states) + ".report.json", "--rejects",
                        str(states) + ".rejects.jsonl", *rubrics], cwd=ROOT, check=True)
    verdicts = cases.with_suffix(f".verdicts-r{rationale}.jsonl")
    if not verdicts.exists():
        tmp = verdicts.with_suffix(".tmp")
        verdicts_for(states, tmp, rationale)
        tmp.rename(verdicts)
    return cases, verdicts


def _vmhwm(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        found = re.search(r"VmHWM:\s+(\d+) kB", f.read())
    return int(found[1]) / 1024 if found else float("nan")


def _cpu(pid: int, children: bool = True) -> float:
    """The CPU seconds (user + system) a process has used so far, its ended children's
    included (view's index pass reads the verdicts in a worker process: issue 31)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(n) for n in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def serve_once(cases: Path, verdicts: Path, extra: list[str] | None = None) -> dict[str, Any]:
    """One server run: the index pass, each first request, the peak RSS; the time and CPU
    to the first page (the start URL's, as a browser opens it first)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "evalstream", "view", str(verdicts), "--cases", str(cases),
         "--no-browser", "--port", "0", *(extra or [])], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, env={**os.environ, "no_proxy": "127.0.0.1"},
        # Ctrl-C ends the server: a benchmark started in the background (`&`) of a script
        # ignores SIGINT, and so would the server, which then ran on after its run.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stderr is not None
    try:
        indexed = url = None
        while url is None:
            line = process.stderr.readline().decode()
            if not line:
                raise RuntimeError("view exited before serving")
            if "view: indexed" in line or "view: reused" in line:
                indexed = line.strip()
            found = re.search(r"serving at (http://\S+)", line)
            if found:
                url = found[1]
        ready = time.perf_counter() - started
        base = url.rstrip("/")  # the site's root: its path holds the token
        opener = urllib.request.build_opener()
        opener.open(url, timeout=600).read()  # the start URL, as the browser opens it first
        first_page, first_cpu = time.perf_counter() - started, _cpu(process.pid)
        own_cpu = _cpu(process.pid, children=False)  # the server's process alone
        timings: dict[str, float] = {}
        first_check = None
        for name, path in PAGES:
            if path is None:
                path = first_check
            t = time.perf_counter()
            body = opener.open(base + path, timeout=600).read()
            timings[name] = time.perf_counter() - t
            if first_check is None and name == "disagreements":
                found = re.search(rb'href="\.\./(check\?[^"]+)"', body)
                first_check = ("/" + found[1].decode().replace("&amp;", "&") if found
                               else "/")
        rss = _vmhwm(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        finally:
            if process.poll() is None:  # never left running
                process.kill()
                process.wait()
            process.stderr.close()
    figures = re.search(r"the index holds ([\d,]+) bytes \(([\d,]+) a line\)", indexed or "")
    return {"ready_s": ready, "first_page_s": first_page, "first_page_cpu_s": first_cpu,
            "server_cpu_s": own_cpu,
            "index_bytes": int(figures[1].replace(",", "")) if figures else None,
            "bytes_a_line": int(figures[2].replace(",", "")) if figures else None,
            "rss_mib": rss, "pages_s": timings}


def baseline(name: str, cases: str, verdicts: str) -> int:
    """One floor over both files (run in its own process by ``measure.py``)."""
    from evalstream._cases.schema import decoder as case_decoder
    from evalstream._verdicts.records import decoder as verdict_decoder

    kept: list[Any] = []
    for path, decode in ((cases, case_decoder().decode), (verdicts, verdict_decoder().decode)):
        with open(path, "rb", buffering=1 << 18) as f:
            if name == "read":
                for _ in f:
                    pass
            elif name == "decode":
                for line in f:
                    decode(line)
            else:
                kept.extend(json.loads(line) for line in f)
    return 0


def main(sizes: list[int], runs: int, cache: Path, rationale: int,
         tiny: list[int] | None = None, floors_run: list[str] | None = None) -> int:
    """Time the server beside the floors, interleaved run by run: a fresh index, and with
    ``--keep-index`` the run that keeps it and the one that reuses it."""
    compile_bytecode()
    inputs = [(f"{n:,} tiny cases", *ensure_tiny(cache, n, rationale),
               ["--rubrics", str(ALL_FIELDS)]) for n in tiny or []]
    inputs += [(f"{size / 1e6:,.0f} MB of cases", *ensure_inputs(cache, size, rationale), [])
               for size in (sizes if not tiny or sizes else [])]
    for title, cases, verdicts, extra in inputs:
        mb = (cases.stat().st_size + verdicts.stat().st_size) / 1e6
        lines = sum(1 for _ in open(cases, "rb")) + sum(1 for _ in open(verdicts, "rb"))
        print(f"inputs: {cases.name} {cases.stat().st_size / 1e6:,.0f} MB, {verdicts.name} "
              f"{verdicts.stat().st_size / 1e6:,.0f} MB; {lines:,} lines", file=sys.stderr)
        warm_page_cache(cases)
        warm_page_cache(verdicts)
        kept = Path(f"{verdicts}.view-index")
        served: dict[str, list[dict[str, Any]]] = {"fresh": [], "keeps": [], "reuses": []}
        floors: dict[str, list[Any]] = {name: [] for name in floors_run or FLOORS}
        for n in range(runs):
            served["fresh"].append(serve_once(cases, verdicts, extra))
            kept.unlink(missing_ok=True)
            served["keeps"].append(serve_once(cases, verdicts, [*extra, "--keep-index"]))
            served["reuses"].append(serve_once(cases, verdicts, [*extra, "--keep-index"]))
            kept.unlink(missing_ok=True)
            for name, got in served.items():
                print(json.dumps({"run": n, "variant": name, **got[-1]}), file=sys.stderr)
            for name in floors:
                run, _ = time_command([sys.executable, "-m", "benchmarks", "view-baseline",
                                       name, str(cases), str(verdicts)], cases, 3600)
                floors[name].append(run)
                print(json.dumps({"run": n, "variant": name, "wall_s": run.wall_s,
                                  "cpu_s": run.cpu_s, "rss_mib": run.max_rss_mib}),
                      file=sys.stderr)
        med = statistics.median
        decode_s = med(r.wall_s for r in floors["decode"])
        decode_cpu = med(r.cpu_s for r in floors["decode"])
        rows = [(f"view, {name}: spawn to first page",
                 med(s["first_page_s"] for s in got), med(s["first_page_cpu_s"] for s in got),
                 med(s["rss_mib"] for s in got))
                for name, got in (("fresh index", served["fresh"]),
                                  ("--keep-index, first run (indexes, keeps)", served["keeps"]),
                                  ("--keep-index, next run (reuses)", served["reuses"]))]
        rows += [(f"floor: {name}", med(r.wall_s for r in rs), med(r.cpu_s for r in rs),
                  med(r.max_rss_mib for r in rs)) for name, rs in floors.items()]
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        print(f"\n{title}: {mb:,.0f} MB of cases and verdicts, {lines:,} lines; medians of "
              f"{runs} runs; load average after them {load}\n")
        print("| what | median s | x decode | CPU s | x decode (CPU) | peak RSS MiB |\n"
              "|---|---|---|---|---|---|")
        for name, wall, cpu, rss in rows:
            print(f"| {name} | {wall:.2f} | {wall / decode_s:.2f} | {cpu:.2f} | "
                  f"{cpu / decode_cpu:.2f} | {rss:,.0f} |")
        fresh = served["fresh"]
        own = med(s["server_cpu_s"] for s in fresh)
        print(f"\nfresh index: of its CPU, the server's process alone {own:.2f} s "
              f"({own / decode_cpu:.2f}x decode): about the first page's wall time on two "
              "free CPUs (its worker reads the verdicts meanwhile)")
        print(f"\nindex: {med(s['index_bytes'] for s in fresh):,.0f} bytes, "
              f"{med(s['bytes_a_line'] for s in fresh):,.0f} a line\n")
        print("| first request after the index pass | median ms | max ms |\n|---|---|---|")
        for name, _ in PAGES:
            times = [s["pages_s"][name] * 1000 for s in fresh]
            print(f"| {name} | {med(times):,.0f} | {max(times):,.0f} |")
    return 0
