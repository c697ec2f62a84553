"""``evalstream view``: the command line of the review pages (a local server, or a static
export). Only argparse is imported at the top: ``--help`` stays cheap."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evalstream._cli.common import (
    add_force,
    count,
    helps,
    path,
    positive,
    progress_bar,
    size,
    text,
)

DEFAULT_LIMIT = 100
DEFAULT_PORT = 8765


def register(subparsers: Any) -> None:
    """Add the ``view`` subcommand."""
    p = subparsers.add_parser(
        "view", help="see each check as the judge saw it: pages served locally, or exported",
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
                 "--limit 200"],
                [(0, "served until Ctrl-C, or exported"),
                 (1, "exported, and some lines were rejected (they are listed)"),
                 (2, "also: a compressed or stdin input, a port given and in use, a (case_id, "
                     "rubric_id) repeated in a verdict file")]))
    p.add_argument("verdicts", type=path,
                   help="the verdicts to review (a .jsonl file: judge's output, build's exact "
                        "verdicts, or both)")
    p.add_argument("--cases", type=path, required=True, metavar="FILE",
                   help="the cases the verdicts judged, with their `expected` labels")
    p.add_argument("--states", type=path, metavar="FILE",
                   help="build's output: each check page shows the question and judge state "
                        "exactly as written there, and judge states without a verdict are "
                        "listed as not judged")
    p.add_argument("--compare", type=path, metavar="FILE",
                   help="another run's verdicts: lists the changes, and shows that run's verdict "
                        "on each check page")
    p.add_argument("--rubrics", type=path, action="append", default=[], metavar="FILE",
                   help="the rubric files build used (repeatable; default the built-in set): "
                        "they decide the skipped checks and rebuild states without --states")
    p.add_argument("--max-tokens", type=positive, default=32_000, metavar="N",
                   help="the budget build used (default 32000)")
    p.add_argument("--by", type=text, default="scenario", metavar="KEY",
                   help="the metadata key of the group filter (default scenario; dots reach "
                        "nested metadata)")
    p.add_argument("--export", type=path, metavar="DIR",
                   help="write a static site to this folder instead of serving (plain HTML, "
                        "no script, works from file://); an earlier export there is replaced, "
                        "a folder holding anything else is refused (see --force)")
    p.add_argument("--limit", type=positive, metavar="N",
                   help=f"with --export: entries of each list (and of each filter value) with "
                        f"a page of their own (default {DEFAULT_LIMIT})")
    p.add_argument("--host", type=text, metavar="ADDRESS",
                   help="the address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=count, metavar="N",
                   help=f"the port to listen on (default: the first free of {DEFAULT_PORT}-"
                        f"{DEFAULT_PORT + 9}; 0: any free port); a port given and in use is an "
                        "error")
    p.add_argument("--no-browser", action="store_true",
                   help="do not open a browser; the address to open is printed")
    p.add_argument("--keep-index", action="store_true",
                   help="keep the index beside the verdicts (VERDICTS.view-index) and reuse it "
                        "on the next run while every file is byte for byte the one indexed "
                        "(same stat and xxh3-128) and the options are the same")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case and verdict formats do not know instead of "
                        "rejecting the line")
    p.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                   help="reject longer lines without reading them whole (default 256MiB)")
    add_force(p)
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``view``: serve until Ctrl-C (0), or export (0, or 1 with rejected lines)."""
    from evalstream._checks.rubrics import load_rubrics
    from evalstream._view.index import Options
    from evalstream.errors import UsageError

    if args.export is not None:
        # --no-browser is harmless with --export (an export opens no browser): a script may
        # pass it to both forms. --host and --port would be silently ignored: refused.
        given = [o for o, v in (("--host", args.host), ("--port", args.port)) if v is not None]
        if given:
            raise UsageError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} "
                             "to the server; --export writes files and serves nothing.")
    elif args.limit is not None or args.force:
        raise UsageError(f"{'--limit' if args.limit is not None else '--force'} applies to "
                         "--export (the server writes nothing and shows every entry).")
    opts = Options(verdicts=args.verdicts, cases=args.cases, states=args.states,
                   compare=args.compare, rubrics=load_rubrics(args.rubrics or None),
                   max_tokens=args.max_tokens, by=args.by, max_line_bytes=args.max_line_bytes,
                   allow_unknown_fields=args.allow_unknown_fields, keep_index=args.keep_index)
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
        if args.export is not None:
            from evalstream._view.run import export_view

            report: Any = export_view(opts, args.export, args.limit or DEFAULT_LIMIT,
                                      on_progress, on_index, force=args.force)
            if not args.quiet:
                print(f"view: wrote {report.files:,} files to {args.export} ({report.checks:,} "
                      f"check pages, the first {report.limit:,} entries of each list and "
                      f"filter) in {report.seconds:.2f} s; open "
                      f"{args.export.rstrip('/')}/index.html", file=sys.stderr)
            return int(report.exit_code)
        from evalstream._view.run import serve_view

        def announce(url: str) -> None:
            print(f"view: serving at {url}  (Ctrl-C stops it)", file=sys.stderr, flush=True)

        code = serve_view(opts, args.host or "127.0.0.1", args.port, not args.no_browser,
                          on_progress, on_index, announce)
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
