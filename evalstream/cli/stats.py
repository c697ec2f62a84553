"""``evalstream stats``: the command line, the output styles, and the tables they share.

Only argparse is imported at the top: ``python -m evalstream --help`` must stay cheap and
``build``/``validate`` must never import polars. The tables are built in
``evalstream.render.stats``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from evalstream.cli.common import positive, size

if TYPE_CHECKING:
    from evalstream.checks.report import RunReport
    from evalstream.dataset.stats import DatasetStats

FORMATS = ("table", "json", "markdown")
REPORT_BYTES = 64 << 20  # a .json input larger than this is not read as a report
TEXT_WIDTH = 100  # the width of a table written to a file with -o


def register(subparsers: Any) -> None:
    """Add the ``stats`` subcommand."""
    p = subparsers.add_parser(
        "stats", help="report what a dataset holds: groups, sizes, labels, checks, metadata",
        description="Read a dataset as build does and report cases per group, which fields "
                    "they carry, their sizes, the expected labels per rubric, the checks build "
                    "would write or skip, and the metadata keys. Given a run report (a .json "
                    "file written by build or validate) or a stats JSON, render it instead.",
        epilog="Exit codes: 0 clean, 1 the dataset had rejected lines, 2 usage or I/O error, "
               "130 interrupted.")
    p.add_argument("input", help="cases (.jsonl, .gz, .zst, or - for stdin), or a run report "
                                 "(.report.json) or stats JSON to render")
    p.add_argument("--by", metavar="KEYS",
                   help="metadata keys to group by, comma-separated; dots reach nested "
                        "metadata (default: scenario)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (terminal), json (stable shape, for scripts and diffs) or "
                        "markdown (for a pull request); default table")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the report here instead of stdout (atomically)")
    p.add_argument("--html", metavar="FILE",
                   help="also write a self-contained HTML page with charts")
    p.add_argument("--rubrics", action="append", metavar="FILE",
                   help="a TOML rubric file, as in build; repeatable; `builtin` names the "
                        "built-in set (the default)")
    p.add_argument("--max-tokens", type=positive, metavar="N",
                   help="the judge's budget, as in build (default 32000)")
    p.add_argument("--rejects", metavar="FILE",
                   help="also write the rejected lines here (JSONL); by default they are only "
                        "counted")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know, as in build")
    p.add_argument("--max-line-bytes", type=size, metavar="N",
                   help="reject longer lines without reading them whole (default 256MiB)")
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes for a plain input file over 128 MiB (default: the "
                        "CPUs available, at most 8); the figures are the same for any N")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _usage(message: str) -> Exception:
    from evalstream.errors import UsageError

    return UsageError(message)


def _same(a: str | None, b: str | None) -> bool:
    if a is None or b is None or "-" in (a, b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def run(args: argparse.Namespace) -> int:
    """Run ``stats``; return the exit code (1 when the dataset had rejected lines)."""
    paths = [("input", args.input), ("output", args.output), ("html", args.html),
             ("rejects", args.rejects)]
    for i, (name_a, a) in enumerate(paths):
        for name_b, b in paths[i + 1:]:
            if _same(a, b) or (a is not None and a == b and a != "-"):
                raise _usage(f"the {name_a} and {name_b} paths are the same file ({a}); "
                             "choose a different name.")
    to_stdout = [name for name, path in (("the report", args.output or "-"),
                                          ("the HTML page", args.html),
                                          ("the rejects", args.rejects)) if path == "-"]
    if len(to_stdout) > 1:
        raise _usage(f"{' and '.join(to_stdout)} cannot "
                     f"{'both' if len(to_stdout) == 2 else 'all'} go to stdout; give -o FILE, "
                     "--html FILE or --rejects FILE.")
    loaded = _load_rendered(args.input)
    if loaded is not None:
        dataset_only = [flag for flag, value in (
            ("--by", args.by), ("--rubrics", args.rubrics), ("--max-tokens", args.max_tokens),
            ("--rejects", args.rejects), ("--max-line-bytes", args.max_line_bytes),
            ("--workers", args.workers),
            ("--allow-unknown-fields", args.allow_unknown_fields or None)) if value is not None]
        if dataset_only:
            raise _usage(f"{args.input} is already a report; {', '.join(dataset_only)} apply "
                         "to datasets only.")
    # The targets are created first: a folder that cannot be written to fails at once, not
    # after the whole dataset was read. Nothing appears under their names until the end.
    from evalstream.files.outputs import AtomicOutput

    page = AtomicOutput(args.html) if args.html else None
    report = None
    try:
        if not (args.format == "table" and args.output in (None, "-")):
            report = AtomicOutput(args.output or "-")
        result: Any = loaded if loaded is not None else _collect(args)
        if page is not None:
            from evalstream.render.stats_html import page as html_page

            page.write(html_page(result).encode())
        if report is None:
            from evalstream.render.stats import blocks
            from evalstream.render.tables import print_blocks

            print_blocks(blocks(result), sys.stdout)
        else:
            report.write(render(result, args.format))
            report.commit()
        if page is not None:
            page.commit()
    except BaseException:
        for target in (page, report):
            if target is not None:
                target.abort()
        raise
    return _exit_code(result)


def _exit_code(result: DatasetStats | RunReport) -> int:
    from evalstream.dataset.stats import DatasetStats

    if isinstance(result, DatasetStats):
        return 1 if result.overview.rejected else 0
    return 1 if result.counts.rejected else 0


def _load_rendered(path: str) -> DatasetStats | RunReport | None:
    """The run report or stats JSON in ``path``, or None when it is a dataset."""
    if path == "-" or not path.endswith(".json"):
        return None
    import msgspec

    from evalstream.checks.report import RunReport
    from evalstream.dataset.stats import DatasetStats
    from evalstream.files.lines import InputError

    try:
        with open(path, "rb") as f:
            head = f.read(REPORT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(head) > REPORT_BYTES:
        return None
    try:
        return msgspec.json.decode(head, type=DatasetStats)
    except msgspec.DecodeError:
        pass
    try:
        return msgspec.json.decode(head, type=RunReport)
    except msgspec.DecodeError:
        return None


def _collect(args: argparse.Namespace) -> DatasetStats:
    from evalstream.dataset.stats import StatsOptions, collect, parse_by

    opts = StatsOptions(input=args.input, by=parse_by(args.by) if args.by else ["scenario"],
                        rubric_files=args.rubrics or [], rejects=args.rejects,
                        allow_unknown_fields=args.allow_unknown_fields, workers=args.workers)
    if args.max_tokens is not None:
        opts.max_tokens = args.max_tokens
    if args.max_line_bytes is not None:
        opts.max_line_bytes = args.max_line_bytes
    if args.quiet or not sys.stderr.isatty():
        return collect(opts)
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), transient=True) as progress:
        task = progress.add_task("stats", total=None)
        return collect(opts, lambda done, total: progress.update(task, completed=done,
                                                                 total=total))


def render(result: DatasetStats | RunReport, fmt: str, width: int = TEXT_WIDTH) -> bytes:
    """The report as bytes in one of FORMATS (a table as plain text ``width`` wide)."""
    if fmt == "json":
        import msgspec

        return msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n"
    from evalstream.render.stats import blocks
    from evalstream.render.tables import render_format

    return render_format(blocks(result), fmt, width)


