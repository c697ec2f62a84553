"""``evalstream agree``: the command line, and the output writing it shares with ``compare``.

Only argparse is imported at the top: ``python -m evalstream --help`` must stay cheap and
``build``/``validate`` must never import polars.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from evalstream._cli.common import add_force, count, fraction, helps, path, share, size, text

if TYPE_CHECKING:
    from collections.abc import Callable

    from evalstream._files.outputs import Committable
    from evalstream._files.transaction import Transaction
    from evalstream._render.tables import Block

FORMATS = ("table", "json", "markdown")
TEXT_WIDTH = 100  # the width of a table written to a file with -o


def add_output_options(p: argparse.ArgumentParser) -> None:
    """The options agree and compare share: output styles, rejects, reading limits."""
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (terminal), json (stable shape, for scripts) or markdown (for a "
                        "pull request); default table")
    p.add_argument("-o", "--output", type=path, metavar="FILE",
                   help="write the result here instead of stdout (atomically)")
    p.add_argument("--html", type=path, metavar="FILE",
                   help="also write a self-contained HTML page with the charts")
    p.add_argument("--max-ids", type=count, default=20, metavar="N",
                   help="case ids listed per rubric for each kind of difference (default 20; "
                        "0 lists none); the counts are always complete")
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="also write every rejected line here (JSONL with a `file` field); by "
                        "default rejects are counted and the first 20 per file shown")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the verdict (and case) format does not know instead of "
                        "rejecting the line")
    p.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                   help="reject longer lines without reading them whole (default 256MiB)")
    p.add_argument("--max-unscored-rate", type=share, metavar="R",
                   help="exit 1 when more than this share of a verdict file's verdicts are "
                        "unscored (e.g. 0.02); the rate is reported either way")
    add_force(p)
    p.add_argument("--view", type=path, metavar="DIR",
                   help="a folder written by `evalstream view --export`: each listed id links "
                        "to its check page there (in the HTML and markdown, and as `pages` in "
                        "the JSON)")


def register(subparsers: Any) -> None:
    """Add the ``agree`` subcommand."""
    p = subparsers.add_parser(
        "agree", help="how well a judge's verdicts agree with the cases' expected labels",
        **helps(
            "Join verdicts with the cases' expected labels on (case id, rubric id) and report, "
            "per rubric, per label source and per --by group: pairs, accuracy, Cohen's kappa "
            "with a confidence interval, the confusion matrix, precision and recall of fail, "
            "and the ids where judge and label disagree. Labels without a verdict, verdicts "
            "without a label, unscored verdicts and na labels are counted and left out of the "
            "statistics.",
            ["evalstream agree verdicts.jsonl cases.jsonl",
             "evalstream agree verdicts.jsonl cases.jsonl --by scenario --html agree.html",
             "evalstream agree verdicts.jsonl cases.jsonl --format json -o agree.json "
             "--max-unscored-rate 0.05"],
            [(0, "clean"), (1, "some lines rejected, or unscored verdicts above "
                               "--max-unscored-rate"),
             (2, "also: a (case_id, rubric_id) repeated in the verdicts")]))
    p.add_argument("verdicts", type=path,
                   help="verdicts: a .jsonl path, .gz or .zst, or - for stdin")
    p.add_argument("cases", type=path, help="the cases with their `expected` labels (as for build)")
    p.add_argument("--by", type=text, metavar="KEY",
                   help="also break the results down by this metadata key (dots reach nested "
                        "metadata, e.g. source.kind)")
    p.add_argument("--confidence", type=fraction, default=0.95, metavar="C",
                   help="confidence of the kappa interval (default 0.95)")
    add_output_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``agree``; return the exit code (1 when some line was rejected)."""
    from evalstream._render import agree as agree_view
    from evalstream._render.agree_html import agree_page
    from evalstream._verdicts import agree

    with targets(args, [("verdicts", args.verdicts), ("cases", args.cases)]) as made:
        report = agree.run(agree.AgreeOptions(
            verdicts=args.verdicts, cases=args.cases, by=args.by, rejects=args.rejects,
            force=args.force,
            max_ids=args.max_ids, confidence=args.confidence,
            max_line_bytes=args.max_line_bytes, allow_unknown_fields=args.allow_unknown_fields,
            max_unscored_rate=args.max_unscored_rate, view=args.view),
            outputs(args, made, agree.encode, agree_view.blocks, agree_page))
    show(args, report, agree_view.blocks)
    return report.exit_code


def targets(args: argparse.Namespace, inputs: list[tuple[str, str]]) -> Transaction:
    """The targets of agree or compare, checked before anything is read: no output is an
    input or another output, or shares a stream with one; -o and --html replace only a
    file evalstream wrote as such (``files.replace``), unless --force."""
    from evalstream._files.transaction import Target, Transaction

    return Transaction(inputs, [
        Target("output", args.output or "-", "json" if args.format == "json" else "text"),
        Target("html", args.html, "html"), Target("rejects", args.rejects)], args.force).check()


def outputs(args: argparse.Namespace, made: Transaction, encode: Callable[[Any], bytes],
            blocks: Callable[[Any, str], list[Block]], page: Callable[[Any, str], str],
            ) -> Callable[[Any], list[Committable]]:
    """The writer of the result in the chosen format (-o, atomically) and the HTML page,
    opened in ``made`` and handed to the library, which commits them with the rejects: all
    or none. Links to view pages are relative to the folder of the file they are written in."""
    import os

    def write(report: Any) -> list[Committable]:
        opened = []
        if args.html:
            opened.append(made.open("html"))
            opened[-1].write(page(report, os.path.dirname(args.html) or ".").encode())
        if not _to_terminal(args):
            base = "." if args.output in (None, "-") else os.path.dirname(args.output) or "."
            data = encode(report) if args.format == "json" else render(
                blocks(report, base), args.format)
            opened.append(made.open("output"))
            opened[-1].write(data)
        return made.hand_over(opened)

    return write


def show(args: argparse.Namespace, report: Any,
         blocks: Callable[[Any, str], list[Block]]) -> None:
    """The table on the terminal, when that is where the result goes (after the commit)."""
    if _to_terminal(args):
        from evalstream._render.tables import print_blocks

        print_blocks(blocks(report, "."), sys.stdout)


def _to_terminal(args: argparse.Namespace) -> bool:
    return bool(args.format == "table" and args.output in (None, "-"))


def render(blocks: list[Block], fmt: str, width: int = TEXT_WIDTH) -> bytes:
    """Blocks as markdown, or as plain-text tables ``width`` wide."""
    from evalstream._render.tables import render_format

    return render_format(blocks, fmt, width)
