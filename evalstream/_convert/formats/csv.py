"""``--from csv``: a CSV table with a header row, one case a row through ``--map``.

Read record by record on the one line reader (``tables.csv_table``), every cell as text, so a
bad row is one reject and the rest is read. Also the way in for what becomes a CSV first: an
SQLite table exported, an Excel sheet saved.
"""

from __future__ import annotations

from evalstream._convert.formats.base import Format, Given, Source
from evalstream._files.sniffed import Sniffed

TABLE_OPTIONS = ("mapping", "id_from", "tool_failure_when", "separator")


def open_table(given: Given, separator: str) -> Source:
    """A CSV or TSV table: ``--separator`` when given, else the format's own."""
    from evalstream._convert.tables import csv_table

    columns, rows = csv_table(given.stream(), given.path, given.separator or separator,
                              given.quoting, given.max_line_bytes)
    return given.table(rows, columns)


def _advise(found: Sniffed, command: str) -> str | None:
    if found.kind == "csv" and found.separator not in ("", ","):
        return (f"convert it: {command} (give the separator with "
                f"`--separator '{found.separator}'`)")
    if found.kind == "sqlite":  # its fix exports a table as t.csv
        return (f"{found.fix} and convert that with `evalstream convert t.csv cases.jsonl "
                f"--from {FORMAT.name} --map ...`")
    if found.kind == "xlsx":  # its fix saves the sheet as CSV
        return f"{found.fix} and convert it: {FORMAT.command('sheet.csv')}"
    return None


FORMAT = Format(
    "csv", "a CSV table with a header row; --map columns to case fields",
    lambda given: open_table(given, ","), options=TABLE_OPTIONS, stream=True,
    suffixes=(".csv",), kinds=("csv",), guess=True, also=("tsv",), text=True, advise=_advise)
