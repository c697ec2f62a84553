"""Where ``build``'s time goes: ``python -m benchmarks stages IN.jsonl [--repeat 5]``.

Drives ``evalstream.build.Processor`` in this process over the file (no start-up, output
not written), best of ``--repeat``: first cumulatively (read lines; + typed decode; + the
id checks; + everything ``Processor.chunk`` does), then the full run with one extra taken
out at a time (item-id uniqueness, the duplicate-id index, the state hash). Prints one line
per figure: seconds and microseconds a case. Rubric: ``benchmarks/all_fields.toml``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalstream.cases import ids, schema
from evalstream.files.lines import Chunk, open_input, read_chunks
from evalstream.pipeline import build

ALL_FIELDS = Path(__file__).resolve().parent / "all_fields.toml"


def _chunks(path: Path) -> Iterator[Chunk]:
    with open_input(str(path)) as stream:
        for item in read_chunks(stream):
            assert isinstance(item, Chunk), "a line over the default limit"
            yield item


def _best(run: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


@contextmanager
def _without(owner: Any, name: str, stand_in: Any) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, stand_in)
    try:
        yield
    finally:
        setattr(owner, name, original)


def main(path: Path, repeat: int) -> int:
    rubrics = build.load_rubrics([str(ALL_FIELDS)])
    cases = sum(len(c.lines) for c in _chunks(path))
    decode = schema.decoder().decode

    def processor() -> build.Processor:
        return build.Processor(rubrics, 32_000, 1 << 28, False)

    def read() -> None:
        for _ in _chunks(path):
            pass

    def decoded() -> None:
        for chunk in _chunks(path):
            for line in chunk.lines:
                decode(line)

    def admitted() -> None:
        p = processor()
        for chunk in _chunks(path):
            rejects: list[Any] = []
            for i, line in enumerate(chunk.lines):
                p._admit(line, chunk.line + i, rejects)

    def full() -> None:
        p = processor()
        for chunk in _chunks(path):
            p.chunk(chunk)

    def show(name: str, seconds: float) -> None:
        print(f"{name:44s} {seconds:7.3f} s {seconds / cases * 1e6:6.2f} us/case")

    print(f"{path}: {cases:,} lines, best of {repeat}")
    for name, run in (("read lines", read), ("+ typed decode", decoded),
                      ("+ item ids, duplicate-id index", admitted),
                      ("+ states, budget, records (Processor.chunk)", full)):
        show(name, _best(run, repeat))
    whole = _best(full, repeat)
    show("full run again", whole)
    for name, owner, attr, stand_in in (
            ("without item-id uniqueness", schema, "duplicate_item_id", lambda case: None),
            ("without the duplicate-id index", ids.IdIndex, "add_id", lambda *_: 0),
            ("without the state hash", build.xxhash, "xxh3_128_hexdigest", lambda _: "0" * 32)):
        with _without(owner, attr, stand_in):
            show(f"{name} (saves)", whole - _best(full, repeat))
    return 0
