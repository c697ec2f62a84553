"""``evalstream view``: the command line of the review pages (``evalstream.serve_view``, a
local server, or ``evalstream.export_view``, a static export). Only argparse and the API's
signatures are imported at the top: ``--help`` stays cheap."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import evalstream
from evalstream._cli.common import (
    add_force,
    add_max_line_bytes,
    add_output_bound,
    add_quiet,
    count,
    default,
    given,
    helps,
    path,
    positive,
    progress_bar,
    text,
)


def register(subparsers: Any) -> None:
    """Add the ``view`` subcommand."""
    p = subparsers.add_parser(
        "view",
        **helps("Index the verdicts and the cases (one pass over each file, nothing kept but "
                "offsets and keys) and serve pages on 127.0.0.1: the lists (disagreements "
                "with labels, changes against --compare, unscored verdicts, skipped checks, "
                "every verdict, rejected lines), filterable by rubric, label source, metadata "
                "group and kind, searchable by case id; and a page per check with the case, "
                "exactly what its judge was shown and withheld, the verdict with its "
                "rationale, the label and the other run. --export writes the same pages as a "
                "static folder instead.",
                ["evalstream view verdicts.jsonl --cases cases.jsonl",
                 "evalstream view verdicts.jsonl --cases cases.jsonl --states states.jsonl "
                 "--compare verdicts-b.jsonl",
                 "evalstream view verdicts.jsonl --cases cases.jsonl --export review/ "
                 "--limit 200",
                 "evalstream view verdicts.jsonl --cases run-a.jsonl --compare-cases "
                 "run-b.jsonl --rubrics pairwise.toml"],
                [(0, "served until Ctrl-C, or exported"),
                 (1, "exported, and some lines were rejected (they are listed)"),
                 (2, "also: a compressed or stdin input, a port given and in use, a (case_id, "
                     "rubric_id) repeated in a verdict file")]))
    p.add_argument("verdicts", type=path,
                   help="the verdicts to review (a .jsonl file: judge's output, build's exact "
                        "verdicts, or both)")
    p.add_argument("--cases", type=path, required=True, metavar="FILE", action="append",
                   help="the cases the verdicts judged, with their `expected` labels; "
                        "repeatable, or a glob: several files read in order as one, as build "
                        "reads them")
    p.add_argument("--states", type=path, metavar="FILE",
                   help="build's output: each check page shows the question and judge state "
                        "exactly as written there, and judge states without a verdict are "
                        "listed as not judged")
    p.add_argument("--compare", type=path, metavar="FILE",
                   help="another run's verdicts: lists the changes, and shows that run's verdict "
                        "on each check page")
    p.add_argument("--compare-cases", type=path, metavar="FILE",
                   help="run B's cases of pairwise verdicts (build --pair-with's RUN_B, one "
                        "file as build reads it): a pair's page shows its response beside run "
                        "A's (--cases)")
    p.add_argument("--rubrics", dest="rubric_files", type=path, action="append", metavar="FILE",
                   help="the rubric files build used (repeatable; default the built-in set): "
                        "they decide the skipped checks and rebuild states without --states")
    p.add_argument("--max-tokens", type=positive, metavar="N",
                   help="the budget build used (default "
                        f"{default(evalstream.serve_view, 'max_tokens')})")
    add_output_bound(p, evalstream.serve_view)
    p.add_argument("--by", type=text, metavar="KEY",
                   help="the metadata key of the group filter (default "
                        f"{default(evalstream.serve_view, 'by')}; dots reach nested metadata)")
    p.add_argument("--export", dest="folder", type=path, metavar="DIR",
                   help="write a static site to this folder instead of serving (plain HTML, "
                        "no script, works from file://); an earlier export there is replaced, "
                        "a folder holding anything else is refused (see --force)")
    p.add_argument("--limit", type=positive, metavar="N",
                   help=f"with --export: entries of each list (and of each filter value) with "
                        f"a page of their own (default {default(evalstream.export_view, 'limit')})")
    p.add_argument("--host", type=text, metavar="ADDRESS",
                   help="the address to listen on (default "
                        f"{default(evalstream.serve_view, 'host')}: this machine only)")
    p.add_argument("--port", type=count, metavar="N",
                   help="the port to listen on (default: the first free of 8765-8774; 0: any "
                        "free port); a port given and in use is an error")
    p.add_argument("--no-browser", dest="open_browser", action="store_false",
                   help="do not open a browser; the address to open is printed")
    p.add_argument("--keep-index", action="store_true",
                   help="keep the index beside the verdicts (VERDICTS.view-index) and reuse it "
                        "on the next run while every file is byte for byte the one indexed "
                        "(same stat and xxh3-128) and the options are the same")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case and verdict formats do not know instead of "
                        "rejecting the line")
    add_max_line_bytes(p, evalstream.serve_view)
    add_force(p)
    add_quiet(p, "no progress bar and no summary on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``view``: serve until Ctrl-C (0), or export (0, or 1 with rejected lines)."""
    from evalstream.errors import UsageError

    options = given(args, "verdicts", "cases")
    cases = args.cases[0] if len(args.cases) == 1 else args.cases  # several: read as one
    export = "folder" in options
    if export:
        # --no-browser is harmless with --export (an export opens no browser): a script may
        # pass it to both forms. --host and --port would be silently ignored: refused.
        options.pop("open_browser", None)
        wrong = [o for o, name in (("--host", "host"), ("--port", "port")) if name in options]
        if wrong:
            raise UsageError(f"{' and '.join(wrong)} {'apply' if len(wrong) > 1 else 'applies'} "
                             "to the server; --export writes files and serves nothing.")
    elif "limit" in options or "force" in options:
        raise UsageError(f"{'--limit' if 'limit' in options else '--force'} applies to "
                         "--export (the server writes nothing and shows every entry).")
    progress = progress_bar(args.quiet)

    def on_index(index: Any) -> None:
        if progress is not None:
            progress.stop()
        if not args.quiet:
            print(_indexed(index), file=sys.stderr, flush=True)

    on_progress = None
    if progress is not None:
        tasks: dict[str, Any] = {}
        progress.start()

        def on_progress(role: str, done: int, total: int | None) -> None:
            if role not in tasks:
                tasks[role] = progress.add_task(f"view: {role}", total=total)
            progress.update(tasks[role], completed=done)

    try:
        if export:
            report = evalstream.export_view(args.verdicts, cases, on_progress=on_progress,
                                            on_index=on_index, **options)
            if not args.quiet:
                print(f"view: wrote {report.files:,} files to {args.folder} ({report.checks:,} "
                      f"check pages, the first {report.limit:,} entries of each list and "
                      f"filter) in {report.seconds:.2f} s; open "
                      f"{args.folder.rstrip('/')}/index.html", file=sys.stderr)
            return int(report.exit_code)
        code = evalstream.serve_view(args.verdicts, cases, on_progress=on_progress,
                                     on_index=on_index, **options)
        print("view: stopped.", file=sys.stderr)
        return code
    finally:
        if progress is not None:
            progress.stop()


def _indexed(index: Any) -> str:
    files = ", ".join(f"{f.role} {f.lines:,} lines ({f.rejected:,} rejected)"
                      for f in index.files.values())
    holds = f"the index holds {index.nbytes:,} bytes ({index.nbytes / max(index.lines, 1):,.0f} " \
        "a line)"
    if index.reused:
        return f"view: {index.kept}: {files}; {holds}"
    kept = f"\nview: {index.kept}" if index.kept else ""
    return f"view: indexed {files} in {index.seconds:.2f} s; {holds}{kept}"
