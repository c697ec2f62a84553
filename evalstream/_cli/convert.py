"""``evalstream convert``: the command line (``evalstream.convert`` does the work). Only
argparse and the API's signatures are imported at the top."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import evalstream
from evalstream._cli.common import (
    add_force,
    add_max_line_bytes,
    add_quiet,
    given,
    helps,
    path,
    text,
)


def register(subparsers: Any) -> None:
    """Add the ``convert`` subcommand."""

    p = subparsers.add_parser(
        "convert",
        **helps(
            "Convert OpenAI chat JSONL, OpenTelemetry traces (OTLP JSON with GenAI spans), a "
            "table (CSV, TSV, Parquet, a JSON array, JSONL), an inspect_ai eval log or a Hugging "
            "Face dataset on disk into evalstream cases that validate accepts; or another "
            "tool's judge (inspect_ai's model-graded scores, promptfoo's llm-rubric grades) "
            "into verdicts that agree, compare and view read. Rows that cannot become a case "
            "are rejected with their row number, the column and a sentence.",
            ["evalstream convert chats.jsonl cases.jsonl --from openai-chat",
             "evalstream convert qa.csv cases.jsonl --map input=question,output=answer",
             "evalstream convert logs/task.eval cases.jsonl --from inspect",
             "evalstream convert logs/task.eval inspect.verdicts.jsonl --from inspect-grades"],
            [(0, "clean"), (1, "some rows rejected, or no row became a case"),
             (4, "also: the input is not the format named (or inferred)")]))
    p.add_argument("input", type=path, nargs="?",
                   help="the source: a file (.gz/.zst for line and table formats), a folder "
                        "(--from hf), or - for stdin (with --from)")
    p.add_argument("output", nargs="?", type=path,
                   help="the cases (the verdicts, for a format that reads a judge): a .jsonl "
                        "path, .gz or .zst, or -")
    p.add_argument("--list-formats", action="store_true", default=False,
                   help="list the source formats (what each reads, the names and first bytes "
                        "it is inferred from, the options it takes) and exit")
    p.add_argument("--from", type=text, dest="format", metavar="FORMAT",
                   help="the source format, one of --list-formats; default: inferred from the "
                        "name and first bytes, and said in the report")
    p.add_argument("--map", dest="maps", type=text, action="append", metavar="FIELD=COLUMN,...",
                   help="case fields from columns, e.g. input=question,output=answer,"
                        "context=passages,metadata.task=task,expected.RUBRIC.status=label; "
                        "repeatable")
    p.add_argument("--set", dest="sets", type=text, action="append", metavar="FIELD=VALUE",
                   help="a constant for every case, e.g. expected.claim-support.source=human; "
                        "repeatable")
    p.add_argument("--values", type=text, action="append", metavar="FIELD=FROM:TO,...",
                   help="rewrite a mapped column's values, e.g. expected.x.status=yes:fail,"
                        "no:pass (an empty TO leaves the field out); repeatable")
    p.add_argument("--id-from", type=text, metavar="COLUMN",
                   help="take case ids from this column, or from a template such as "
                        "'halueval.{ID}' or 'begin.{source}.row-{#}' ({#}: the row number); "
                        "default: the row's own `id` when it is a valid id, else xxh3-128 hex "
                        "of the row's canonical JSON, stable across runs and machines")
    p.add_argument("--parse-json", type=text, action="append", metavar="COLUMNS",
                   help="columns whose text cells hold JSON (lists, objects), parsed before "
                        "mapping; comma-separated")
    p.add_argument("--keep-unmapped", action="store_true",
                   help="keep every column not mapped in metadata, under its own name")
    p.add_argument("--tool-failure-when", type=text, action="append", metavar="RULE",
                   help="when a tool result is a failure: a JSON path ($.error: present, not "
                        "null or false), PATH=VALUE, re:PATTERN on the result text, or never; "
                        "repeatable (any matches); default $.error")
    p.add_argument("--split", type=text, metavar="NAME",
                   help="the split of a Hugging Face dataset folder")
    p.add_argument("--separator", type=text, metavar="CHAR",
                   help="the CSV separator (default , for csv and a tab for tsv)")
    p.add_argument("--no-quoting", dest="quoting", action="store_false",
                   help="read quote characters as text (TSV written without quoting)")
    add_force(p)
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="where rejected rows go (JSONL); default: next to the output "
                        "(cases.rejects.jsonl)")
    p.add_argument("--report", type=path, metavar="FILE",
                   help="where the run report goes (JSON); default: next to the output "
                        "(cases.report.json)")
    add_max_line_bytes(p, evalstream.convert, "lines of JSONL sources")
    add_quiet(p, "no summary on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``convert``; return the exit code."""
    if args.list_formats:
        from evalstream._convert.formats import list_formats

        sys.stdout.write(list_formats())
        return 0
    from evalstream.errors import UsageError

    if "input" not in args or "output" not in args:
        raise UsageError("convert needs INPUT and OUTPUT (or --list-formats).")
    report = evalstream.convert(args.input, args.output,
                                **given(args, "input", "output", "list_formats"))
    if not args.quiet:
        from evalstream._render.convert import render_summary

        render_summary(report, sys.stderr)
    return report.exit_code
