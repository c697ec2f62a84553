"""``evalstream judge``: the command line of the live judge (``evalstream.judge`` and its
modes do the work).

Only argparse and the API's signatures are imported at the top: ``python -m evalstream
--help`` must stay cheap, and aiohttp, tiktoken and rich are imported when a judge run needs
them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import evalstream
from evalstream._cli.common import given


def register(subparsers: Any) -> None:
    """Add the ``judge`` subcommand."""
    from evalstream._cli.common import (
        TOKENIZERS,
        add_force,
        add_judge,
        add_max_line_bytes,
        add_quiet,
        add_settings,
        add_store,
        count,
        default,
        helps,
        key_variables,
        path,
        positive,
        public_urls,
        share,
        text,
    )
    from evalstream._cli.common import amount as _number

    p = subparsers.add_parser(
        "judge",
        **helps(
            "Send every judge state of a build output to an LLM judge (OpenAI chat completions "
            "or Anthropic messages, or a compatible server such as vLLM, llama.cpp, Ollama or "
            "LiteLLM) and write one verdict per state, in input order. Every answer is stored "
            "the moment it arrives, keyed by the request: a re-run after an error, Ctrl-C or "
            "kill -9 pays for nothing twice. An answer that is not {status, reason} is "
            "unscored, never pass. The API key is read from the environment only.",
            ["evalstream judge states.jsonl verdicts.jsonl --model gpt-4.1-mini --dry-run "
             "--price-in 0.4 --price-out 1.6",
             "evalstream judge states.jsonl verdicts.jsonl --model gpt-4.1-mini",
             "evalstream judge states.jsonl verdicts.jsonl --model qwen2.5-7b "
             "--base-url http://127.0.0.1:8000/v1",
             "evalstream judge states.jsonl verdicts.jsonl --jury jury.toml"],
            [(0, "every state judged (unscored verdicts included)"),
             (1, "some lines rejected, or unscored verdicts above --max-unscored-rate (every "
                 "verdict unscored: always)"),
             (2, "also: the server refused the key, the model or the URL, or the first "
                 "requests all failed alike (refused the same way, or nothing listening)"),
             (3, "some states not judged, as when --max-cost or --max-requests stopped the "
                 "run (listed in the report; run again to continue)")]))
    p.add_argument("input", type=path,
                   help="build's output (judge states and exact verdicts): a .jsonl path, .gz "
                        "or .zst, or - for stdin (copied to a temporary file: it is read twice)")
    p.add_argument("output", type=path,
                   help="verdicts: a .jsonl path, .gz or .zst, or - for stdout")
    judge = evalstream.judge
    who = p.add_argument_group("the judge")
    add_judge(who, judge, f"the API's base URL (default {public_urls()}), e.g. "
                          "http://127.0.0.1:8000/v1")
    add_settings(who)
    who.add_argument("--jury", type=path, metavar="FILE",
                     help="a jury file (TOML: a `rule` and one [[judge]] table per juror, each "
                          "with its model and options): every juror votes on every state and "
                          "the rule decides; the verdicts carry `votes` and `panel`. Instead "
                          "of --model and the judge's options")
    who.add_argument("--samples", type=positive, metavar="K",
                     help=f"ask the judge K times a state (default "
                          f"{default(judge, 'samples')}); the mode decides and the verdicts "
                          "carry the votes (use a --temperature above 0)")
    who.add_argument("--api-key-env", type=text, metavar="NAME",
                     help=f"the environment variable holding the API key (default "
                          f"{key_variables()}; optional for a --base-url server that needs "
                          "none)")
    net = p.add_argument_group("sending")
    net.add_argument("--max-connections", type=positive, metavar="N",
                     help="requests in flight at most (default "
                          f"{default(judge, 'max_connections')})")
    net.add_argument("--max-attempts", type=positive, metavar="N",
                     help="HTTP attempts per request, first one included (default "
                          f"{default(judge, 'max_attempts')})")
    net.add_argument("--timeout", type=_number, metavar="S",
                     help=f"seconds an attempt may take (default {default(judge, 'timeout')})")
    net.add_argument("--max-wait", type=_number, metavar="S",
                     help="seconds a request may spend waiting as 429s and 503s with "
                          f"Retry-After ask (default {default(judge, 'max_wait')}); such a "
                          "wait is not a failed attempt")
    net.add_argument("--rpm", type=_number, metavar="N", help="requests per minute at most")
    net.add_argument("--tpm", type=_number, metavar="N",
                     help="tokens per minute at most (input tokens counted exactly, plus "
                          "--max-output-tokens, as OpenAI counts them)")
    money = p.add_argument_group("cost and limits")
    money.add_argument("--price-in", type=_number, metavar="USD",
                       help="USD per million input tokens (no prices are built in)")
    money.add_argument("--price-out", type=_number, metavar="USD",
                       help="USD per million output tokens")
    money.add_argument("--max-cost", type=_number, metavar="USD",
                       help="stop sending before this run's cost could pass this (needs the "
                            "prices); exit 3, re-run to continue")
    money.add_argument("--max-requests", type=count, metavar="N",
                       help="send at most N requests this run (retries not counted); exit 3 "
                            "when states are left")
    money.add_argument("--tokenizer", choices=TOKENIZERS, metavar="NAME",
                       help="the encoding requests are counted in (--dry-run, --tpm, "
                            "--max-cost): o200k_base or cl100k_base; default: the model "
                            "family's (gpt-4o, gpt-4.1, o-series, gpt-5: o200k_base; gpt-4, "
                            "gpt-3.5: cl100k_base), else o200k_base, an estimate")
    money.add_argument("--dry-run", action="store_true", default=False,
                       help="count the requests to send, their exact input tokens and the cost "
                            "bound; send nothing, write nothing")
    store = p.add_argument_group("store and outputs")
    add_store(store, "the answer store (SQLite); default beside the output "
                     "(verdicts.judge.sqlite); share one to never pay twice across datasets "
                     "(--cache: its name before)")
    store.add_argument("--retry-unscored", action="store_true",
                       help="ask again where the stored answer is unscored (not JSON, wrong "
                            "shape, refusal, truncated)")
    store.add_argument("--show-request", type=text, nargs=2, metavar=("CASE_ID", "RUBRIC_ID"),
                       default=None,
                       help="print the exact request body for one judge state and exit")
    store.add_argument("--max-unscored-rate", type=share, metavar="R",
                       help="exit 1 when more than this share of the verdicts are unscored "
                            f"(default {default(judge, 'max_unscored_rate')}; 1: no limit, but "
                            "a run with every verdict unscored always exits 1)")
    add_force(store)
    store.add_argument("--rejects", type=path, metavar="FILE",
                       help="where rejected lines go (default verdicts.rejects.jsonl, written "
                            "only when a line is rejected)")
    store.add_argument("--report", type=path, metavar="FILE",
                       help="where the run report goes (default verdicts.report.json)")
    add_max_line_bytes(store, judge)
    add_quiet(store, "no progress bar and no summary on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``judge`` (or one of its modes: ``--show-request``, ``--dry-run``); return the exit
    code."""
    from evalstream._cli.common import Terminated

    options = given(args, "input", "output", "model", "show_request", "dry_run")
    arguments = (args.input, args.output, getattr(args, "model", None))
    if args.show_request:
        case_id, rubric_id = args.show_request
        request = evalstream.judge_request(case_id, rubric_id, *arguments, **options)
        # The headers that carry the key, with the variable in its place: never the key itself.
        auth = ", ".join(f"{name}: {value}" for name, value in request.headers.items())
        print(f"POST {request.url}  ({auth}); store key {request.key}", file=sys.stderr)
        sys.stdout.buffer.write(request.body + b"\n")
        sys.stdout.flush()
        return 0
    if args.dry_run:
        from evalstream._render.judge_summary import dry_run_text

        sys.stdout.write(dry_run_text(evalstream.judge_dry_run(*arguments, **options)))
        return 0
    progress = None if args.quiet or not sys.stderr.isatty() else _Bar(args.input)
    try:
        if progress is None:
            report = evalstream.judge(*arguments, **options)
        else:
            with progress.bar:
                report = evalstream.judge(*arguments, on_progress=progress.update, **options)
    except (KeyboardInterrupt, Terminated) as stopped:
        for note in getattr(stopped, "__notes__", []):  # where the answers received are kept
            print(f"evalstream: {note}", file=sys.stderr)
        raise
    if not args.quiet:
        from evalstream._render.judge_summary import render

        render(report, sys.stderr)
    return report.exit_code


class _Bar:
    """A rich progress bar on stderr: lines read, requests, req/s, tokens, unscored, cost, ETA."""

    def __init__(self, path: str) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("judge"), BarColumn(),
                            TextColumn("{task.fields[text]}"), TimeRemainingColumn(),
                            transient=True)
        self.task = self.bar.add_task("judge", total=_lines(path), text="")

    def update(self, p: Any) -> None:
        import time

        elapsed = max(time.monotonic() - p.started, 1e-9)
        cost = f", ${p.cost:,.4f}" if p.cost else ""
        # A panel: the votes stored so far, juror by juror.
        votes = "; votes " + ", ".join(f"{name} {n:,}" for name, n in p.votes.items()) \
            if p.votes else ""
        self.bar.update(self.task, completed=p.lines, text=(
            f"{p.states:,} states, {p.done:,}/{p.sent:,} requests, {p.done / elapsed:,.0f}/s, "
            f"{p.input_tokens + p.output_tokens:,} tokens, {p.unscored:,} unscored{cost}"
            f"{votes}"))


def _lines(path: str) -> int | None:
    """The number of lines of a plain file (for the bar's total), else None."""
    if path == "-" or path.endswith((".gz", ".zst")):
        return None
    try:
        with open(path, "rb") as f:
            return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return None
