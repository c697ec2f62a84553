"""``--from tsv``: a tab-separated table with a header row, read as ``csv`` reads one."""

from __future__ import annotations

from evalstream._convert.formats.base import Format
from evalstream._convert.formats.csv import TABLE_OPTIONS, open_table

FORMAT = Format(
    "tsv", "a tab-separated table with a header row; --map as for csv",
    lambda given: open_table(given, "\t"), options=TABLE_OPTIONS, stream=True,
    suffixes=(".tsv", ".tab"), kinds=("tsv",), guess=True, also=("csv",), text=True)
