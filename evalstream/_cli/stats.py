"""``evalstream stats``: the command line, the output styles, and the tables they share.

Only argparse is imported at the top: ``python -m evalstream --help`` must stay cheap and
``build``/``validate`` must never import polars. The tables are built in
``evalstream._render.stats``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from evalstream._cli.common import (
    TOKENIZERS,
    add_engine,
    add_force,
    helps,
    path,
    positive,
    progress_bar,
    size,
    text,
)

if TYPE_CHECKING:
    from evalstream._checks.report import RunReport
    from evalstream._stats.stats import DatasetStats

# The stats sections (render.stats.SECTIONS, here to keep --help cheap: a test keeps them equal).
SECTIONS = ("overview", "groups", "sizes", "labels", "coverage", "checks", "metadata")
FORMATS = ("table", "json", "markdown")
REPORT_BYTES = 64 << 20  # a .json input larger than this is not read as a report
TEXT_WIDTH = 100  # the width of a table written to a file with -o


def register(subparsers: Any) -> None:
    """Add the ``stats`` subcommand."""
    p = subparsers.add_parser(
        "stats", help="report what a dataset holds: groups, sizes, labels, checks, metadata",
        **helps(
            "Read a dataset as build does and report cases per group, which fields they carry, "
            "their sizes, the expected labels per rubric, the checks build would write or skip, "
            "and the metadata keys. Given a run report (a .json file written by build or "
            "validate) or a stats JSON, render it instead. Several inputs (paths, globs, URLs) "
            "are read in order as one; --engine dask reads them on a Dask cluster, with the "
            "same figures.",
            ["evalstream stats cases.jsonl --by scenario,split",
             "evalstream stats cases.jsonl --format json -o stats.json --html stats.html",
             "evalstream stats states.report.json",
             "evalstream stats 'data/shard-*.jsonl' --engine dask --scheduler "
             "tcp://127.0.0.1:8786 --format json -o stats.json"],
            [(0, "clean"), (1, "the dataset had rejected lines, or no line is a case")]))
    p.add_argument("input", type=path, nargs="+",
                   help="cases (.jsonl, .gz, .zst, or - for stdin; several paths, globs or "
                        "URLs are read in order as one input), or a run report (.report.json) "
                        "or stats JSON to render")
    p.add_argument("--by", type=text, metavar="KEYS",
                   help="metadata keys to group by, comma-separated; dots reach nested "
                        "metadata (default: scenario)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (terminal), json (stable shape, for scripts and diffs) or "
                        "markdown (for a pull request); default table")
    p.add_argument("-o", "--output", type=path, metavar="FILE",
                   help="write the report here instead of stdout (atomically)")
    p.add_argument("--html", type=path, metavar="FILE",
                   help="also write a self-contained HTML page with charts")
    p.add_argument("--rubrics", type=path, action="append", metavar="FILE",
                   help="a TOML rubric file, as in build; repeatable; `builtin` names the "
                        "built-in set (the default)")
    p.add_argument("--max-tokens", type=positive, metavar="N",
                   help="the judge's budget, as in build (default 32000)")
    p.add_argument("--tokenizer", choices=TOKENIZERS,
                   help="the judge's encoding for every token count (all exact): o200k_base "
                        "(GPT-4o, GPT-4.1, o-series, GPT-5) or cl100k_base (GPT-4, GPT-3.5); "
                        "default o200k_base")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--full", action="store_true",
                       help="the table format: every section (by default one screen: groups, "
                            "labels per rubric, checks and the first warnings); markdown and "
                            "json are always complete")
    shown.add_argument("--section", action="append", choices=SECTIONS, metavar="NAME",
                       help=f"the table format: only these sections (repeatable): "
                            f"{', '.join(SECTIONS)}")
    add_force(p)
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="also write the rejected lines here (JSONL); by default they are only "
                        "counted")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know, as in build")
    p.add_argument("--max-line-bytes", type=size, metavar="N",
                   help="reject longer lines without reading them whole (default 256MiB)")
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes for a plain input file over 128 MiB (default: the "
                        "CPUs available, at most 8), or the size of a local Dask cluster; the "
                        "figures are the same for any N")
    add_engine(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _usage(message: str) -> Exception:
    from evalstream.errors import UsageError

    return UsageError(message)


def run(args: argparse.Namespace) -> int:
    """Run ``stats``; return the exit code (1 when the dataset had rejected lines)."""
    from evalstream._files.transaction import Target, Transaction

    arguments = args.input
    args.input = " ".join(arguments)
    args.inputs = arguments if len(arguments) > 1 else []
    targets = Transaction(
        [*(("input", a) for a in arguments), *(("rubrics", f) for f in args.rubrics or [])],
        [Target("output", args.output or "-", "json" if args.format == "json" else "text"),
         Target("html", args.html, "html"), Target("rejects", args.rejects, "rejects")],
        args.force).check()
    loaded = _load_rendered(args.input) if not args.inputs else None
    if loaded is not None:
        dataset_only = [flag for flag, value in (
            ("--by", args.by), ("--rubrics", args.rubrics), ("--max-tokens", args.max_tokens),
            ("--tokenizer", args.tokenizer),
            ("--rejects", args.rejects), ("--max-line-bytes", args.max_line_bytes),
            ("--workers", args.workers), ("--scheduler", args.scheduler),
            ("--engine", args.engine if args.engine != "local" else None),
            ("--allow-unknown-fields", args.allow_unknown_fields or None)) if value is not None]
        if dataset_only:
            raise _usage(f"{args.input} is already a report; {', '.join(dataset_only)} apply "
                         "to datasets only.")
    # The targets are created first: a folder that cannot be written to fails at once, not
    # after the whole dataset was read. Nothing appears under their names until the end,
    # and then all of them (with the rejects) or none: the library commits them with its
    # rejects (they are handed over), a rendered report is committed here.
    with targets:
        page = targets.open("html") if args.html else None
        report = targets.open("output") \
            if not (args.format == "table" and args.output in (None, "-")) else None

        def write(result: Any) -> list[Any]:
            if page is not None:
                from evalstream._render.stats_html import page as html_page

                page.write(html_page(result).encode())
            if report is not None:
                report.write(render(result, args.format, sections=_sections(args)))
            return [out for out in (report, page) if out is not None]

        if loaded is not None:
            result: Any = loaded
            _rendered(args.input, write, loaded)
        else:
            result = _collect(args, lambda stats: targets.hand_over(write(stats)))
    if report is None:
        from evalstream._render.stats import blocks
        from evalstream._render.tables import print_blocks

        print_blocks(blocks(result, _sections(args)), sys.stdout)
    return _exit_code(result)


def _rendered(path: str, write: Any, loaded: Any) -> None:
    """``write(loaded)`` for a report read from a file: one that evalstream cannot render is
    a usage error naming the file, never an internal error."""
    from evalstream._stats.stats import DatasetStats, check_shape

    try:
        if isinstance(loaded, DatasetStats):
            check_shape(loaded)
        outputs: list[Any] = write(loaded)
        if not outputs:  # the table on the terminal: rendered here first, to be sure
            from evalstream._render.stats import blocks

            blocks(loaded)
    except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError) as exc:
        raise _usage(f"{path} is not a report evalstream can render ({exc}); render the "
                     "stats JSON or run report evalstream wrote, or run stats on the "
                     "dataset again.") from None


def _exit_code(result: DatasetStats | RunReport) -> int:
    from evalstream._stats.stats import DatasetStats

    if isinstance(result, DatasetStats):
        return 1 if result.overview.rejected else 0
    return 1 if result.counts.rejected else 0


def _load_rendered(path: str) -> DatasetStats | RunReport | None:
    """The run report or stats JSON in ``path``, or None when it is a dataset."""
    if path == "-" or not path.endswith(".json"):
        return None
    import msgspec

    from evalstream._checks.report import RunReport
    from evalstream._files.lines import InputError
    from evalstream._stats.stats import SHAPE, DatasetStats

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
    shape = _shape(head)
    if shape is not None and shape != SHAPE:
        raise _usage(f"{path} is a stats JSON of shape {shape!r}, written by another version "
                     f"of evalstream (this one reads {SHAPE!r}); run stats on the dataset "
                     "again.")
    try:
        return msgspec.json.decode(head, type=RunReport)
    except msgspec.DecodeError:
        pass
    # Another command's JSON (agree, compare, judge, convert): say so, do not read it as cases.
    from evalstream.errors import WrongFileError

    try:
        other = msgspec.json.decode(head)
    except msgspec.DecodeError:
        return None
    if isinstance(other, dict) and isinstance(other.get("command"), str) and "evalstream" in other:
        raise WrongFileError(f"{path} is the JSON of `evalstream {other['command']}`, not cases, "
                             "a stats JSON or a build/validate report; stats reads and renders "
                             "those.")
    return None


def _shape(head: bytes) -> str | None:
    """The ``shape`` of a stats JSON of any version, or None."""
    import msgspec

    class Shaped(msgspec.Struct):
        shape: str

    try:
        shape = msgspec.json.decode(head, type=Shaped).shape
    except msgspec.DecodeError:
        return None
    return shape if shape.startswith("evalstream.stats/") else None


def _collect(args: argparse.Namespace, write: Any) -> DatasetStats:
    from evalstream._stats.stats import StatsOptions, collect, parse_by

    by = parse_by(args.by) if args.by is not None else ["scenario"]
    opts = StatsOptions(input=args.input, by=by,
                        rubric_files=args.rubrics or [], rejects=args.rejects,
                        allow_unknown_fields=args.allow_unknown_fields, workers=args.workers,
                        inputs=args.inputs, engine=args.engine, scheduler=args.scheduler,
                        force=args.force)
    if args.max_tokens is not None:
        opts.max_tokens = args.max_tokens
    if args.tokenizer is not None:
        opts.tokenizer = args.tokenizer
    if args.max_line_bytes is not None:
        opts.max_line_bytes = args.max_line_bytes
    progress = progress_bar(args.quiet)
    if progress is None:
        return collect(opts, also=write)
    with progress:
        task = progress.add_task("stats", total=None)
        return collect(opts, lambda done, total: progress.update(task, completed=done,
                                                                 total=total), write)


def _sections(args: argparse.Namespace) -> list[str] | None:
    """The sections of the table format: all (--full), those named, or the summary ([])."""
    if args.format != "table" or args.full:
        return None
    return args.section or []


def render(result: DatasetStats | RunReport, fmt: str, width: int = TEXT_WIDTH,
           sections: list[str] | None = None) -> bytes:
    """The report as bytes in one of FORMATS (a table as plain text ``width`` wide; only
    ``sections`` of a stats result: see ``render.stats.blocks``)."""
    if fmt == "json":
        import msgspec

        from evalstream._files.outputs import escape_line_breaks

        return escape_line_breaks(msgspec.json.format(msgspec.json.encode(result), indent=2)) \
            + b"\n"
    from evalstream._render.stats import blocks
    from evalstream._render.tables import render_format

    return render_format(blocks(result, sections), fmt, width)


