"""What the commands share: argument types that refuse bad values with a usage error (the
rules of ``evalstream._options``, shared with the Python API), the reading options, and the
progress bar. Only argparse and evalstream._options are imported here (and the judge
providers' registry, light to import, where the judge's options are added)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from evalstream import _options as options
from evalstream.errors import UsageError

MAX_COUNT = options.MAX_COUNT
TOKENIZERS = options.TOKENIZERS


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived; unwinds like Ctrl-C so temporary files are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from a parser of ``evalstream._options``: the same rule and sentence
    as the Python API, which argparse shows after ``argument --OPTION:``."""
    def read(text: str) -> Any:
        try:
            return parse(text)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = parse.__name__.removeprefix("parse_")  # argparse names the type by it
    read.__doc__ = parse.__doc__
    return read


size = _argument(options.parse_size)
count = _argument(options.parse_count)
positive = _argument(options.parse_positive)
path = _argument(options.parse_path)
text = _argument(options.parse_text)
fraction = _argument(options.parse_fraction)
share = _argument(options.parse_share)
amount = _argument(options.parse_amount)
temperature = _argument(options.parse_temperature)


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


def add_provider(p: Any, batch: bool = False) -> None:
    """``--provider``, for ``judge`` and ``batch prepare``: its choices, default and help read
    from the registry of judge providers."""
    from evalstream._judge.providers import DEFAULT, NAMES, REGISTRY

    if batch:
        said = "; ".join(f"{q.name}: {q.batch_speaks}" for q in REGISTRY.values())
    else:
        said = "the API: " + " or ".join(q.speaks for q in REGISTRY.values())
    p.add_argument("--provider", choices=NAMES, default=DEFAULT,
                   help=f"{said} (default {DEFAULT})")


def key_variables() -> str:
    """The providers' key variables, as the help of ``--api-key-env`` names its default."""
    from evalstream._judge.providers import REGISTRY

    return " or ".join(q.key_env for q in REGISTRY.values())


def public_urls() -> str:
    """The providers' public endpoints, as the help of ``--base-url`` names its default."""
    from evalstream._judge.providers import REGISTRY

    return " or ".join(q.base_url for q in REGISTRY.values())


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
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    # On stderr: rich's own default is stdout, where the bar was drawn only when stdout was
    # a terminal too (never with the output redirected, as `view` is often run), and then
    # among the records of `build ... -`.
    return Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), transient=True, console=Console(stderr=True))


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
