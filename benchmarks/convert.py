"""``python -m benchmarks convert --size 1GB [--size 100MB] [--runs 3] [--shape mapped|text]
[--variants ...]``: ``evalstream convert`` on a CSV, a JSON lines and a Parquet table of the
same rows, next to Polars reading the same file and to the plain loop that writes the same
cases.

The table is generated deterministically (seeded). Shapes: ``mapped``: an id, a question, an
answer, a list of one to four passages (JSON text in the CSV, a list in JSON lines and
Parquet), a scenario and a label, about 750 bytes a row, mapped with ``--values``,
``--set`` and (CSV) ``--parse-json``; ``text``: an id and three text columns (question,
answer, passage), about 1 KB a row, every cell with a comma or a quote in a quarter of the
rows. Variants, each a fresh process measured by ``measure.py`` (wall time, CPU, peak RSS),
runs interleaved:

- ``polars-read``: ``pl.read_csv``/``pl.read_ndjson``/``pl.read_parquet`` of the whole file
  into one frame (no rows in Python; memory grows with the file): Polars' own speed.
- ``polars-rows``: a Polars scan collected in batches and every row turned into a Python
  dict (``iter_rows(named=True)``), nothing else.
- ``reader-rows`` (CSV): the reader convert uses for CSV (``convert.tables.csv_table``, which
  makes a bad row one reject where Polars stopped the file), every row a dict, nothing else.
- ``plain``: the plain loop (``benchmarks/convert_plain.py``: the csv module, msgspec or
  Polars batches, a dict, msgspec's encoder; no checks), whose output is checked byte for
  byte against convert's: the baseline of the targets.
- ``convert``: ``python -m evalstream convert`` with a mapping of every column.
- ``convert-base`` (with ``--base TREE``): the same command from another source tree (its
  ``PYTHONPATH``; e.g. a worktree of main), in the same rounds, its output checked byte for
  byte against ``convert``'s: a change measured side by side with the code before it.

MB/s is the input file's size over the median wall time; ``x plain`` is the median CPU time
over the plain loop's on the same file.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEASURE = Path(__file__).resolve().parent / "measure.py"
WORDS = ("the model said that a tool call failed while the user asked for the booking of a "
         "room in paris on friday and the policy says refunds are allowed within thirty days "
         "unless the ticket was bought at a discount rate which the agent must check first"
         ).split()
TABLE_VERSION = 3  # 2: Parquet row groups of 50,000 rows; 3: JSON lines, the text shape

_READ = {
    "csv": "import polars as pl; pl.read_csv({path!r}, infer_schema=False)",
    "jsonl": "import polars as pl; pl.read_ndjson({path!r})",
    "parquet": "import polars as pl; pl.read_parquet({path!r})",
}
_SCAN = {"csv": "pl.scan_csv({path!r}, infer_schema=False)", "jsonl": "pl.scan_ndjson({path!r})",
         "parquet": "pl.scan_parquet({path!r})"}
_ROWS = ("import polars as pl\nn = 0\n"
         "for b in {scan}.collect_batches(chunk_size=4096):\n"
         "    for r in b.iter_rows(named=True): n += 1\n")
_READER_ROWS = ("from evalstream._convert.tables import csv_table\n"
                "from evalstream._files.lines import open_input\n"
                "n = sum(1 for r in csv_table(open_input({path!r}), 'csv', ',')[1])\n")
_MAP = {"mapped": ["--map", "input=question,output=answer,context=passages,"
                   "metadata.scenario=scenario,expected.support.status=label", "--set",
                   "expected.support.source=human", "--values",
                   "expected.support.status=1:pass,0:fail", "--id-from", "id", "-q"],
        "text": ["--map", "input=question,output=answer,context=passage", "--id-from", "id",
                 "-q"]}
VARIANTS = ("polars-read", "polars-rows", "reader-rows", "plain", "convert")  # the default
FORMATS = ("csv", "jsonl", "parquet")


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _row(rng: random.Random, n: int, shape: str) -> dict[str, str]:
    if shape == "text":
        mark = rng.random() < 0.25  # a quarter of the rows: quoted cells (a comma, a quote)
        return {"id": f"row-{n}", "question": _text(rng, 8, 30) + ("?, please" if mark else "?"),
                "answer": _text(rng, 20, 90) + (' "quoted".' if mark else "."),
                "passage": _text(rng, 40, 120) + "."}
    return {"id": f"row-{n}", "question": _text(rng, 8, 30) + "?",
            "answer": _text(rng, 20, 90) + ".",
            "passages": json.dumps([_text(rng, 10, 40) for _ in range(rng.randint(1, 4))]),
            "scenario": rng.choice(("booking", "rag", "support")),
            "label": str(rng.randint(0, 1))}


def make_tables(folder: Path, size: int, seed: int = 0,
                shape: str = "mapped") -> dict[str, Path]:
    """A CSV of about ``size`` bytes, and a JSON lines and a Parquet file of the same rows
    (cached by name), by format."""
    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"table-v{TABLE_VERSION}-{shape}-{size}-{seed}"
    paths = {fmt: stem.with_suffix(f".{fmt}") for fmt in FORMATS}
    if all(p.exists() for p in paths.values()):
        return paths
    csv = paths["csv"]
    rng = random.Random(seed)
    written, n = 0, 0
    tmp = csv.with_suffix(".csv.tmp")
    with open(tmp, "wb") as out:
        header = True
        while written < size:
            rows = []
            for _ in range(2_000):
                n += 1
                rows.append(_row(rng, n, shape))
            frame = pl.DataFrame(rows)
            data = frame.write_csv(include_header=header).encode()
            header = False
            out.write(data)
            written += len(data)
    os.replace(tmp, csv)
    # Row groups of 50,000 rows (~35 MB decoded): Parquet is decoded a row group at a time, so
    # memory follows the row group size (Polars' default here gave 618 MiB at 1 GB).
    scan = pl.scan_csv(csv, infer_schema=False)
    if shape == "mapped":
        scan = scan.with_columns(pl.col("passages").str.json_decode(pl.List(pl.String)))
    scan.sink_parquet(paths["parquet"], row_group_size=50_000)
    scan.sink_ndjson(paths["jsonl"])
    return paths


def _measure(argv: list[str], timeout: float) -> dict[str, float | int]:
    err = Path("/tmp/evalstream-bench-convert.err")
    done = subprocess.run([sys.executable, "-S", "-I", str(MEASURE), str(timeout), str(err),
                           "--", *argv], capture_output=True, text=True, cwd=ROOT, check=True)
    result: dict[str, float | int] = json.loads(done.stdout)
    if result["exit_code"] != 0:  # the tables are clean: every row must become a case
        raise RuntimeError(f"{argv[:6]} exited {result['exit_code']}: "
                           f"{err.read_text()[-2000:]}")
    return result


def main(sizes: list[int], runs: int, cache: Path, seed: int, timeout: float,
         shape: str = "mapped", variants: list[str] | None = None,
         formats: list[str] | None = None, base_tree: Path | None = None) -> int:
    """Generate the tables, run every variant ``runs`` times interleaved, print a table."""
    rows_out = []
    wanted = variants or [*VARIANTS, *(["convert-base"] if base_tree else [])]
    if "convert-base" in wanted and base_tree is None:
        raise SystemExit("the convert-base variant needs --base TREE")
    for size in sizes:
        tables = make_tables(cache, size, seed, shape)
        for fmt in formats or FORMATS:
            path = tables[fmt]
            out = {name: cache / f"out-{shape}-{fmt}-{name}.jsonl"
                   for name in ("plain", "convert", "convert-base")}
            parse = ["--parse-json", "passages"] if fmt == "csv" and shape == "mapped" else []
            convert_args = [*_MAP[shape], *parse]
            commands = {
                "polars-read": [sys.executable, "-c", _READ[fmt].format(path=str(path))],
                "polars-rows": [sys.executable, "-c", _ROWS.format(
                    scan=_SCAN[fmt].format(path=str(path)))],
                "reader-rows": [sys.executable, "-c", _READER_ROWS.format(path=str(path))],
                "plain": [sys.executable, "-m", "benchmarks", "convert-plain", shape, fmt,
                          str(path), str(out["plain"])],
                "convert": [sys.executable, "-m", "evalstream", "convert", str(path),
                            str(out["convert"]), "--force", *convert_args],
                "convert-base": ["env", "-C", str(base_tree), f"PYTHONPATH={base_tree}",
                                 sys.executable, "-m",
                                 "evalstream", "convert", str(path), str(out["convert-base"]),
                                 "--force", *convert_args],
            }
            chosen = {k: v for k, v in commands.items() if k in wanted
                      and (k != "reader-rows" or fmt == "csv")}
            path.read_bytes()  # warm the page cache once for every variant alike
            results: dict[str, list[dict[str, float | int]]] = {k: [] for k in chosen}
            for _ in range(runs):
                for name, argv in chosen.items():
                    results[name].append(_measure(argv, timeout))
            rows = None
            if "convert" in chosen:
                report = json.loads(out["convert"].with_suffix(".report.json").read_text())
                rows = report["counts"]["rows"]
                assert report["counts"]["cases"] == rows, report["counts"]
            if "convert" in chosen and "plain" in chosen:  # the same job: the same bytes
                assert out["convert"].read_bytes() == out["plain"].read_bytes(), \
                    f"the plain loop and convert wrote different cases from {path}"
            if "convert" in chosen and "convert-base" in chosen:
                assert out["convert"].read_bytes() == out["convert-base"].read_bytes(), \
                    f"convert and convert-base wrote different cases from {path}"
            base = "plain" if "plain" in results else next(iter(results))
            floor = statistics.median(float(r["cpu_s"]) for r in results[base])
            mb = path.stat().st_size / 1e6
            for name, got in results.items():
                walls = [float(r["wall_s"]) for r in got]
                wall = statistics.median(walls)
                rss = max(int(r["max_rss_kib"]) for r in got) / 1024
                cpu = statistics.median(float(r["cpu_s"]) for r in got)
                label = f"{shape} {fmt} {mb:,.0f} MB" + (f" ({rows:,} rows)" if rows else "")
                rows_out.append((label, name, wall, min(walls), max(walls), mb / wall, rss, cpu,
                                 cpu / floor))
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    print("| input | variant | median s | min-max s | MB/s | peak RSS MiB | CPU s | "
          "x plain (CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    for inp, name, wall, low, high, rate, rss, cpu, ratio in rows_out:
        print(f"| {inp} | {name} | {wall:.2f} | {low:.2f}-{high:.2f} | {rate:.0f} | {rss:.0f} | "
              f"{cpu:.2f} | {ratio:.2f} |")
    print(f"\nload average after the runs: {load}")
    return 0
