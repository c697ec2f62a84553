"""``--from parquet``: a Parquet file (list columns for context), one case a row through
``--map``; scanned by Polars in batches, its types checked for depth before any row."""

from __future__ import annotations

from evalstream._convert.formats.base import Format, Given, Source


def _open(given: Given) -> Source:
    from evalstream._convert import tables

    scan = tables.parquet_scan(given.path)
    columns = tables.scan_columns(scan, given.path)
    return given.table(tables.polars_rows(tables.batches(scan, given.path)), columns)


FORMAT = Format(
    "parquet", "a Parquet file (list columns for context); --map as for csv", _open,
    options=("mapping", "id_from", "tool_failure_when"), suffixes=(".parquet", ".pq"),
    kinds=("parquet",), magic="Parquet (PAR1)")
