"""What the commands share: argument types that refuse bad values with a usage error, the
reading options, and the progress bar. Only argparse is imported here."""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Any

MAX_COUNT = 1 << 62  # far above anything useful, and within every integer type used
# evalstream.checks.encodings.ENCODINGS (a test keeps them equal), named here so that parsing
# the command line imports nothing but argparse.
TOKENIZERS = ("o200k_base", "cl100k_base")


_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")  # ASCII digits only: int() also takes "1_0", "١٢"
_WHOLE = re.compile(r"[0-9]+")


def size(text: str) -> int:
    """A size in bytes: ``268435456``, ``64KiB``, ``256MiB``, ``1GiB`` (also KB, MB, GB)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = units.get(t[-1:], 1)
    number = t[:-1] if unit != 1 else t
    if not _NUMBER.fullmatch(number) or (unit == 1 and "." in number):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (e.g. 268435456, 256MiB)") from None
    value = int(float(number) * unit) if "." in number else int(number) * unit
    if not 0 < value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive size up to 4 EiB")
    return value


def count(text: str) -> int:
    """A whole number, 0 or more."""
    t = text.strip()
    if t.startswith("-") and _WHOLE.fullmatch(t[1:]):
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    if not _WHOLE.fullmatch(t):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if len(t) > 20 or int(t) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {MAX_COUNT:,})")
    return int(t)


def positive(text: str) -> int:
    """A whole number, 1 or more."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def path(text: str) -> str:
    """A file path (``-`` for stdin or stdout where the option says so): not empty."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path; give a file name (or - for stdin or "
                                         "stdout where allowed)")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} holds a NUL character, which no path may")
    return text


def text(value: str) -> str:
    """A value that must not be empty (metadata keys, a column, a rule, a separator)."""
    if not value:  # a space may be a value (a CSV separator): only nothing is refused here
        raise argparse.ArgumentTypeError("an empty value; see --help for what it takes")
    return value


def fraction(text: str) -> float:
    """A number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (e.g. 0.95)")
    return value


def share(text: str) -> float:
    """A number from 0 to 1, both included (a rate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (e.g. 0.02)")
    return value


def amount(text: str) -> float:
    """A finite number above 0 (seconds, prices, rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number above 0")
    return value


def add_force(p: argparse.ArgumentParser) -> None:
    """``--force``, for every command that writes files."""
    p.add_argument("--force", action="store_true",
                   help="replace a target that holds something evalstream did not write there "
                        "(cases, another command's output, your own file); by default that is "
                        "refused, before anything is read")


def add_tokenizer(p: argparse.ArgumentParser) -> None:
    """``--tokenizer``, for every command that counts tokens."""
    p.add_argument("--tokenizer", choices=TOKENIZERS, default=TOKENIZERS[0],
                   help="the judge's encoding, for every token count: o200k_base (GPT-4o, "
                        "GPT-4.1, o-series, GPT-5) or cl100k_base (GPT-4, GPT-3.5); default "
                        "o200k_base")


def temperature(text: str) -> float | None:
    """A sampling temperature of 0 or more, or ``none`` to send none (models that accept
    only their default)."""
    import math

    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number (or `none`, to send no temperature)") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of 0 or more (or `none`)")
    return value


def add_reading(p: argparse.ArgumentParser) -> None:
    """The options of every command that reads cases as build does."""
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="where rejected lines go (JSONL); build: next to the output "
                        "(states.rejects.jsonl) when a line is rejected; validate: none")
    p.add_argument("--report", type=path, metavar="FILE",
                   help="where the run report goes (JSON); build: next to the output "
                        "(states.report.json); validate: none")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know instead of rejecting the line")
    p.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                   help="reject lines longer than this, without reading them whole "
                        "(default 256MiB)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary on stderr")


def add_engine(p: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--scheduler``: where the work runs."""
    p.add_argument("--engine", choices=["local", "dask"], default="local",
                   help="local: this process, or --workers processes of this machine "
                        "(default); dask: a Dask cluster (pip install 'evalstream[dask]'); "
                        "the output is byte-identical either way")
    p.add_argument("--scheduler", type=text, metavar="ADDRESS",
                   help="the Dask scheduler (tcp://HOST:8786) for --engine dask; default: a "
                        "cluster of this machine's cores (--workers processes)")


def progress_bar(quiet: bool) -> Any:
    """A rich progress bar (bytes, speed) on stderr when it is a terminal, else None."""
    if quiet or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    return Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), transient=True)


COMMON_CODES = [(2, "usage, input or I/O error (nothing written)"),
                (4, "the input is plainly not the kind of file the command reads"),
                (130, "interrupted"), (143, "terminated"), (129, "hung up"),
                (70, "internal error (a bug in evalstream)")]


def helps(description: str, examples: list[str], codes: list[tuple[int, str]]) -> dict[str, Any]:
    """``add_parser`` keywords for a command's help: its description (wrapped), two or three
    examples and its exit codes (the command's own first, then the common ones)."""
    import textwrap

    lines = ["examples:", *(f"  {example}" for example in examples), "", "exit codes:"]
    for code, meaning in [*codes, *COMMON_CODES]:
        lines += textwrap.wrap(f"{code:>5}  {meaning}", 88, subsequent_indent=" " * 7)
    return {"description": textwrap.fill(description, 88),
            "epilog": "\n".join(lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}
