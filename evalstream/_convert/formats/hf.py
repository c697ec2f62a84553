"""``--from hf``: Hugging Face datasets on disk, as ``save_to_disk`` and ``to_parquet`` write
them. No download.

- A ``Dataset.save_to_disk`` folder: ``state.json`` lists its Arrow shards
  (``data-00000-of-00001.arrow``, Arrow IPC streams), read one shard at a time.
- A ``DatasetDict.save_to_disk`` folder: ``dataset_dict.json`` lists the splits, one
  folder each; ``--split`` picks one (required when there are several).
- A folder of Parquet files (``to_parquet``, or a snapshot of a dataset repository such as
  ``data/train-00000-of-00002.parquet``): every ``.parquet`` file below it in name order,
  those of ``--split`` only when given (by a ``SPLIT-`` file name prefix or a ``SPLIT``
  folder); scanned as one table in batches.
- A single ``.arrow`` shard or ``.parquet`` file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from evalstream._convert.formats.base import Format, Given, Source
from evalstream._files.sniffed import Sniffed
from evalstream.errors import InputError, UsageError


class Layout(NamedTuple):
    """The files of one split of a dataset on disk, all Arrow streams or all Parquet."""

    kind: str  # "arrow" or "parquet"
    files: list[str]
    split: str | None


def locate(path: str, split: str | None) -> Layout:
    """The files to read for ``path`` (a folder or one file) and ``split``."""
    if os.path.isfile(path):
        kind = "parquet" if path.lower().endswith((".parquet", ".pq")) else "arrow"
        return Layout(kind, [path], split)
    if not os.path.isdir(path):
        raise InputError(f"cannot read {path}: no such file or folder")
    dict_file = os.path.join(path, "dataset_dict.json")
    if os.path.isfile(dict_file):
        splits = _json(dict_file).get("splits") or []
        if split is None and len(splits) == 1:
            split = splits[0]
        if split is None or split not in splits:
            raise UsageError(f"{path} holds the splits {', '.join(map(repr, splits))}; choose "
                             "one with --split NAME.")
        return locate(os.path.join(path, split), split)
    state = os.path.join(path, "state.json")
    if os.path.isfile(state):
        files = [os.path.join(path, f["filename"]) for f in _json(state).get("_data_files", [])]
        if not files:
            raise InputError(f"{state} lists no data files.")
        return Layout("arrow", files, split)
    parquet = sorted(os.path.join(root, name) for root, _, names in os.walk(path)
                     for name in names if name.endswith(".parquet"))
    if split is None:
        splits = sorted({m[1] for p in parquet if (m := _SHARD.match(os.path.basename(p)))})
        if len(splits) > 1:
            raise UsageError(f"{path} holds the splits {', '.join(map(repr, splits))}; choose "
                             "one with --split NAME.")
    else:
        parquet = [p for p in parquet if os.path.basename(p).startswith(f"{split}-")
                   or f"{os.sep}{split}{os.sep}" in p[len(path):]]
    if parquet:
        return Layout("parquet", parquet, split)
    arrow = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".arrow"))
    if arrow:
        return Layout("arrow", arrow, split)
    which = f" for split {split!r}" if split else ""
    raise InputError(f"{path} holds no dataset{which}: no dataset_dict.json, state.json, "
                     ".parquet or .arrow files. Save a Hugging Face dataset with "
                     "`ds.save_to_disk(FOLDER)` or `ds.to_parquet(FILE)`.")


_SHARD = re.compile(r"(.+?)-\d+-of-\d+\.parquet\Z")  # a hub shard: train-00000-of-00002


def _json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, dict):
        raise InputError(f"{path} is not a JSON object.")
    return value


def columns(layout: Layout) -> list[str]:
    """The column names of the dataset (from the first file's schema)."""
    import polars as pl

    from evalstream._convert.tables import check_nesting

    try:
        if layout.kind == "parquet":
            schema = pl.scan_parquet(layout.files).collect_schema()
        else:
            schema = pl.read_ipc_stream(layout.files[0], n_rows=0).schema
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"cannot read {layout.files[0]}: {exc}") from exc
    check_nesting(schema, layout.files[0])
    return list(schema.names())


def frames(layout: Layout) -> Iterator[Any]:
    """The dataset as data frames in order: Parquet in batches; an Arrow stream a shard at a
    time (Polars reads IPC streams whole; ``save_to_disk`` cuts shards at 500 MB)."""
    import polars as pl

    from evalstream._convert.tables import batches, parquet_scan

    if layout.kind == "parquet":
        yield from batches(parquet_scan(layout.files), ", ".join(layout.files[:3]))
        return
    for file in layout.files:
        try:
            shard = pl.read_ipc_stream(file)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise InputError(f"cannot read {file} as an Arrow stream: {exc}") from exc
        yield from shard.iter_slices(4_096)
        del shard


def _open(given: Given) -> Source:
    from evalstream._convert.tables import polars_rows

    layout = locate(given.path, given.split)
    columns_ = columns(layout)
    return given.table(polars_rows(frames(layout)), columns_)


def _advise(found: Sniffed, command: str) -> str | None:
    # `--map ...`: the columns are not in the first bytes. A stream is a save_to_disk shard,
    # whose dataset is its folder.
    if found.kind == "arrow":
        return f"convert it: `evalstream convert FILE cases.jsonl --from {FORMAT.name} --map ...`"
    if found.kind == "arrow-stream":
        return (f"convert its folder: `evalstream convert FOLDER cases.jsonl --from {FORMAT.name} "
                "--map ...`")
    return None


FORMAT = Format(
    "hf", "a Hugging Face dataset on disk: a save_to_disk folder, or a folder of Parquet "
    "files; --map as for csv", _open,
    options=("mapping", "id_from", "tool_failure_when", "split"), suffixes=(".arrow",),
    kinds=("arrow", "arrow-stream"), folder="a Hugging Face dataset on disk",
    also=("parquet",), text=True, advise=_advise)
