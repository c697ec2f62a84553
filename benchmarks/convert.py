"""``python -m benchmarks convert --size 1GB [--size 100MB] [--runs 3]``: ``evalstream
convert`` on a CSV and a Parquet table of the same rows, next to Polars reading the same file.

The table is generated deterministically (seeded): an id, a question, an answer, a list of
one to four passages (JSON text in the CSV, a list column in Parquet), a scenario and a
label, about 1 KB a row. Variants, each a fresh process measured by ``measure.py`` (wall
time, CPU, peak RSS), runs interleaved:

- ``polars-read``: ``pl.read_csv``/``pl.read_parquet`` of the whole file into one frame (no
  rows in Python; memory grows with the file): Polars' own speed.
- ``polars-rows``: a Polars scan collected in batches and every row turned into a Python
  dict (``iter_rows(named=True)``), nothing else: the floor of any per-row conversion in
  Python (for Parquet, the scan convert makes).
- ``reader-rows`` (CSV): the reader convert uses for CSV (``convert.tables.csv_table``, which
  makes a bad row one reject where Polars stopped the file), every row a dict, nothing else.
- ``convert``: ``python -m evalstream convert`` with a mapping of every column (labels
  through ``--values``; the CSV's passages through ``--parse-json``).

MB/s is the input file's size over the median wall time; ``x polars-read`` is the median
time over Polars' eager read of the same file.
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
TABLE_VERSION = 2  # 2: Parquet row groups of 50,000 rows

_READ = {
    "csv": "import polars as pl; pl.read_csv({path!r}, infer_schema=False)",
    "parquet": "import polars as pl; pl.read_parquet({path!r})",
}
_ROWS = {
    "csv": ("import polars as pl\nn = 0\n"
            "for b in pl.scan_csv({path!r}, infer_schema=False).collect_batches(chunk_size=4096):\n"
            "    for r in b.iter_rows(named=True): n += 1\n"),
    "parquet": ("import polars as pl\nn = 0\n"
                "for b in pl.scan_parquet({path!r}).collect_batches(chunk_size=4096):\n"
                "    for r in b.iter_rows(named=True): n += 1\n"),
}
_READER_ROWS = ("from evalstream._convert.tables import csv_table\n"
                "from evalstream._files.lines import open_input\n"
                "n = sum(1 for r in csv_table(open_input({path!r}), 'csv', ',')[1])\n")
_MAP = ["--map", "input=question,output=answer,context=passages,metadata.scenario=scenario,"
        "expected.support.status=label", "--set", "expected.support.source=human",
        "--values", "expected.support.status=1:pass,0:fail", "--id-from", "id", "-q"]


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def make_tables(folder: Path, size: int, seed: int = 0) -> tuple[Path, Path]:
    """A CSV of about ``size`` bytes and a Parquet file of the same rows (cached by name)."""
    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"table-v{TABLE_VERSION}-{size}-{seed}"
    csv, parquet = stem.with_suffix(".csv"), stem.with_suffix(".parquet")
    if csv.exists() and parquet.exists():
        return csv, parquet
    rng = random.Random(seed)
    written, n = 0, 0
    tmp = csv.with_suffix(".csv.tmp")
    with open(tmp, "wb") as out:
        header = True
        while written < size:
            rows = []
            for _ in range(2_000):
                n += 1
                rows.append({"id": f"row-{n}", "question": _text(rng, 8, 30) + "?",
                             "answer": _text(rng, 20, 90) + ".",
                             "passages": json.dumps([_text(rng, 10, 40)
                                                     for _ in range(rng.randint(1, 4))]),
                             "scenario": rng.choice(("booking", "rag", "support")),
                             "label": str(rng.randint(0, 1))})
            frame = pl.DataFrame(rows)
            data = frame.write_csv(include_header=header).encode()
            header = False
            out.write(data)
            written += len(data)
    os.replace(tmp, csv)
    # Row groups of 50,000 rows (~35 MB decoded): Parquet is decoded a row group at a time, so
    # memory follows the row group size (Polars' default here gave 618 MiB at 1 GB).
    (pl.scan_csv(csv, infer_schema=False)
     .with_columns(pl.col("passages").str.json_decode(pl.List(pl.String)))
     .sink_parquet(parquet, row_group_size=50_000))
    return csv, parquet


def _measure(argv: list[str], timeout: float) -> dict[str, float | int]:
    err = Path("/tmp/evalstream-bench-convert.err")
    done = subprocess.run([sys.executable, "-S", "-I", str(MEASURE), str(timeout), str(err),
                           "--", *argv], capture_output=True, text=True, cwd=ROOT, check=True)
    result: dict[str, float | int] = json.loads(done.stdout)
    if result["exit_code"] != 0:  # the tables are clean: every row must become a case
        raise RuntimeError(f"{argv[:6]} exited {result['exit_code']}: "
                           f"{err.read_text()[-2000:]}")
    return result


def main(sizes: list[int], runs: int, cache: Path, seed: int, timeout: float) -> int:
    """Generate the tables, run every variant ``runs`` times interleaved, print a table."""
    rows_out = []
    for size in sizes:
        csv, parquet = make_tables(cache, size, seed)
        for fmt, path in (("csv", csv), ("parquet", parquet)):
            variants = {
                "polars-read": [sys.executable, "-c", _READ[fmt].format(path=str(path))],
                "polars-rows": [sys.executable, "-c", _ROWS[fmt].format(path=str(path))],
                **({"reader-rows": [sys.executable, "-c", _READER_ROWS.format(path=str(path))]}
                   if fmt == "csv" else {}),
                "convert": [sys.executable, "-m", "evalstream", "convert", str(path),
                            str(cache / f"out-{fmt}.jsonl"), *_MAP,
                            *(["--parse-json", "passages"] if fmt == "csv" else [])],
            }
            path.read_bytes()  # warm the page cache once for every variant alike
            results: dict[str, list[dict[str, float | int]]] = {k: [] for k in variants}
            for _ in range(runs):
                for name, argv in variants.items():
                    results[name].append(_measure(argv, timeout))
            out = cache / f"out-{fmt}.jsonl"
            rows = sum(1 for _ in open(out, "rb"))
            report = json.loads((cache / f"out-{fmt}.report.json").read_text())
            assert report["counts"]["cases"] == rows == report["counts"]["rows"], report["counts"]
            floor = statistics.median(float(r["wall_s"]) for r in results["polars-read"])
            mb = path.stat().st_size / 1e6
            for name, got in results.items():
                walls = [float(r["wall_s"]) for r in got]
                wall = statistics.median(walls)
                rss = max(int(r["max_rss_kib"]) for r in got) / 1024
                cpu = statistics.median(float(r["cpu_s"]) for r in got)
                rows_out.append((f"{fmt} {mb:,.0f} MB ({rows:,} rows)", name, wall, min(walls),
                                 max(walls), mb / wall, rss, cpu, wall / floor))
    print("| input | variant | median s | min-max s | MB/s | peak RSS MiB | CPU s | "
          "x polars-read |")
    print("|---|---|---|---|---|---|---|---|")
    for inp, name, wall, low, high, rate, rss, cpu, ratio in rows_out:
        print(f"| {inp} | {name} | {wall:.2f} | {low:.2f}-{high:.2f} | {rate:.0f} | {rss:.0f} | "
              f"{cpu:.2f} | {ratio:.2f} |")
    return 0
