"""The plain loops ``convert`` is measured against: ``python -m benchmarks convert-plain
SHAPE FORMAT IN OUT``.

What a careful script would do to turn the benchmark's tables (``benchmarks/convert.py``)
into cases, and nothing more: read each row (the csv module, msgspec for JSON lines, Polars
batches for Parquet), build the case dict, encode it with msgspec, write the lines in
batches. It checks nothing: no caps, no repeated ids, no rejects, no report. Its output is
byte for byte ``evalstream convert``'s on these tables (the benchmark checks it).

Shapes: ``mapped`` (an id, a question, an answer, passages, a scenario and a 0/1 label,
mapped with ``--values``, ``--set`` and, in CSV, ``--parse-json``) and ``text`` (an id and
three text columns: question, answer, passage).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

LABELS = {"1": "pass", "0": "fail"}
COLUMNS = {"mapped": ("id", "question", "answer", "passages", "scenario", "label"),
           "text": ("id", "question", "answer", "passage")}


def mapped_case(values: tuple[Any, ...], passages: list[str]) -> dict[str, Any]:
    id_, question, answer, _, scenario, label = values
    return {"id": id_, "input": question, "output": answer,
            "context": [{"id": f"c{i}", "text": p} for i, p in enumerate(passages, 1)],
            "metadata": {"scenario": scenario},
            "expected": {"support": {"status": LABELS[label], "source": "human"}}}


def text_case(values: tuple[Any, ...]) -> dict[str, Any]:
    id_, question, answer, passage = values
    return {"id": id_, "input": question, "output": answer,
            "context": [{"id": "c1", "text": passage}]}


def _rows(fmt: str, shape: str, src: Path) -> Iterator[tuple[Any, ...]]:
    """Each row's values in column order (passages a list)."""
    decode_list = msgspec.json.Decoder(list[str]).decode
    if fmt == "csv":
        with open(src, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            next(reader)
            for row in reader:
                if shape == "mapped":
                    row[3] = decode_list(row[3])
                yield tuple(row)
    elif fmt == "jsonl":
        decode = msgspec.json.Decoder(dict[str, Any]).decode
        names = COLUMNS[shape]
        with open(src, "rb") as f:
            for line in f:
                values = decode(line)
                yield tuple(values[n] for n in names)
    else:
        import polars as pl

        for batch in pl.scan_parquet(src).collect_batches(chunk_size=4_096):
            yield from batch.iter_rows()


def main(shape: str, fmt: str, src: Path, dst: Path) -> int:
    """Write the cases of ``src`` (a ``fmt`` table of ``shape``) to ``dst``."""
    encode = msgspec.json.Encoder().encode
    case: Callable[[tuple[Any, ...]], dict[str, Any]] = (
        (lambda v: mapped_case(v, v[3])) if shape == "mapped" else text_case)
    pending: list[bytes] = []
    with open(dst, "wb") as out:
        for values in _rows(fmt, shape, src):
            pending.append(encode(case(values)))
            if len(pending) >= 256:
                pending.append(b"")
                out.write(b"\n".join(pending))
                pending = []
        if pending:
            pending.append(b"")
            out.write(b"\n".join(pending))
    return 0
