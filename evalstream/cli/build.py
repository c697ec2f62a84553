"""``evalstream build`` and ``evalstream validate``: the command lines of the build pipeline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evalstream.cli.common import add_reading, positive, progress_bar


def register(sub: Any) -> None:
    """Add the ``build`` and ``validate`` subcommands."""
    b = sub.add_parser("build", help="write one judge state per applicable (case, rubric)",
                       description="Stream an evaluation dataset and write, for every case and "
                                   "every rubric that applies, the judge state and its "
                                   "field-exposure record.")
    b.add_argument("input", help="cases: a .jsonl path, .gz or .zst, or - for stdin")
    b.add_argument("output", help="judge states: a .jsonl path, .gz or .zst, or - for stdout")
    b.add_argument("--rubrics", action="append", default=[], metavar="FILE",
                   help="a TOML rubric file; repeatable; replaces the built-in rubrics "
                        "(`--rubrics builtin --rubrics mine.toml` adds to them)")
    b.add_argument("--max-tokens", type=positive, default=32_000, metavar="N",
                   help="the judge's budget for state plus longest question (default 32000)")
    b.add_argument("--workers", type=positive, default=1, metavar="N",
                   help="worker processes for a plain input file (default 1); output is "
                        "byte-identical for any N")
    add_reading(b)
    b.set_defaults(func=_build)

    v = sub.add_parser("validate", help="check the cases only: write rejects and a report",
                       description="Read and decode a dataset as build does, writing only the "
                                   "rejects and the report.")
    v.add_argument("input", help="cases: a .jsonl path, .gz or .zst, or - for stdin")
    v.add_argument("--format", choices=["table", "json"], default="table",
                   help="table: the first problems as a table on stdout; json: every reject as "
                        "JSONL on stdout (default table)")
    add_reading(v)
    v.set_defaults(func=_validate)



def _run(args: argparse.Namespace, output: str | None) -> int:
    from evalstream.pipeline.run import Options, run
    from evalstream.render.summary import render_summary

    opts = Options(
        input=args.input, output=output, rejects=args.rejects, report=args.report,
        rubric_files=getattr(args, "rubrics", []), max_tokens=getattr(args, "max_tokens", 32_000),
        max_line_bytes=args.max_line_bytes, allow_unknown_fields=args.allow_unknown_fields,
        workers=getattr(args, "workers", 1))
    json_rejects = getattr(args, "format", None) == "json"
    if json_rejects:
        if opts.rejects not in (None, "-"):
            from evalstream.errors import UsageError

            raise UsageError("--format json writes the rejects to stdout; drop --rejects.")
        opts.rejects = "-"
    progress = progress_bar(args.quiet)
    if progress is None:
        report, first = run(opts)
    else:
        with progress:
            task = progress.add_task(args.command, total=None)
            report, first = run(opts, lambda done, total: progress.update(
                task, completed=done, total=total))
    if output is None and not json_rejects:
        from evalstream.render.validate_view import print_problems

        print_problems(report, first, sys.stdout)
    elif not args.quiet:
        render_summary(report, sys.stderr)
    return report.exit_code


def _build(args: argparse.Namespace) -> int:
    return _run(args, args.output)


def _validate(args: argparse.Namespace) -> int:
    return _run(args, None)
