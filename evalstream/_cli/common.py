"""What the commands share: argument types that refuse bad values with a usage error (the
rules of ``evalstream._options``, shared with the Python API), the options a user gave
(``given``: the parser adds no defaults, so the API's apply), the API's defaults as the help
shows them, the options several commands take, and the progress bar. Only argparse, the API's
signatures and evalstream._options are imported here (and the judge providers' registry,
light to import, where the judge's options are added)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from evalstream import _options as options
from evalstream.errors import UsageError

MAX_COUNT = options.MAX_COUNT
TOKENIZERS = options.TOKENIZERS
T = TypeVar("T")
# What a parsed command line holds besides the options of the API function it calls.
NOT_OPTIONS = {"func", "command", "batch_command", "quiet"}


def given(args: argparse.Namespace, *also: str) -> dict[str, Any]:
    """The options the user gave, by the API's names (each option's ``dest``): the parsers
    are made with ``argument_default=SUPPRESS`` (``helps``), so an option not given is absent
    and the API function's default applies. ``also``: the names the command reads itself."""
    return {name: value for name, value in vars(args).items()
            if name not in NOT_OPTIONS and name not in also}


def default(function: Callable[..., Any], name: str) -> str:
    """The default of the API function's option ``name``, as the help shows it (sizes in
    MiB or GiB): read from the function's signature, never written again here."""
    value = (function.__kwdefaults__ or {})[name]
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1 << 20:
        for unit, shift in (("GiB", 30), ("MiB", 20)):
            if value % (1 << shift) == 0:
                return f"{value >> shift}{unit}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


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


def add_tokenizer(p: Any, function: Callable[..., Any], what: str) -> None:
    """``--tokenizer``, for every command that counts tokens (``what``: the counts it
    makes); the default is ``function``'s."""
    p.add_argument("--tokenizer", choices=TOKENIZERS, metavar="NAME",
                   help=f"the judge's encoding, for {what}: o200k_base (GPT-4o, GPT-4.1, "
                        "o-series, GPT-5) or cl100k_base (GPT-4, GPT-3.5); default "
                        f"{default(function, 'tokenizer')}")


def add_judge(p: Any, function: Callable[..., Any], base_url: str,
              batch: bool = False) -> None:
    """The judge's options, for ``judge`` and ``batch prepare`` (``function``: the API
    function, whose defaults the help shows): the model, ``--provider`` (its choices and
    help read from the registry of judge providers), the base URL (``base_url``: what its
    help says of it), the temperature and the answer's token limit."""
    from evalstream._judge.providers import NAMES, REGISTRY

    if batch:
        p.add_argument("--model", type=text, required=True, help="the model, e.g. gpt-4.1-mini")
    else:  # judge: or a jury file's jurors
        p.add_argument("--model", type=text,
                       help="the model, e.g. gpt-4.1-mini (required unless --jury)")
    if batch:
        said = "; ".join(f"{q.name}: {q.batch_speaks}" for q in REGISTRY.values())
    else:
        said = "the API: " + " or ".join(q.speaks for q in REGISTRY.values())
    p.add_argument("--provider", choices=NAMES,
                   help=f"{said} (default {default(function, 'provider')})")
    p.add_argument("--base-url", metavar="URL", help=base_url)
    p.add_argument("--temperature", type=temperature, metavar="T",
                   help=f"sampling temperature (default {default(function, 'temperature')}); "
                        "`none` sends none, for models that accept only their default")
    p.add_argument("--max-output-tokens", type=positive, metavar="N",
                   help=f"the answer's token limit (default "
                        f"{default(function, 'max_output_tokens')}); a longer answer is "
                        "unscored (truncated)")


def add_output_bound(p: Any, function: Callable[..., Any]) -> None:
    """``--max-output-tokens`` of the commands that plan the judge's budget (build, stats,
    view): the judge's answer bound, held back in ``--max-tokens``."""
    p.add_argument("--max-output-tokens", type=positive, metavar="N",
                   help="the judge's bound on its answer (judge's --max-output-tokens), held "
                        f"back in the budget (default {default(function, 'max_output_tokens')})")


def add_store(p: Any, said: str) -> None:
    """``--store`` (``--cache``, its name before issue 24, still read): the answer store."""
    p.add_argument("--store", "--cache", dest="store", type=path, metavar="FILE", help=said)


def add_max_line_bytes(p: Any, function: Callable[..., Any], lines: str = "lines") -> None:
    """``--max-line-bytes``, for every command that reads lines; the default is
    ``function``'s."""
    p.add_argument("--max-line-bytes", type=size, metavar="N",
                   help=f"reject longer {lines} without reading them whole (default "
                        f"{default(function, 'max_line_bytes')})")


def with_progress(quiet: bool, label: str, call: Callable[[Any], T]) -> T:
    """``call(on_progress)``, with a progress bar (bytes, speed) on stderr when it is a
    terminal and not ``quiet`` (``on_progress`` None otherwise)."""
    bar = progress_bar(quiet)
    if bar is None:
        return call(None)
    with bar:
        task = bar.add_task(label, total=None)
        return call(lambda done, total: bar.update(task, completed=done, total=total))


def add_settings(p: Any) -> None:
    """The provider's settings beyond the shared ones, for ``judge`` and ``batch prepare``:
    each provider says which it takes (a setting given to another is refused with a
    sentence) and checks their values. The API's default of each is None or "": the
    provider's own, which the help names."""
    from evalstream._judge.providers import AZURE_API_VERSION as API_VERSION
    from evalstream._judge.providers import BEDROCK_REGION as DEFAULT_REGION
    from evalstream._judge.providers import REGISTRY

    formats = list(dict.fromkeys(f for q in REGISTRY.values() for f in q.response_formats))
    p.add_argument("--response-format", choices=formats, metavar="FORMAT",
                   help=f"how the answer is asked for: {', '.join(formats)} (default: the "
                        "provider's structured output, json_schema; json_object: llama.cpp's "
                        "dialect, the schema beside {\"type\": \"json_object\"}; none: the "
                        "instruction alone); the answer is checked the same way whatever")
    p.add_argument("--reasoning-effort", type=text, metavar="LEVEL",
                   help="OpenAI and Azure reasoning models: none, minimal, low, medium or "
                        "high (o-series and GPT-5 are sent no temperature either way)")
    p.add_argument("--thinking-budget", type=positive, metavar="N",
                   help="Anthropic (also on Bedrock) extended thinking, Gemini thinking: the "
                        "tokens the model may think for, within --max-output-tokens")
    p.add_argument("--deployment", type=text, metavar="NAME",
                   help="Azure: the deployment (default: named as --model)")
    p.add_argument("--api-version", type=text, metavar="VERSION",
                   help=f"Azure: the api-version (default {API_VERSION})")
    p.add_argument("--region", type=text, metavar="REGION",
                   help="Bedrock: the AWS region (default: the one a --base-url of "
                        "bedrock-runtime.REGION.amazonaws.com names, else AWS_REGION, else "
                        f"AWS_DEFAULT_REGION, else {DEFAULT_REGION})")
    logprobs = ", ".join(name for name, q in REGISTRY.items() if q.logprobs)
    p.add_argument("--confidence", action="store_true",
                   help="how sure the judge was: each verdict's `confidence` {pass, fail, na}, "
                        f"read from the status token's log probabilities ({logprobs}: asked "
                        "for, which changes the requests and so the store keys), or the share "
                        "of a panel's votes (--samples, --jury); the report counts how each was "
                        "read")


def key_variables() -> str:
    """The providers' key variables, as the help of ``--api-key-env`` names its default."""
    from evalstream._judge.providers import REGISTRY

    return " or ".join(q.key_env for q in REGISTRY.values())


def public_urls() -> str:
    """The providers' public endpoints, as the help of ``--base-url`` names its default (a
    provider without one, Azure, says so when it is chosen without ``--base-url``)."""
    from evalstream._judge.providers import REGISTRY

    return " or ".join(q.base_url for q in REGISTRY.values() if q.base_url)


def add_reading(p: argparse.ArgumentParser, function: Callable[..., Any]) -> None:
    """The options of every command that reads cases as build does (``function``: the API
    function, whose defaults the help shows)."""
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="where rejected lines go (JSONL); build: next to the output "
                        "(states.rejects.jsonl) when a line is rejected; validate: none")
    p.add_argument("--report", type=path, metavar="FILE",
                   help="where the run report goes (JSON); build: next to the output "
                        "(states.report.json); validate: none")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know instead of rejecting the line")
    add_max_line_bytes(p, function)
    add_quiet(p, "no progress bar and no summary on stderr")


def add_quiet(p: Any, said: str) -> None:
    """``-q``: what the command line shows, never what the run does."""
    p.add_argument("-q", "--quiet", action="store_true", default=False, help=said)


def add_engine(p: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--scheduler``: where the work runs."""
    p.add_argument("--engine", choices=["local", "dask"],
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
    """``add_parser`` keywords for a command: its help (the description, wrapped; two or three
    examples; its exit codes, the command's own first, then the common ones), and no default
    for an option not given (``given``: the API's apply)."""
    import textwrap

    lines = ["examples:", *(f"  {example}" for example in examples), "", "exit codes:"]
    for code, meaning in [*codes, *COMMON_CODES]:
        lines += textwrap.wrap(f"{code:>5}  {meaning}", 88, subsequent_indent=" " * 7)
    return {"description": textwrap.fill(description, 88),
            "epilog": "\n".join(lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter,
            "argument_default": argparse.SUPPRESS}
