"""``python -m benchmarks pairs [--size 100MB --size 300MB] [--runs 3]``: ``build
--pair-with`` on two generated runs, read in step (both sorted by id) and with an index
(run B out of order), beside ``build`` of one run.

Inputs (made once in the cache folder): run A is ``benchmarks.generate``'s cases (normal
profile; ids ``case-00000042``, in order: sorted); run B is the same cases with another
response (``output`` rewritten, every other field as in run A, so every id pairs); run B
unsorted is run B with each two neighbouring lines swapped (out of order from its second
line: the pairing goes indexed at once). The rubric is one pairwise rubric that shows the
user input and the two responses (``pairwise.toml`` here).

Variants, each a fresh ``python -m evalstream build`` process under ``measure.py`` (wall
time, CPU, peak RSS), interleaved, the output to ``/dev/null`` (the subject is reading and
pairing; the records' bytes are the same either way, which ``--check`` verifies on the
smallest size):

- ``one-run``: ``build A`` with the same question as a judge rubric (one state a case, half
  the records of a pair build): the pace of one file;
- ``pairs-sorted``: ``build A --pair-with B``: read in step;
- ``pairs-unsorted``: ``build A --pair-with B-unsorted``: an index of run B.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import msgspec

from benchmarks.run import ROOT, ensure_input, format_size, time_command, warm_page_cache

HERE = Path(__file__).resolve().parent
RUBRIC = HERE / "pairwise.toml"
ONE_RUN_RUBRIC = HERE / "pairwise-as-judge.toml"


class _Output(msgspec.Struct, gc=False):
    output: str


def run_b(a: Path, out: Path, unsorted: bool) -> None:
    """Run B of run A: each case's ``output`` rewritten (the rest byte for byte); with
    ``unsorted``, neighbouring lines swapped."""
    decode = msgspec.json.Decoder(_Output).decode
    encode = msgspec.json.encode
    held: bytes | None = None
    tmp = out.with_suffix(".tmp")
    with open(a, "rb") as src, open(tmp, "wb") as dst:
        for line in src:
            old = encode(decode(line).output)
            new = encode("Run B's answer. " + decode(line).output[::-1])
            line = line.replace(b'"output":' + old, b'"output":' + new, 1)
            if not unsorted:
                dst.write(line)
            elif held is None:
                held = line
            else:
                dst.write(line + held)
                held = None
        if held is not None:
            dst.write(held)
    tmp.rename(out)


def inputs(cache: Path, size: int) -> dict[str, Path]:
    a = ensure_input(cache, "normal", size, 0).path
    paths = {"a": a}
    for name, unsorted in (("b", False), ("b-unsorted", True)):
        path = a.with_name(a.stem + f".run-{name}.jsonl")
        if not path.exists():
            print(f"writing {path} ...", file=sys.stderr)
            run_b(a, path, unsorted)
        paths[name] = path
    return paths


def argv(variant: str, paths: dict[str, Path], out: str) -> list[str]:
    base = [sys.executable, "-m", "evalstream", "build", str(paths["a"]), out, "-q",
            "--report", "/dev/null"]
    if variant == "one-run":
        return [*base, "--rubrics", str(ONE_RUN_RUBRIC)]
    b = paths["b"] if variant == "pairs-sorted" else paths["b-unsorted"]
    return [*base, "--pair-with", str(b), "--rubrics", str(RUBRIC)]


VARIANTS = ("one-run", "pairs-sorted", "pairs-unsorted")


def check(paths: dict[str, Path], folder: Path) -> None:
    """The two pair builds write the same bytes (the one reading in step, the other
    indexed)."""
    import subprocess

    outs = []
    for variant in ("pairs-sorted", "pairs-unsorted"):
        out = folder / f"{variant}.jsonl"
        subprocess.run(argv(variant, paths, str(out)), cwd=ROOT, check=True)
        outs.append(out)
    same = outs[0].read_bytes() == outs[1].read_bytes()
    print(f"check: in step and indexed outputs {'identical' if same else 'DIFFER'} "
          f"({outs[0].stat().st_size:,} bytes)", file=sys.stderr)
    for out in outs:
        out.unlink()
    if not same:
        raise SystemExit(1)


def main(sizes: list[int], runs: int, cache: Path, do_check: bool) -> int:
    results = []
    for size in sizes:
        paths = inputs(cache, size)
        if do_check and size == min(sizes):
            check(paths, cache)
        for path in paths.values():
            warm_page_cache(path)
        measured: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        for _ in range(runs):
            for variant in VARIANTS:
                run, tail = time_command(argv(variant, paths, "/dev/null"), Path("/dev/null"),
                                         3600)
                if run.exit_code not in (0, 1):
                    raise SystemExit(f"{variant} failed ({run.exit_code}): {tail}")
                measured[variant].append({"wall_s": run.wall_s, "cpu_s": run.cpu_s,
                                          "rss": run.max_rss_mib})
        for variant, rows in measured.items():
            walls = [r["wall_s"] for r in rows]
            results.append({
                "variant": variant, "size": format_size(size),
                "median_s": round(statistics.median(walls), 2),
                "min_max_s": f"{min(walls):.2f}-{max(walls):.2f}",
                "cpu_s": round(statistics.median(r["cpu_s"] for r in rows), 2),
                "peak_rss_mib": round(max(r["rss"] for r in rows), 1)})
            print(json.dumps(results[-1]), flush=True)
    print("\n| variant | run A | median s | min-max s | CPU s | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['variant']} | {r['size']} | {r['median_s']} | {r['min_max_s']} | "
              f"{r['cpu_s']} | {r['peak_rss_mib']} |")
    return 0
