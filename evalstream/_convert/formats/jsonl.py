"""``--from jsonl``: JSONL, one object a line of any shape, read by the one line loop
(``tables.jsonl_rows``); ``--map`` keys as for json."""

from __future__ import annotations

from evalstream._convert.formats.base import Format, Given, Source


def _open(given: Given) -> Source:
    from evalstream._convert.tables import jsonl_rows

    return given.table(jsonl_rows(given.stream(), given.max_line_bytes), None)


FORMAT = Format(
    "jsonl", "JSONL, one object a line, of any shape; --map keys as for json", _open,
    options=("mapping", "id_from", "tool_failure_when"), stream=True,
    suffixes=(".jsonl", ".ndjson"), kinds=("jsonl",))
