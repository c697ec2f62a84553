"""``evalstream agree``: the command line, and the options it shares with ``compare``
(``evalstream.agree`` and ``evalstream.compare`` read, count and write the report).

Only argparse and the API's signatures are imported at the top: ``python -m evalstream
--help`` must stay cheap and ``build``/``validate`` must never import polars.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import evalstream
from evalstream._cli.common import (
    add_force,
    add_max_line_bytes,
    count,
    default,
    fraction,
    given,
    helps,
    path,
    share,
    text,
)
from evalstream._options import REPORT_FORMATS


def add_output_options(p: argparse.ArgumentParser, function: Callable[..., Any]) -> None:
    """The options agree and compare share (``function``: the API function, whose defaults
    the help shows): output styles, rejects, reading limits."""
    p.add_argument("--format", choices=REPORT_FORMATS,
                   help="table (terminal), json (stable shape, for scripts) or markdown (for a "
                        f"pull request); default {default(function, 'format')}")
    p.add_argument("-o", "--output", type=path, metavar="FILE",
                   help="write the result here instead of stdout (atomically)")
    p.add_argument("--html", type=path, metavar="FILE",
                   help="also write a self-contained HTML page with the charts")
    p.add_argument("--max-ids", type=count, metavar="N",
                   help="case ids listed per rubric for each kind of difference (default "
                        f"{default(function, 'max_ids')}; 0 lists none); the counts are always "
                        "complete")
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="also write every rejected line here (JSONL with a `file` field); by "
                        "default rejects are counted and the first 20 per file shown")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the verdict (and case) format does not know instead of "
                        "rejecting the line")
    add_max_line_bytes(p, function)
    p.add_argument("--max-unscored-rate", type=share, metavar="R",
                   help="exit 1 when more than this share of a verdict file's verdicts are "
                        "unscored (e.g. 0.02); the rate is reported either way")
    add_force(p)
    p.add_argument("--view", type=path, metavar="DIR",
                   help="a folder written by `evalstream view --export`: each listed id links "
                        "to its check page there (in the HTML and markdown, and as `pages` in "
                        "the JSON)")


def add_stale_options(p: argparse.ArgumentParser) -> None:
    """The options of the stale check, which agree and compare share: the rubric files whose
    states are rebuilt from the cases, or build's output, and the exit code it sets."""
    p.add_argument("--rubrics", dest="rubric_files", type=path, action="append", metavar="FILE",
                   help="stale verdicts: rebuild the cases' judge states with these rubric "
                        "files, as build does (repeatable; default the built-in set); a "
                        "verdict whose state_hash or rubric_hash no longer matches is stale")
    p.add_argument("--states", type=path, metavar="FILE",
                   help="stale verdicts: compare with build's output (its judge states and "
                        "exact verdicts) instead of rebuilding the states")
    p.add_argument("--fail-on-stale", action="store_true",
                   help="exit 1 when a verdict is stale (for CI)")


def register(subparsers: Any) -> None:
    """Add the ``agree`` subcommand."""
    p = subparsers.add_parser(
        "agree",
        **helps(
            "Join verdicts with the cases' expected labels on (case id, rubric id) and report, "
            "per rubric, per label source and per --by group: the pass/fail labels and the "
            "pairs scored, accuracy (scored, and over all labels), Cohen's kappa with a "
            "confidence interval, the confusion matrix, precision and recall of fail, and the "
            "ids where judge and label disagree. Coverage first: na verdicts on a pass/fail "
            "label (a disagreement of their own), unscored and stale verdicts, labels without "
            "a verdict are counted, listed and left out of the scored figures, and the summary "
            "leads with a rubric that scored less than 90% of its labels. Stale verdicts "
            "(judged on another state or rubric than build makes of the cases today) are "
            "found by rebuilding the states (--rubrics, default the built-in set) or from "
            "build's output (--states). A panel's verdicts (judge --jury, --samples) add each "
            "juror against the labels, the jurors against each other (Fleiss' kappa, "
            "Krippendorff's alpha) and the split states, coverage and staleness as above. "
            "With --cases, several runs are set side by side: which judge agrees best with "
            "people, at what cost.",
            ["evalstream agree verdicts.jsonl cases.jsonl",
             "evalstream agree verdicts.jsonl 'shards/*.jsonl'",
             "evalstream agree verdicts.jsonl cases.jsonl --by scenario --html agree.html",
             "evalstream agree verdicts.jsonl cases.jsonl --format json -o agree.json "
             "--max-unscored-rate 0.05",
             "evalstream agree verdicts.jsonl cases.jsonl --rubrics my-rubrics.toml "
             "--fail-on-stale",
             "evalstream agree mini.jsonl haiku.jsonl qwen.jsonl --cases cases.jsonl --price "
             "gpt-4.1-mini=0.4,1.6"],
            [(0, "clean"), (1, "some lines rejected, unscored verdicts above "
                               "--max-unscored-rate, or with --fail-on-stale a stale verdict"),
             (2, "also: a (case_id, rubric_id) repeated in the verdicts")]))
    # `agree VERDICTS CASES...`, as always; or the verdicts of several runs and --cases CASES:
    # --cases given, every file is a run; not given, the first is the verdicts.
    p.add_argument("files", type=path, nargs="+", metavar="FILE",
                   help="VERDICTS CASES...: the verdicts (a .jsonl path, .gz or .zst, or - for "
                        "stdin) and the cases with their `expected` labels: one file, several or "
                        "a glob, read in order as one, as build reads them; or, with --cases, "
                        "the verdict files of several runs over the same states, set side by "
                        "side")
    p.add_argument("--cases", type=path, metavar="CASES", action="append",
                   help="the cases with their labels, when the files before are several runs "
                        "(repeatable, or a glob: read in order as one): one row per run per "
                        "rubric, the best agreement with the labels first, with its unscored "
                        "rate, tokens and cost per 1,000 states")
    p.add_argument("--price", dest="prices", action="append", type=text,
                   metavar="MODEL=IN,OUT",
                   help="several runs: USD per million input and output tokens of a model, "
                        "for the cost per 1,000 states (e.g. gpt-4.1-mini=0.4,1.6); once per "
                        "model")
    p.add_argument("--by", type=text, metavar="KEY",
                   help="also break the results down by this metadata key (dots reach nested "
                        "metadata, e.g. source.kind)")
    p.add_argument("--confidence", type=fraction, metavar="C",
                   help="confidence of the kappa interval (default "
                        f"{default(evalstream.agree, 'confidence')})")
    add_output_options(p, evalstream.agree)
    add_stale_options(p)
    # How sure the judge was (issue 29): calibration needs no option (verdicts that carry
    # confidence); the corrected pass rates and the checks to label do.
    p.add_argument("--estimate", action="store_true",
                   help="also the corrected pass rate of each rubric and --by group: the "
                        "judge's raw rate, the labelled rate and the prediction-powered estimate "
                        "(PPI++) with its interval, and how many more labels would narrow it to "
                        "--target-width")
    p.add_argument("--target-width", type=fraction, metavar="W",
                   help="with --estimate: the interval width the label budget aims at (default "
                        f"{default(evalstream.agree, 'target_width')})")
    p.add_argument("--to-label", type=count, metavar="N",
                   help="choose N checks without a label whose labels would help most (the "
                        "most doubtful verdicts, spread over rubrics and --by groups) and write "
                        "their cases to --to-label-output, each saying why in metadata.to_label")
    p.add_argument("--to-label-output", type=path, metavar="FILE",
                   help="where --to-label writes the chosen cases (JSONL, atomically)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``agree`` (``agree VERDICTS CASES...``; several runs with ``--cases``:
    ``evalstream.agree_judges``); return the exit code (1 when some line was rejected)."""
    from evalstream.errors import UsageError

    files, cases = args.files, getattr(args, "cases", None)
    options = shown_options(args, "files", "cases")
    if cases is None:
        if len(files) < 2:
            raise UsageError("agree takes VERDICTS CASES... (the cases: one file, several or a "
                             "glob), or the verdict files of several runs and --cases CASES; "
                             "1 file given without --cases.")
        files, cases = files[:1], files[1:]
    cases = cases[0] if len(cases) == 1 else cases  # one path as a path, several as a list
    function = evalstream.agree if len(files) == 1 else evalstream.agree_judges
    takes = function.__kwdefaults__ or {}
    extra = [f"--{name.replace('_', '-')}" for name in options if name not in takes]
    if extra:
        one = len(files) == 1
        raise UsageError(f"{', '.join(extra).replace('--prices', '--price')} "
                         f"appl{'ies' if len(extra) == 1 else 'y'} to "
                         + ("several runs side by side (agree RUN_A RUN_B ... --cases CASES), "
                            "not to one" if one else
                            "one run (agree VERDICTS CASES...), not to several side by side") + ".")
    if len(files) == 1:
        return evalstream.agree(files[0], cases, **options).exit_code
    return evalstream.agree_judges(files, cases, **options).exit_code


def shown_options(args: argparse.Namespace, *arguments: str) -> dict[str, Any]:
    """The options given to agree or compare (their ``arguments`` left out): the command line
    shows the report on stdout unless -o says where; the API writes nothing unless asked."""
    return {"output": "-", **given(args, *arguments)}
