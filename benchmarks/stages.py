"""Where ``build``'s time goes: ``python -m benchmarks stages IN.jsonl [--repeat 5]``.

Drives build's own pieces in this process over the file (no start-up, output not written),
best of ``--repeat``: first cumulatively (read lines; + typed decode; + the read loop with
its id checks; + the Checker's states and budget; + the records), then the full run with
one extra taken out at a time (item-id uniqueness, the duplicate-id index, the state hash,
the escaping of line separators in state fields).
Prints one line per figure: seconds and microseconds a case. Rubric:
``benchmarks/all_fields.toml`` (``--builtin``: the built-in rubrics).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalstream._build import records
from evalstream._build.loop import process
from evalstream._cases import ids, schema
from evalstream._cases.reading import case_reader
from evalstream._checks import checker
from evalstream._checks.checker import Checker
from evalstream._checks.rubrics import load_rubrics
from evalstream._files.lines import Chunk, open_input, read_chunks

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


def main(path: Path, repeat: int, builtin: bool = False) -> int:
    rubrics = load_rubrics(None if builtin else [str(ALL_FIELDS)])
    cases = sum(len(c.lines) for c in _chunks(path))
    decode = schema.decoder().decode

    def read() -> None:
        for _ in _chunks(path):
            pass

    def decoded() -> None:
        for chunk in _chunks(path):
            for line in chunk.lines:
                decode(line)

    def admitted() -> None:
        for _ in case_reader().read(_chunks(path)):
            pass

    def checked() -> None:
        checker = Checker(rubrics)
        for item in case_reader().read(_chunks(path)):
            checker.check(item[3], item[0])  # type: ignore[index]

    def full() -> None:
        process(case_reader().read(_chunks(path)), Checker(rubrics), _drop, _drop)

    def show(name: str, seconds: float) -> None:
        print(f"{name:44s} {seconds:7.3f} s {seconds / cases * 1e6:6.2f} us/case")

    print(f"{path}: {cases:,} lines, best of {repeat}")
    for name, run in (("read lines", read), ("+ typed decode", decoded),
                      ("+ read loop: item ids, duplicate-id index", admitted),
                      ("+ Checker: states, budget", checked),
                      ("+ records (the whole build loop)", full)):
        show(name, _best(run, repeat))
    whole = _best(full, repeat)
    show("full run again", whole)
    for name, owner, attr, stand_in in (
            ("without item-id uniqueness", schema, "duplicate_item_id", lambda case: None),
            ("without the duplicate-id index", ids.IdIndex, "add_id", lambda *_: 0),
            ("without the state hash", records.xxhash, "xxh3_128_hexdigest",
             lambda _: "0" * 32),
            ("without escaping U+2028/2029/0085", checker, "escape_line_breaks",
             lambda data: data)):
        with _without(owner, attr, stand_in):
            show(f"{name} (saves)", whole - _best(full, repeat))
    return 0


def _drop(data: object) -> None:
    return None
