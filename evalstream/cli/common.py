"""What the commands share: argument types that refuse bad values with a usage error, the
reading options, and the progress bar. Only argparse is imported here."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

MAX_COUNT = 1 << 62  # far above anything useful, and within every integer type used


def size(text: str) -> int:
    """A size in bytes: ``268435456``, ``64KiB``, ``256MiB``, ``1GiB`` (also KB, MB, GB)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    try:
        if t and t[-1] in units:
            number = float(t[:-1])
            if not math.isfinite(number):
                raise ValueError(text)
            value = int(number * units[t[-1]])
        else:
            value = int(t)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (e.g. 268435456, 256MiB)") from None
    if not 0 < value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive size up to 4 EiB")
    return value


def count(text: str) -> int:
    """A whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {MAX_COUNT:,})")
    return value


def positive(text: str) -> int:
    """A whole number, 1 or more."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
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


def temperature(text: str) -> float | None:
    """A sampling temperature, or ``none`` to send none (models that accept only their
    default)."""
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number (or `none`, to send no temperature)") from None


def add_reading(p: argparse.ArgumentParser) -> None:
    """The options of every command that reads cases as build does."""
    p.add_argument("--rejects", metavar="FILE",
                   help="where rejected lines go (JSONL); default: next to the output "
                        "(states.rejects.jsonl), or the input for validate")
    p.add_argument("--report", metavar="FILE",
                   help="where the run report goes (JSON); default: states.report.json")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know instead of rejecting the line")
    p.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                   help="reject lines longer than this, without reading them whole "
                        "(default 256MiB)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary on stderr")


def progress_bar(quiet: bool) -> Any:
    """A rich progress bar (bytes, speed) on stderr when it is a terminal, else None."""
    if quiet or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    return Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), transient=True)
