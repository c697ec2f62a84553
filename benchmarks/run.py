"""Benchmark runner: ``python -m benchmarks run --size 100MB [--size 1GB] [--runs 3]
[--variants ...] [--profiles normal long] [--out results.json]``.

Inputs are generated once into a cache directory and reused. Each run of a variant is a fresh
process started from the repository root by the small ``measure.py`` wrapper, which times it
from spawn to reap and reads its peak RSS and CPU time from ``os.wait4`` (on Linux this also
covers the grandchildren it waited for, such as ``jq`` under its Python wrapper; RSS below
the wrapper's own ~10 MiB cannot be seen). Runs are interleaved (round-robin over the
variants) after one warm-up read of the input, so every variant sees the same warm page
cache. Exit status 0 and 1 (some rejects) count as success.

Throughput is input megabytes (10^6 bytes) per second of median wall time, including
interpreter start-up; ``x msgspec`` is the median wall time over the ``msgspec`` baseline's on
the same input (always measured as the reference).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks.generate import GENERATOR_VERSION, format_size, generate
from benchmarks.generate import PROFILES as GENERATED

# The generated profiles, the shared corpus x9 (benchmarks/tokens.py; size ignored), and
# "shared": the cases of ../shared/bench/gen_cases.py (up to 30 messages, 8 passages and 10
# tool events, ~10% non-ASCII: many states pass the 32,000-byte bound and need exact counts).
PROFILES = (*GENERATED, "corpus9", "shared")
SHARED_GENERATOR = "shared/bench/gen_cases.py"

ROOT = Path(__file__).resolve().parent.parent
MEASURE = Path(__file__).resolve().parent / "measure.py"
DEFAULT_CACHE = Path("/tmp/evalstream-bench")
FLOOR = "msgspec"
OK_EXIT = (0, 1)
STDERR_TAIL = 2_000


@dataclass(frozen=True)
class Variant:
    """A command to time. ``argv`` may use ``{python}``, ``{input}``, ``{output}`` and
    ``{root}``; ``profile`` pins the variant to one input profile (``None``: each profile
    asked for); ``evalstream`` marks commands that need the evalstream package."""

    argv: tuple[str, ...]
    profile: str | None = None
    evalstream: bool = False
    tree: Path = ROOT  # where it runs: ``python -m evalstream`` imports that tree's package

    def command(self, src: Path, dst: Path) -> list[str]:
        """Return the command line for input ``src`` and output ``dst``."""
        values = {
            "python": sys.executable,
            "input": str(src),
            "output": str(dst),
            "root": str(self.tree),
        }
        return [arg.format(**values) for arg in self.argv]


def _baseline(name: str) -> Variant:
    return Variant(("{python}", "-m", "benchmarks", "baseline", name, "{input}", "{output}"))


_BUILD = ("{python}", "-m", "evalstream", "build", "{input}", "{output}")

VARIANTS: dict[str, Variant] = {
    **{name: _baseline(name) for name in ("lines", "msgspec", "json", "pydantic", "jq")},
    "evalstream-all": Variant(
        (*_BUILD, "--rubrics", "{root}/benchmarks/all_fields.toml"), evalstream=True
    ),
    "evalstream-builtin": Variant(_BUILD, evalstream=True),
    "evalstream-long": Variant(_BUILD, profile="long", evalstream=True),
    "evalstream-w1": Variant((*_BUILD, "--workers", "1"), evalstream=True),
    "evalstream-w2": Variant((*_BUILD, "--workers", "2"), evalstream=True),
    # every state counted exactly (records carry exact counts); and the older encoding
    "evalstream-exact": Variant((*_BUILD, "--exact-tokens"), evalstream=True),
    "evalstream-cl100k": Variant((*_BUILD, "--tokenizer", "cl100k_base"), evalstream=True),
    # --engine dask on a local cluster of 2 worker processes (started and stopped by the run,
    # ~2 s), one file out (the parts joined in the kernel) or a directory of parts.
    "evalstream-dask2": Variant((*_BUILD, "--engine", "dask", "--workers", "2"),
                                evalstream=True),
    "evalstream-dask2-dir": Variant(
        ("{python}", "-m", "evalstream", "build", "{input}", "{output}.d/", "--engine", "dask",
         "--workers", "2"), evalstream=True),
    "stats": Variant(
        ("{python}", "-m", "evalstream", "stats", "{input}", "--format", "json", "-o", "{output}"),
        evalstream=True,
    ),
    "stats-w1": Variant(
        ("{python}", "-m", "evalstream", "stats", "{input}", "--format", "json", "-o", "{output}",
         "--workers", "1"), evalstream=True),
    "stats-w2": Variant(
        ("{python}", "-m", "evalstream", "stats", "{input}", "--format", "json", "-o", "{output}",
         "--workers", "2"), evalstream=True),
    # stats' Polars baseline (benchmarks/stats_polars.py): cases per scenario and labels per
    # rubric and status, nothing checked, no tokens counted
    "stats-polars": Variant(("{python}", "-m", "benchmarks", "stats-polars", "{input}",
                             "{output}")),
    "stats-dask2": Variant(
        ("{python}", "-m", "evalstream", "stats", "{input}", "--format", "json", "-o", "{output}",
         "--engine", "dask", "--workers", "2"), evalstream=True),
}


@dataclass(frozen=True)
class Input:
    """A generated input file."""

    profile: str
    size: int
    path: Path

    @property
    def label(self) -> str:
        if self.profile == "corpus9":
            return "corpus x9"
        if self.profile == "shared":
            return f"gen_cases {format_size(self.size)}"
        return f"{self.profile} {format_size(self.size)}"

    @property
    def bytes(self) -> int:
        return self.path.stat().st_size


@dataclass
class Run:
    """One timed execution of a variant."""

    wall_s: float
    cpu_s: float
    max_rss_mib: float
    exit_code: int
    output_bytes: int | None
    summary: dict[str, Any] | None = None


@dataclass
class Result:
    """All runs of one variant on one input, and how they went."""

    variant: str
    input: str
    input_bytes: int
    runs: list[Run] = field(default_factory=list)
    status: str = "ok"
    error: str = ""

    def median_wall(self) -> float | None:
        """Median wall time in seconds, or ``None`` if no run succeeded."""
        return statistics.median(r.wall_s for r in self.runs) if self.runs else None

    def median_cpu(self) -> float | None:
        """Median CPU seconds (user + system), or ``None`` if no run succeeded."""
        return statistics.median(r.cpu_s for r in self.runs) if self.runs else None

    def row(self, floor: float | None, floor_cpu: float | None = None) -> dict[str, Any]:
        """Return the summary of this result (``floor``, ``floor_cpu``: the msgspec medians
        on this input)."""
        median = self.median_wall()
        row: dict[str, Any] = {
            "variant": self.variant,
            "input": self.input,
            "input_bytes": self.input_bytes,
            "runs": len(self.runs),
            "status": self.status,
        }
        if median is not None:
            walls = [r.wall_s for r in self.runs]
            row |= {
                "median_s": round(median, 3),
                "min_s": round(min(walls), 3),
                "max_s": round(max(walls), 3),
                "mb_per_s": round(self.input_bytes / 1e6 / median, 1),
                "peak_rss_mib": round(max(r.max_rss_mib for r in self.runs), 1),
                "cpu_s": round(statistics.median(r.cpu_s for r in self.runs), 3),
                "x_msgspec": round(median / floor, 2) if floor else None,
                "x_msgspec_cpu": round(statistics.median(r.cpu_s for r in self.runs)
                                       / floor_cpu, 2) if floor_cpu else None,
                "wall_s": [round(w, 3) for w in walls],
                "output_bytes": self.runs[-1].output_bytes,
                "exit_codes": sorted({r.exit_code for r in self.runs}),
                "summary": self.runs[-1].summary,
            }
        if self.error:
            row["error"] = self.error
        return row


# --- inputs --------------------------------------------------------------------------------


def ensure_input(cache: Path, profile: str, size: int, seed: int) -> Input:
    """Return the cached input for (profile, size, seed), generating it if missing."""
    cache.mkdir(parents=True, exist_ok=True)
    if profile == "corpus9":
        from benchmarks.tokens import corpus9

        path = cache / "corpus-x9.jsonl"
        if not path.exists():
            _log(f"writing {path} from the shared corpus ...")
            corpus9(path)
        return Input(profile, path.stat().st_size, path)
    if profile == "shared":
        path = cache / f"gen-cases-{format_size(size)}.jsonl"
        if not path.exists():
            _log(f"writing {path} with {shared_generator()} ...")
            tmp = path.with_suffix(".tmp")
            subprocess.run([sys.executable, str(shared_generator()), "--target-mb",
                            str(size // 1_000_000), "--out", str(tmp)], check=True)
            tmp.rename(path)
        return Input(profile, size, path)
    path = cache / f"cases-v{GENERATOR_VERSION}-{profile}-{format_size(size)}-seed{seed}.jsonl"
    if not path.exists():
        _log(f"generating {path} ...")
        start = time.perf_counter()
        cases, written = generate(path, size, profile=profile, seed=seed)
        elapsed = time.perf_counter() - start
        _log(
            f"  {cases} cases, {written / 1e6:.1f} MB in {elapsed:.1f}s "
            f"({written / 1e6 / elapsed:.1f} MB/s)"
        )
    return Input(profile, size, path)


def shared_generator() -> Path:
    """``../shared/bench/gen_cases.py`` beside the repository (or beside the folder that
    holds it, for a worktree in a subfolder); called by path, never copied."""
    for up in (ROOT.parent, ROOT.parent.parent):
        if (up / SHARED_GENERATOR).is_file():
            return up / SHARED_GENERATOR
    raise SystemExit(f"the shared generator {SHARED_GENERATOR} is not beside {ROOT}")


def compile_bytecode(tree: Path = ROOT) -> None:
    """Write the bytecode of evalstream and the benchmarks, as installing a package does:
    with PYTHONDONTWRITEBYTECODE set (as on these machines), every run would otherwise
    compile evalstream's modules again, ~0.1 s of CPU a start that no installed copy pays
    (msgspec's and the standard library's bytecode is there)."""
    import compileall

    for package in ("evalstream", "benchmarks"):
        compileall.compile_dir(tree / package, quiet=1)


def warm_page_cache(path: Path) -> None:
    """Read ``path`` once so that every variant starts from the same warm page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass


# --- running -------------------------------------------------------------------------------


def evalstream_available() -> bool:
    """True if ``python -m evalstream`` can be resolved from the repository root."""
    probe = (
        "import importlib.util, sys; "
        "sys.exit(0 if importlib.util.find_spec('evalstream.__main__') else 1)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, check=False)
    return proc.returncode == 0


def _last_json_line(text: str) -> dict[str, Any] | None:
    """Return the last line of ``text`` that parses as a JSON object, if any."""
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def time_command(argv: list[str], output: Path, timeout: float,
                 tree: Path = ROOT) -> tuple[Run, str]:
    """Run ``argv`` once from ``tree`` (the repository root) under ``measure.py``; return
    its measurements and the tail of its stderr. After ``timeout`` seconds it is killed."""
    with tempfile.NamedTemporaryFile(prefix="bench-stderr-") as err:
        proc = subprocess.run(
            [sys.executable, "-S", "-I", str(MEASURE), str(timeout), err.name, "--", *argv],
            cwd=tree,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        stderr = Path(err.name).read_text(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"measure.py failed: {proc.stderr.strip()}")
    measured = json.loads(proc.stdout)
    run = Run(
        wall_s=measured["wall_s"],
        cpu_s=measured["cpu_s"],
        max_rss_mib=measured["max_rss_kib"] / 1024,  # KiB on Linux
        exit_code=measured["exit_code"],
        output_bytes=output.stat().st_size if output.exists() else None,
        summary=_last_json_line(stderr),
    )
    return run, stderr[-STDERR_TAIL:]


def measure(
    results: list[Result],
    variants: dict[str, Variant],
    data: Input,
    runs: int,
    out_dir: Path,
    keep_outputs: bool,
    timeout: float,
) -> None:
    """Time every pending result on ``data``, ``runs`` rounds of one run per variant.

    Each run writes into its own fresh ``out_dir/VARIANT-PROFILE-SIZE/`` directory (output
    ``out.jsonl`` plus whatever side files the command makes), removed after the run unless
    ``keep_outputs``."""
    warm_page_cache(data.path)
    for round_number in range(runs):
        for result in results:
            if result.status != "ok":
                continue
            run_dir = out_dir / f"{result.variant}-{data.profile}-{format_size(data.size)}"
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir(parents=True)
            output = run_dir / "out.jsonl"
            variant = variants[result.variant]
            argv = variant.command(data.path, output)
            _log(f"[{round_number + 1}/{runs}] {result.variant} on {data.label}")
            try:
                run, stderr = time_command(argv, output, timeout, variant.tree)
            except (OSError, RuntimeError, ValueError) as exc:
                run, stderr = None, str(exc)
            if run is not None and run.exit_code in OK_EXIT:
                result.runs.append(run)
            else:
                result.status = f"failed (exit {run.exit_code})" if run else "failed"
                result.error = stderr
                _log(f"  {result.status}: {stderr.strip()[-500:]}")
            if not keep_outputs:
                shutil.rmtree(run_dir, ignore_errors=True)


# --- planning and reporting ----------------------------------------------------------------


def plan(variant_names: Sequence[str], profiles: Sequence[str]) -> dict[str, list[str]]:
    """Map each input profile to the variants to run on it (the floor is always included)."""
    by_profile: dict[str, list[str]] = {}
    for name in variant_names:
        pinned = VARIANTS[name].profile
        for profile in [pinned] if pinned else profiles:
            by_profile.setdefault(profile, []).append(name)
    for names in by_profile.values():
        if FLOOR not in names:
            names.insert(0, FLOOR)
    return by_profile


_COLUMNS = (
    ("variant", "variant"),
    ("input", "input"),
    ("runs", "runs"),
    ("median_s", "median s"),
    ("range", "min-max s"),
    ("mb_per_s", "MB/s"),
    ("peak_rss_mib", "peak RSS MiB"),
    ("cpu_s", "CPU s"),
    ("x_msgspec", "x msgspec"),
    ("x_msgspec_cpu", "x msgspec CPU"),
    ("status", "status"),
)


def markdown_table(rows: Iterable[dict[str, Any]]) -> str:
    """Return the summary rows as a markdown table (readable as plain text too)."""
    lines = [
        "| " + " | ".join(title for _, title in _COLUMNS) + " |",
        "|" + "|".join("---" for _ in _COLUMNS) + "|",
    ]
    for row in rows:
        cells = dict(row)
        if "min_s" in row:
            cells["range"] = f"{row['min_s']:.2f}-{row['max_s']:.2f}"
        lines.append("| " + " | ".join(_cell(cells.get(key)) for key, _ in _COLUMNS) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return str(value)


def environment() -> dict[str, Any]:
    """Describe the machine and tool versions the numbers were measured with."""
    import msgspec
    import pydantic

    jq = shutil.which("jq")
    jq_version = (
        subprocess.run(
            [jq, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if jq
        else None
    )
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "msgspec": msgspec.__version__,
        "pydantic": pydantic.VERSION,
        "jq": jq_version,
        "generator_version": GENERATOR_VERSION,
    }


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(
    sizes: Sequence[int],
    runs: int,
    variant_names: Sequence[str],
    profiles: Sequence[str],
    cache: Path,
    seed: int,
    out: Path | None,
    keep_outputs: bool,
    timeout: float,
    base: Path | None = None,
) -> int:
    """Run the benchmark; print a table and JSON lines; return 1 if any variant failed.
    ``base``: another copy of the tree, whose evalstream variants run as ``base:NAME``
    beside this tree's, interleaved (the figures of a change side by side with main's)."""
    unknown = [n for n in variant_names if n not in VARIANTS] + [
        p for p in profiles if p not in PROFILES
    ]
    if unknown:
        raise SystemExit(
            f"unknown variants or profiles: {unknown}; "
            f"variants: {list(VARIANTS)}; profiles: {list(PROFILES)}"
        )
    have_evalstream = evalstream_available()
    compile_bytecode()
    variants = dict(VARIANTS)
    if base is not None:
        base = base.resolve()
        compile_bytecode(base)
        variants |= {f"base:{name}": replace(v, tree=base)
                     for name, v in VARIANTS.items() if v.evalstream}
    out_dir = cache / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        for profile, names in plan(variant_names, profiles).items():
            data = ensure_input(cache, profile, size, seed)
            if base is not None:
                names = [n for name in names
                         for n in (name, f"base:{name}")[:2 if f"base:{name}" in variants else 1]]
            results = [Result(name, data.label, data.bytes) for name in names]
            for result in results:
                if variants[result.variant].evalstream and not have_evalstream:
                    result.status = "unavailable (evalstream not importable)"
            measure(results, variants, data, runs, out_dir, keep_outputs, timeout)
            floor = next(r for r in results if r.variant == FLOOR)
            rows += [r.row(floor.median_wall(), floor.median_cpu()) for r in results]
    print(markdown_table(rows))
    print(f"\nload average after the runs: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print()
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    if out:
        document = {"environment": environment(), "results": rows}
        out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        _log(f"wrote {out}")
    return 1 if any(row["status"].startswith("failed") for row in rows) else 0
