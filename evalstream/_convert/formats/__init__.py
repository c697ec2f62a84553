"""The sources ``convert`` reads: one module a format, and the registry that lists them.

Each module holds one ``base.Format``: what it reads, the options it takes, how a file is
recognised as it, how it opens. ``FORMATS`` lists them, one line each, in the order
``--list-formats`` shows them and names are tried. Everything else here reads it: ``named``
(``--from``), ``infer`` (the format of a file), ``check`` (a file against its format),
``check_options`` (an option given to a format that does not take it), ``list_formats``, and
``way_in`` (how a file another command was given becomes cases, for the sentence it says).
To add a format: ARCHITECTURE.md, "Add a convert format".
"""

from __future__ import annotations

import os
from typing import Any

from evalstream._convert.formats import (
    csv,
    hf,
    inspect_grades,
    inspect_log,
    json,
    jsonl,
    openai_chat,
    otel,
    parquet,
    promptfoo_grades,
    tsv,
)
from evalstream._convert.formats.base import OPTIONS, Format, Option
from evalstream._files import sniff
from evalstream._files.sniffed import Sniffed
from evalstream.errors import UsageError, WrongFileError

FORMATS: tuple[Format, ...] = (
    openai_chat.FORMAT,
    otel.FORMAT,  # before json and jsonl: its first line names it among their files
    csv.FORMAT,
    tsv.FORMAT,
    parquet.FORMAT,
    json.FORMAT,
    jsonl.FORMAT,
    inspect_log.FORMAT,
    hf.FORMAT,
    # After every format that writes cases: a wrong-file sentence names the way into cases.
    inspect_grades.FORMAT,
    promptfoo_grades.FORMAT,
)
NAMES = tuple(f.name for f in FORMATS)


def named(name: str) -> Format:
    """The format ``--from name`` names, or a UsageError listing them."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise UsageError(f"--from {name!r} is not a format; formats: {', '.join(NAMES)}.")


# -- --list-formats -------------------------------------------------------------------------------
def list_formats() -> str:
    """The formats for ``--list-formats``: for each, its name and what it reads, the files it
    is inferred from, and the options it takes."""
    width = max(len(n) for n in NAMES)
    pad = " " * (width + 2)
    return "".join(f"{f.name:<{width}}  {f.reads}\n"
                   f"{pad}inferred from: {_inferred_from(f)}\n"
                   f"{pad}options: {_options(f)}\n" for f in FORMATS)


def _inferred_from(fmt: Format) -> str:
    if not (fmt.suffixes or fmt.folder or fmt.magic or fmt.guess):
        return f"never (its files are another format's: give --from {fmt.name})"
    names = ", ".join(s or "no suffix" for s in fmt.suffixes)
    if fmt.stream and names:
        names += " (.gz, .zst too)"
    if fmt.first_line is not None:
        names += f", when the first line is {fmt.first_line.said}"
    said = [f"a folder ({fmt.folder})"] if fmt.folder else []
    if names:
        said.append(names)
    if fmt.magic:
        said.append(f"any name{' (.gz, .zst too)' if fmt.stream and not names else ''}, by its "
                    f"first bytes ({fmt.magic})")
    elif fmt.guess:
        said.append("another name, by its first bytes")
    return "; ".join(said)


def _options(fmt: Format) -> str:
    flags = [f"{flag.flag}{' (required)' if flag.required else ''}"
             for name in fmt.options for flag in OPTIONS[name].flags]
    return (", ".join(flags) or "none") + ("; reads stdin (-)" if fmt.stream else "")


# -- which format a file is -----------------------------------------------------------------------
def strip_compression(path: str) -> str:
    """The name without a ``.gz``/``.zst`` suffix."""
    lower = path.lower()
    for ext in (".gz", ".zst"):
        if lower.endswith(ext):
            return path[: -len(ext)]
    return path


def infer(path: str) -> tuple[Format, str]:
    """The format of ``path`` and how it was inferred (a clause for the report), by the rules
    of ``base.Format``, in the registry's order."""
    if path == "-":
        streams = ", ".join(f.name for f in FORMATS if f.stream)
        raise UsageError(f"give --from for stdin (one of: {streams}).")
    if os.path.isdir(path):
        for fmt in FORMATS:
            if fmt.folder:
                return fmt, f"a folder: {fmt.folder}"
    ext = os.path.splitext(strip_compression(path))[1].lower()
    head = sniff.decompressed_head(sniff.read_head(path), path)
    found = sniff.diagnose(head, "")
    kind = found.kind if found is not None else None
    for fmt in FORMATS:
        if fmt.magic and kind in fmt.kinds:
            return fmt, f"its content: {fmt.magic}"
    for fmt in FORMATS:
        if ext in fmt.suffixes:
            if fmt.first_line is None:
                return fmt, f"the {ext} name"
            if fmt.first_line.test(head):
                return fmt, f"its first line: {fmt.first_line.said} in a {ext or 'file'}"
    for fmt in FORMATS:
        if fmt.guess and found is not None and found.kind in fmt.kinds:
            return fmt, f"its content: {found.what}"
    raise UsageError(f"cannot tell the format of {path} from its name; give --from (one of: "
                     f"{', '.join(NAMES)}).")


# What a file's raw bytes (and its name) may say that no format reads as rows, whatever its
# content: compression under another name or none, other compressions, another encoding,
# documents. Checked before the content, which the name may say is compressed.
_NOT_ROWS = ("gzip", "zstd", "not-compressed", "bzip2", "xz", "utf-16", "7z", "pdf", "sqlite",
             "html", "image", "tar")
# Kinds that are never text, which a format reading any text (``Format.text``) refuses.
_BINARY = ("parquet", "arrow", "arrow-stream", "inspect-eval", "xlsx", "zip", "utf-16",
           "sqlite", "pdf", "image", "tar")


def check(path: str, fmt: Format) -> None:
    """A WrongFileError when the file plainly is not of format ``fmt``: one sentence saying what
    it is and the fix (the format that reads it, or how it becomes one)."""
    if path == "-" or os.path.isdir(path):
        return
    raw = sniff.read_head(path)
    found = sniff.diagnose(raw, path)
    if found is not None and found.kind in _NOT_ROWS:
        raise WrongFileError(f"{path} is {found.what}, not {fmt.name} data; "
                             f"{_fix(found, path)}.")
    found = sniff.diagnose(sniff.decompressed_head(raw, path), "")
    kind = found.kind if found is not None else "jsonl"  # may be JSONL: nothing plainly else
    if kind in fmt.mistakes:
        raise WrongFileError(f"{path} {fmt.mistakes[kind]}.")
    if kind in fmt.kinds or kind in fmt.also or (fmt.text and kind not in _BINARY):
        return
    # By name, so that the sentence does not depend on the registry's order; those that write
    # what was asked for (cases, or verdicts) when any does.
    readers = sorted(f.name for f in FORMATS if kind in f.kinds and f.writes == fmt.writes) \
        or sorted(f.name for f in FORMATS if kind in f.kinds)
    fix = f"give --from {' or '.join(readers)}" if readers else _fix(found, path)
    what = found.what if found is not None else "JSONL"
    raise WrongFileError(f"{path} is {what}, not {fmt.name} data; {fix}.")


def _fix(found: Sniffed | None, path: str) -> str:
    if found is None:
        return "check the file"
    return (way_in(found) or found.fix).replace("FILE", path)


def way_in(found: Sniffed) -> str | None:
    """How a file the sniffer found to be ``found`` becomes cases: the clause a wrong-file
    sentence ends with (FILE stands for the file), or None when no format reads it. The
    package root hands this to ``_files.sniffed``, for the commands that read cases."""
    for fmt in FORMATS:
        said = fmt.advise(found, fmt.command()) if fmt.advise is not None else None
        if said:
            return said
    for fmt in FORMATS:
        if found.kind in fmt.kinds and fmt.writes == "cases":
            return f"convert it: {fmt.command()}"
    for fmt in FORMATS:  # a peer's results: no cases in it, its verdicts
        if found.kind in fmt.kinds:
            return f"convert its {fmt.writes}: {fmt.command()}"
    return None


# -- options --------------------------------------------------------------------------------------
def check_options(fmt: Format, options: Any) -> None:
    """A UsageError for an option of convert's ``options`` that ``fmt`` does not take (never
    ignored silently), naming the option and the formats that take it."""
    for name, option in OPTIONS.items():
        given = [flag.flag for flag in option.flags if flag.given(options)]
        if given and not fmt.takes(name):
            raise UsageError(_refused(fmt, name, option, given))
    separator = options.separator
    if separator is not None and len(separator.encode()) != 1:
        raise UsageError(f"--separator {separator!r} must be one single-byte character.")
    if options.input == "-" and not fmt.stream:
        raise UsageError(f"--from {fmt.name} cannot read stdin; give the file's path.")


def _refused(fmt: Format, name: str, option: Option, given: list[str]) -> str:
    takers = f"--from {', '.join(f.name for f in FORMATS if f.takes(name))}"
    where = f"{option.takers} ({takers})" if option.takers else takers
    reason = fmt.refuses.get(name)
    return (f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to {where}"
            f"{'; ' + reason if reason else ' only'}.")
