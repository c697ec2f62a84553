"""``evalstream build`` and ``evalstream validate``: the command lines of the build pipeline
(``evalstream.build`` and ``evalstream.validate`` do the work)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import evalstream
from evalstream._cli.common import (
    add_engine,
    add_force,
    add_output_bound,
    add_reading,
    add_tokenizer,
    default,
    given,
    helps,
    path,
    positive,
    with_progress,
)
from evalstream.errors import EXIT_PIPE, ReaderGone


def register(sub: Any) -> None:
    """Add the ``build`` and ``validate`` subcommands."""
    b = sub.add_parser(
        "build",
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
                 "evalstream build run-a.jsonl pairs.jsonl --pair-with run-b.jsonl --rubrics "
                 "pairwise.toml",
                 "evalstream build 'shards/*.jsonl' states/ --engine dask --scheduler "
                 "tcp://10.0.0.5:8786"],
                [(0, "clean"), (1, "finished, some lines rejected (or no line is a case)")]),
        # Written out: argparse would render the one positional of inputs and output as
        # `INPUT... OUTPUT [INPUT... OUTPUT ...]`, as if build took pairs of them.
        usage="%(prog)s [options] INPUT [INPUT ...] OUTPUT\n"
              "       %(prog)s [options] INPUT [INPUT ...] -o OUTPUT")
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
    b.add_argument("--rubrics", dest="rubric_files", type=path, action="append", metavar="FILE",
                   help="a TOML rubric file; repeatable; replaces the built-in rubrics "
                        "(`--rubrics builtin --rubrics mine.toml` adds to them)")
    b.add_argument("--pair-with", type=path, metavar="RUN_B",
                   help="run B's cases (a .jsonl path, .gz, .zst or -): write each pairwise "
                        "rubric's state of every case id in both runs, in both orders (the "
                        "input's response first, then RUN_B's), for judge to compare; cases "
                        "in one run only, or whose shared fields differ, are counted and "
                        "listed in the report, never judged")
    b.add_argument("--max-tokens", type=positive, metavar="N",
                   help="the judge model's context: every judge request (state, longest "
                        "question and answer instruction, framing) plus the answer's bound "
                        "must fit (default "
                        f"{default(evalstream.build, 'max_tokens')})")
    add_output_bound(b, evalstream.build)
    add_tokenizer(b, evalstream.build, "every token count")
    b.add_argument("--exact-tokens", action="store_true",
                   help="count every judge state exactly (records then carry exact counts); "
                        "by default only states whose UTF-8 bytes exceed the budget are "
                        "counted, and the others carry their byte sizes, an upper bound")
    b.add_argument("--workers", type=positive, metavar="N",
                   help=f"worker processes for a plain input file (default "
                        f"{default(evalstream.build, 'workers')}); output is byte-identical "
                        "for any N")
    add_engine(b)
    add_reading(b, evalstream.build)
    add_force(b)
    b.set_defaults(func=_build)

    v = sub.add_parser(
        "validate",
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
    v.add_argument("--format", choices=["table", "json"],
                   help="table: the first problems as a table on stdout; json: every reject as "
                        "JSONL on stdout (default table)")
    v.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes for a plain input file, or the size of a local Dask "
                        f"cluster (default {default(evalstream.validate, 'workers')})")
    add_engine(v)
    add_reading(v, evalstream.validate)
    add_force(v)
    v.set_defaults(func=_validate)



def _build(args: argparse.Namespace) -> int:
    options = given(args, "paths", "output_option")
    paths = list(args.paths)
    if "output_option" in args:
        inputs, output = paths, args.output_option
    elif len(paths) < 2:
        from evalstream.errors import UsageError

        raise UsageError("build needs an input and an output: `evalstream build IN OUT` or "
                         "`evalstream build IN... -o OUT`.")
    else:
        inputs, output = paths[:-1], paths[-1]
    report = with_progress(args.quiet, "build", lambda on_progress: evalstream.build(
        inputs, output, on_progress=on_progress, **options))
    return _shown(report, args.quiet)


def _validate(args: argparse.Namespace) -> int:
    # The command line shows the problems (or every reject, --format json) on stdout; the
    # API shows nothing unless asked.
    options = {"format": "table", **given(args, "input")}
    report = with_progress(args.quiet, "validate", lambda on_progress: evalstream.validate(
        args.input, on_progress=on_progress, **options))
    return _shown(report, args.quiet or options["format"] == "table")


def _shown(report: evalstream.RunReport, quiet: bool) -> int:
    """The run's summary on stderr (not ``quiet``); its exit code."""
    if report.exit_code == EXIT_PIPE:
        raise ReaderGone("the reader of standard output went away")  # | head: end quietly
    if not quiet:
        from evalstream._render.summary import render_summary

        render_summary(report, sys.stderr)
    return report.exit_code
