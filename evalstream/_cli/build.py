"""``evalstream build`` and ``evalstream validate``: the command lines of the build pipeline."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from evalstream._cli.common import (
    add_engine,
    add_force,
    add_reading,
    add_tokenizer,
    helps,
    path,
    positive,
    progress_bar,
)
from evalstream.errors import EXIT_PIPE


def register(sub: Any) -> None:
    """Add the ``build`` and ``validate`` subcommands."""
    b = sub.add_parser(
        "build", help="write one judge state per applicable (case, rubric)",
        **helps("Stream an evaluation dataset and write, for every case and every rubric that "
                "applies, the judge state and its field-exposure record. Rejects go to "
                "OUTPUT.rejects.jsonl (only when a line is rejected) and the run report to "
                "OUTPUT.report.json, unless --rejects/--report say otherwise. Several inputs "
                "(paths, globs, URLs such as s3://...) are read in order as one; with "
                "--engine dask the work runs on a Dask cluster and OUTPUT may be a URL or a "
                "directory of parts (a name ending in /), byte-identical either way.",
                ["evalstream build cases.jsonl states.jsonl",
                 "evalstream build shards/*.jsonl -o states.jsonl",
                 "evalstream build cases.jsonl states.jsonl --rubrics builtin --rubrics "
                 "mine.toml --max-tokens 16000",
                 "evalstream build big.jsonl states.jsonl.zst --workers 2",
                 "evalstream build 'shards/*.jsonl' states/ --engine dask --scheduler "
                 "tcp://10.0.0.5:8786"],
                [(0, "clean"), (1, "finished, some lines rejected (or no line is a case)")]))
    # `build IN OUT` as documented, or `build IN... -o OUT`: with a shell glob the output
    # is then never one of the inputs (and a file that holds cases is refused anyway).
    b.add_argument("paths", type=path, nargs="+", metavar="INPUT... OUTPUT",
                   help="cases: a .jsonl path, .gz or .zst, or - for stdin; several paths, "
                        "globs or URLs (s3://...) are read in order as one input; the last "
                        "path is the output (judge states: a .jsonl path, .gz or .zst, or - "
                        "for stdout; with --engine dask also a URL, or a directory of parts, "
                        "a name ending in /) unless -o gives it")
    b.add_argument("-o", "--output", type=path, metavar="OUTPUT", dest="output_option",
                   help="the output; every path before it is then an input")
    b.add_argument("--rubrics", type=path, action="append", default=[], metavar="FILE",
                   help="a TOML rubric file; repeatable; replaces the built-in rubrics "
                        "(`--rubrics builtin --rubrics mine.toml` adds to them)")
    b.add_argument("--max-tokens", type=positive, default=32_000, metavar="N",
                   help="the judge's budget for state plus longest question (default 32000)")
    add_tokenizer(b)
    b.add_argument("--exact-tokens", action="store_true",
                   help="count every judge state exactly (records then carry exact counts); "
                        "by default only states whose UTF-8 bytes exceed the budget are "
                        "counted, and the others carry their byte sizes, an upper bound")
    b.add_argument("--workers", type=positive, default=1, metavar="N",
                   help="worker processes for a plain input file (default 1); output is "
                        "byte-identical for any N")
    add_engine(b)
    add_reading(b)
    add_force(b)
    b.set_defaults(func=_build)

    v = sub.add_parser(
        "validate", help="check the cases only; write nothing unless asked",
        **helps("Read and decode a dataset as build does, and print the first problems with "
                "the totals. Nothing is written unless asked: --rejects FILE for every reject, "
                "--report FILE for the run report (no default paths). Several inputs (paths, "
                "globs, URLs) are read in order as one; --engine dask runs on a Dask cluster.",
                ["evalstream validate cases.jsonl",
                 "evalstream validate cases.jsonl --format json > rejects.jsonl",
                 "cat cases.jsonl | evalstream validate - --rejects rejects.jsonl",
                 "evalstream validate 'shards/*.jsonl' --engine dask"],
                [(0, "clean"), (1, "some lines rejected (or no line is a case)")]))
    v.add_argument("input", type=path, nargs="+",
                   help="cases: a .jsonl path, .gz or .zst, or - for stdin; several paths, "
                        "globs or URLs are read in order as one input")
    v.add_argument("--format", choices=["table", "json"], default="table",
                   help="table: the first problems as a table on stdout; json: every reject as "
                        "JSONL on stdout (default table)")
    v.add_argument("--workers", type=positive, default=1, metavar="N",
                   help="worker processes for a plain input file, or the size of a local Dask "
                        "cluster (default 1)")
    add_engine(v)
    add_reading(v)
    add_force(v)
    v.set_defaults(func=_validate)



def _run(args: argparse.Namespace, output: str | None) -> int:
    from evalstream._build.run import Options, run
    from evalstream._render.summary import render_summary

    opts = Options(
        input=" ".join(args.input), inputs=args.input if len(args.input) > 1 else [],
        engine=args.engine, scheduler=args.scheduler, output=output, rejects=args.rejects,
        report=args.report,
        rubric_files=getattr(args, "rubrics", []), max_tokens=getattr(args, "max_tokens", 32_000),
        tokenizer=getattr(args, "tokenizer", "o200k_base"),
        exact_tokens=getattr(args, "exact_tokens", False),
        max_line_bytes=args.max_line_bytes, allow_unknown_fields=args.allow_unknown_fields,
        workers=getattr(args, "workers", 1), force=args.force)
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
    if report.exit_code == EXIT_PIPE:
        # The reader of stdout has gone (`| head`): end quietly, as Unix tools do, and keep
        # the interpreter from complaining when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return report.exit_code
    if output is None and not json_rejects:
        from evalstream._render.validate_view import print_problems

        print_problems(report, first, sys.stdout)
    elif not args.quiet:
        render_summary(report, sys.stderr)
    return report.exit_code


def _build(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if args.output_option is not None:
        args.input, output = paths, args.output_option
    elif len(paths) < 2:
        from evalstream.errors import UsageError

        raise UsageError("build needs an input and an output: `evalstream build IN OUT` or "
                         "`evalstream build IN... -o OUT`.")
    else:
        args.input, output = paths[:-1], paths[-1]
    return _run(args, output)


def _validate(args: argparse.Namespace) -> int:
    return _run(args, None)
