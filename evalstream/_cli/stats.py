"""``evalstream stats``: the command line (``evalstream.stats`` reads a dataset,
``evalstream.render_stats`` renders a saved report; both write the report and page).

Only argparse and the API's signatures are imported at the top: ``python -m evalstream
--help`` must stay cheap and ``build``/``validate`` must never import polars.
"""

from __future__ import annotations

import argparse
from typing import Any

import evalstream
from evalstream._cli.common import (
    add_engine,
    add_force,
    add_max_line_bytes,
    add_output_bound,
    add_quiet,
    add_tokenizer,
    default,
    given,
    helps,
    path,
    positive,
    text,
    with_progress,
)
from evalstream._options import REPORT_FORMATS, SECTIONS

# The options that read a dataset, which a saved report has been read with already.
DATASET_ONLY = (("--by", "by"), ("--rubrics", "rubric_files"), ("--max-tokens", "max_tokens"),
                ("--max-output-tokens", "max_output_tokens"),
                ("--tokenizer", "tokenizer"), ("--rejects", "rejects"),
                ("--max-line-bytes", "max_line_bytes"), ("--workers", "workers"),
                ("--scheduler", "scheduler"), ("--engine", "engine"),
                ("--allow-unknown-fields", "allow_unknown_fields"))


def register(subparsers: Any) -> None:
    """Add the ``stats`` subcommand."""
    p = subparsers.add_parser(
        "stats",
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
                        f"metadata (default: {default(evalstream.stats, 'by')})")
    p.add_argument("--format", choices=REPORT_FORMATS,
                   help="table (terminal), json (stable shape, for scripts and diffs) or "
                        "markdown (for a pull request); default "
                        f"{default(evalstream.stats, 'format')}")
    p.add_argument("-o", "--output", type=path, metavar="FILE",
                   help="write the report here instead of stdout (atomically)")
    p.add_argument("--html", type=path, metavar="FILE",
                   help="also write a self-contained HTML page with charts")
    p.add_argument("--rubrics", dest="rubric_files", type=path, action="append",
                   metavar="FILE",
                   help="a TOML rubric file, as in build; repeatable; `builtin` names the "
                        "built-in set (the default)")
    p.add_argument("--max-tokens", type=positive, metavar="N",
                   help="the judge's budget, as in build (default "
                        f"{default(evalstream.stats, 'max_tokens')})")
    add_output_bound(p, evalstream.stats)
    add_tokenizer(p, evalstream.stats, "every token count (all exact)")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--full", action="store_true", default=False,
                       help="the table format: every section (by default one screen: groups, "
                            "labels per rubric, checks and the first warnings); markdown and "
                            "json are always complete")
    shown.add_argument("--section", dest="sections", action="append", choices=SECTIONS,
                       metavar="NAME",
                       help=f"the table format: only these sections (repeatable): "
                            f"{', '.join(SECTIONS)}")
    add_force(p)
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="also write the rejected lines here (JSONL); by default they are only "
                        "counted")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know, as in build")
    add_max_line_bytes(p, evalstream.stats)
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes for a plain input file over 128 MiB (default: the "
                        "CPUs available, at most 8), or the size of a local Dask cluster; the "
                        "figures are the same for any N")
    add_engine(p)
    add_quiet(p, "no progress bar on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``stats``; return the exit code (1 when the dataset had rejected lines)."""
    # The command line shows the report on stdout unless -o says where; the API writes
    # nothing unless asked. --full: every section of the table.
    options = {"output": "-", **given(args, "input", "full")}
    if args.full:
        options["sections"] = None
    saved = evalstream.read_report(args.input[0]) if len(args.input) == 1 else None
    result: Any
    if saved is not None:
        dataset_only = [flag for flag, name in DATASET_ONLY if name in options and (
            name != "engine" or options[name] != "local")]
        if dataset_only:
            raise _usage(f"{args.input[0]} is already a report; {', '.join(dataset_only)} "
                         "apply to datasets only.")
        result = evalstream.render_stats(args.input[0], **options)
    else:
        result = with_progress(args.quiet, "stats", lambda on_progress: evalstream.stats(
            args.input, on_progress=on_progress, **options))
    rejected = result.overview.rejected if isinstance(result, evalstream.DatasetStats) \
        else result.counts.rejected
    return 1 if rejected else 0


def _usage(message: str) -> Exception:
    from evalstream.errors import UsageError

    return UsageError(message)


