"""The sources ``convert`` reads, how each is named, and how one is inferred from a file."""

from __future__ import annotations

import os
from typing import NamedTuple

from evalstream._files import sniff
from evalstream.errors import UsageError, WrongFileError


class Format(NamedTuple):
    """A source format: its ``--from`` name, what it is, and the names that imply it."""

    name: str
    summary: str
    extensions: tuple[str, ...]


FORMATS = (
    Format("openai-chat", "JSONL, one OpenAI chat transcript a line (`messages`): input, output, "
           "messages and tool events taken from it", ()),
    Format("csv", "a CSV table with a header row; --map columns to case fields",
           (".csv",)),
    Format("tsv", "a tab-separated table with a header row; --map as for csv", (".tsv", ".tab")),
    Format("parquet", "a Parquet file (list columns for context); --map as for csv",
           (".parquet", ".pq")),
    Format("json", "a JSON array of objects; --map keys (dots reach nested keys)", (".json",)),
    Format("jsonl", "JSONL, one object a line, of any shape; --map keys as for json",
           (".jsonl", ".ndjson")),
    Format("inspect", "an inspect_ai eval log (.eval or .json): one case a sample, scores as "
           "imported labels", (".eval",)),
    Format("hf", "a Hugging Face dataset on disk: a save_to_disk folder, or a folder of "
           "Parquet files; --map as for csv", (".arrow",)),
)
NAMES = tuple(f.name for f in FORMATS)
STREAMABLE = ("openai-chat", "jsonl", "json", "csv", "tsv")  # may be read from stdin


def list_formats() -> str:
    """One line a format, for ``--list-formats``."""
    width = max(len(n) for n in NAMES)
    return "".join(f"{f.name:<{width}}  {f.summary}\n" for f in FORMATS)


def strip_compression(path: str) -> str:
    """The name without a ``.gz``/``.zst`` suffix."""
    lower = path.lower()
    for ext in (".gz", ".zst"):
        if lower.endswith(ext):
            return path[: -len(ext)]
    return path


def infer(path: str) -> tuple[str, str]:
    """The format of ``path`` and how it was inferred (a clause for the report), checking the
    first bytes against the name; a WrongFileError when they disagree plainly."""
    if path == "-":
        raise UsageError(f"give --from for stdin (one of: {', '.join(STREAMABLE)}).")
    if os.path.isdir(path):
        return "hf", "a folder: a Hugging Face dataset on disk"
    base = strip_compression(path)
    ext = os.path.splitext(base)[1].lower()
    head = sniff.decompressed_head(sniff.read_head(path), path)
    found = sniff.diagnose(head, "")
    by_name = next((f.name for f in FORMATS if ext in f.extensions), None)
    if found is not None and found.kind in ("inspect-eval", "inspect-json"):
        return "inspect", "its content: an inspect_ai eval log"
    if found is not None and found.kind == "parquet":
        return "parquet", "its content: Parquet (PAR1)"
    if by_name == "json" and found is not None and found.kind == "json-document":
        raise WrongFileError(f"{path} is one JSON document, not a JSON array of rows; give "
                             "the rows as an array or as JSONL (`jq -c '.KEY[]' FILE`).")
    if by_name in ("jsonl", None) and ext in (".jsonl", ".ndjson", ""):
        if _looks_like_chat(head):
            return "openai-chat", f"its first line: a `messages` transcript in a {ext or 'file'}"
        if by_name == "jsonl":
            return "jsonl", f"the {ext} name"
    if by_name is not None:
        return by_name, f"the {ext} name"
    if found is not None and found.kind in ("csv", "tsv", "json-array"):
        kind = "json" if found.kind == "json-array" else found.kind
        return kind, f"its content: {found.what}"
    raise UsageError(f"cannot tell the format of {path} from its name; give --from (one of: "
                     f"{', '.join(NAMES)}).")


def _looks_like_chat(head: bytes) -> bool:
    import msgspec

    first = head.lstrip().split(b"\n", 1)[0]
    try:
        value = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return b'"messages"' in first[:4096]
    return isinstance(value, dict) and isinstance(value.get("messages"), list) \
        and "input" not in value


def check(path: str, fmt: str) -> None:
    """A WrongFileError when the file plainly is not of format ``fmt``."""
    if path == "-" or os.path.isdir(path):
        return
    raw = sniff.read_head(path)
    found = sniff.diagnose(raw, path)
    if found is not None and found.kind in ("gzip", "zstd", "not-compressed", "bzip2", "xz",
                                            "utf-16", "7z", "pdf", "sqlite", "html"):
        raise WrongFileError(f"{path} is {found.what}, not {fmt} data; {_fix(found, path)}.")
    head = sniff.decompressed_head(raw, path)
    found = sniff.diagnose(head, "")
    kind = found.kind if found is not None else "jsonl"
    expected = {"csv": ("csv", "tsv", None), "tsv": ("tsv", "csv", None),
                "parquet": ("parquet",), "inspect": ("inspect-eval", "inspect-json"),
                "json": ("json-array",), "jsonl": ("jsonl",), "openai-chat": ("jsonl",),
                "hf": ("arrow", "parquet", None)}[fmt]
    if kind in expected or (None in expected and kind not in _BINARY):
        return
    fix = f"give --from {_FROM.get(kind, '...')}" if kind in _FROM else _fix(found, path)
    what = found.what if found is not None else "JSONL"
    raise WrongFileError(f"{path} is {what}, not {fmt} data; {fix}.")


_BINARY = ("parquet", "arrow", "inspect-eval", "xlsx", "zip", "utf-16", "sqlite", "pdf")
_FROM = {"parquet": "parquet", "inspect-eval": "inspect", "inspect-json": "inspect",
         "csv": "csv", "tsv": "tsv", "json-array": "json", "jsonl": "jsonl or openai-chat",
         "arrow": "hf"}


def _fix(found: sniff.Sniffed | None, path: str) -> str:
    return found.fix.replace("FILE", path) if found is not None else "check the file"
