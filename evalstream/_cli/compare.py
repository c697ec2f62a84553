"""``evalstream compare``: the command line (its options shared with ``agree``;
``evalstream.compare`` does the work).

Only argparse and the API's signatures are imported at the top: ``python -m evalstream
--help`` must stay cheap.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    import evalstream
    from evalstream._cli.agree import add_output_options, add_stale_options
    from evalstream._cli.common import helps, path

    p = subparsers.add_parser(
        "compare",
        **helps(
            "Join two verdict files on (case id, rubric id) and report, per rubric, pass->fail "
            "and fail->pass flips with their ids, the pass rate of each run with the difference "
            "and McNemar's paired test, and the keys found in one run only. A pair whose "
            "rubric_hash, state_hash or exposure differ is not comparable (the judge saw "
            "something else): it is counted and left out of the statistics unless "
            "--include-incomparable. With --cases (or --states) each run's stale verdicts "
            "(judged on another state or rubric than build makes of the cases today) are "
            "counted and listed.",
            ["evalstream compare run-a.jsonl run-b.jsonl",
             "evalstream compare run-a.jsonl run-b.jsonl --html compare.html",
             "evalstream compare run-a.jsonl run-b.jsonl --format json -o compare.json"],
            [(0, "clean"), (1, "some lines rejected, a run's unscored verdicts above "
                               "--max-unscored-rate, or with --fail-on-stale a stale verdict"),
             (2, "also: a (case_id, rubric_id) repeated in a run")]))
    p.add_argument("run_a", type=path, metavar="run-a", help="the first (baseline) run's verdicts")
    p.add_argument("run_b", type=path, metavar="run-b", help="the second run's verdicts")
    p.add_argument("--include-incomparable", action="store_true",
                   help="include pairs that are not comparable in the statistics (they are "
                        "still counted as not comparable)")
    add_output_options(p, evalstream.compare)
    p.add_argument("--cases", type=path, metavar="CASES",
                   help="stale verdicts: the cases both runs judged, whose judge states are "
                        "rebuilt (with --rubrics) to check each verdict's hashes")
    add_stale_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``compare``; return the exit code (1 when some line was rejected)."""
    import evalstream
    from evalstream._cli.agree import shown_options

    report = evalstream.compare(args.run_a, args.run_b,
                                **shown_options(args, "run_a", "run_b"))
    return report.exit_code
