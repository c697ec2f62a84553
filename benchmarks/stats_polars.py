"""The Polars baseline of ``stats``: ``python -m benchmarks stats-polars IN OUT [--check
STATS.json]``.

What a data scientist would write to get the headline counts of a dataset with Polars: cases
per scenario and the expected labels per rubric and status, from ``scan_ndjson``. It reads
only the two fields it counts, with their schema given (``metadata.scenario``; ``expected``
read as JSON text and decoded with its rubric ids inferred from every row: the ids differ
from case to case, and inferring the whole case schema fails on them: "failed to determine
supertype of struct[9] and struct[7]"). It checks nothing (no caps, no ids, no rejects) and
counts no tokens: it is the floor of reading and grouping, not the same job as ``stats``.

Written to OUT as JSON: ``{"cases": {scenario: n}, "labels": {rubric: {status: n}}}``.
``--check STATS.json`` compares those counts with ``evalstream stats --format json``'s on
the same file (the groups' cases by ``scenario``, each rubric's label statuses) and exits 1
if they differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def counts(src: Path) -> dict[str, Any]:
    """Cases per scenario and labels per rubric and status, read by Polars."""
    import polars as pl

    frame = pl.scan_ndjson(src, schema={"metadata": pl.Struct({"scenario": pl.String}),
                                        "expected": pl.String}).collect()
    labels = frame.get_column("expected").str.json_decode(infer_schema_length=None)
    frame = pl.DataFrame({"scenario": frame.get_column("metadata").struct.field("scenario"),
                          "expected": labels})
    cases = {row[0]: row[1] for row in frame.group_by("scenario").len().iter_rows()
             if row[0] is not None}
    by_rubric: dict[str, dict[str, int]] = {}
    if labels.dtype != pl.String:  # a struct: some case has a label
        for rubric in labels.struct.fields:
            status = frame.select(pl.col("expected").struct.field(rubric).struct.field("status"))
            by_rubric[rubric] = {s: n for s, n in status.group_by("status").len().iter_rows()
                                 if s is not None}
    return {"cases": dict(sorted(cases.items())),
            "labels": {r: dict(sorted(by_rubric[r].items())) for r in sorted(by_rubric)}}


def stats_counts(stats: dict[str, Any]) -> dict[str, Any]:
    """The same counts from ``evalstream stats --format json`` (grouped by scenario)."""
    cases = {g["key"]["scenario"]: g["cases"] for g in stats["groups"]
             if g["key"].get("scenario") not in (None, "(missing)")}
    labels = {entry["rubric"]: {s: n for s, n in sorted(entry["total"]["status"].items()) if n}
              for entry in stats["labels"] if entry["total"]["labels"]}
    return {"cases": dict(sorted(cases.items())), "labels": dict(sorted(labels.items()))}


def main(src: Path, dst: Path, check: Path | None = None) -> int:
    """Write the counts of ``src`` to ``dst``; with ``check``, compare them with stats'."""
    found = counts(src)
    dst.write_text(json.dumps(found, indent=1) + "\n")
    if check is None:
        return 0
    theirs = stats_counts(json.loads(check.read_text()))
    if theirs != found:
        print(f"the counts differ:\npolars {found}\nstats  {theirs}", file=sys.stderr)
        return 1
    print(f"polars and stats agree: {sum(found['cases'].values()):,} cases in "
          f"{len(found['cases'])} scenarios, labels of {len(found['labels'])} rubrics",
          file=sys.stderr)
    return 0
