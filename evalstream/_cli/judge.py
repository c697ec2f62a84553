"""``evalstream judge``: the command line of the live judge.

Only argparse is imported at the top: ``python -m evalstream --help`` must stay cheap, and
aiohttp, tiktoken and rich are imported when a judge run needs them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``judge`` subcommand."""
    from evalstream._cli.common import (
        TOKENIZERS,
        add_force,
        add_provider,
        add_settings,
        count,
        helps,
        key_variables,
        path,
        positive,
        public_urls,
        share,
        size,
        temperature,
        text,
    )
    from evalstream._cli.common import amount as _number

    p = subparsers.add_parser(
        "judge", help="ask an LLM judge for a verdict on every judge state",
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
             "--base-url http://127.0.0.1:8000/v1"],
            [(0, "every state judged (unscored verdicts included)"),
             (1, "some lines rejected, or unscored verdicts above --max-unscored-rate"),
             (2, "also: the server refused the key, the model or the URL"),
             (3, "stopped by --max-cost or --max-requests with states not judged (run again "
                 "to continue)")]))
    p.add_argument("input", type=path,
                   help="build's output (judge states and exact verdicts): a .jsonl path, .gz "
                        "or .zst, or - for stdin (copied to a temporary file: it is read twice)")
    p.add_argument("output", type=path,
                   help="verdicts: a .jsonl path, .gz or .zst, or - for stdout")
    who = p.add_argument_group("the judge")
    who.add_argument("--model", type=text, required=True, help="the model, e.g. gpt-4.1-mini")
    add_provider(who)
    add_settings(who)
    who.add_argument("--base-url", metavar="URL", default="",
                     help=f"the API's base URL (default {public_urls()}), e.g. "
                          "http://127.0.0.1:8000/v1")
    who.add_argument("--api-key-env", type=text, metavar="NAME",
                     help=f"the environment variable holding the API key (default "
                          f"{key_variables()}; optional for a --base-url server that needs "
                          "none)")
    who.add_argument("--temperature", type=temperature, default=0.0, metavar="T",
                     help="sampling temperature (default 0); `none` sends none, for models "
                          "that accept only their default")
    who.add_argument("--max-output-tokens", type=positive, default=1024, metavar="N",
                     help="the answer's token limit (default 1024); a longer answer is "
                          "unscored (truncated)")
    net = p.add_argument_group("sending")
    net.add_argument("--max-connections", type=positive, default=16, metavar="N",
                     help="requests in flight at most (default 16)")
    net.add_argument("--max-attempts", type=positive, default=5, metavar="N",
                     help="HTTP attempts per request, first one included (default 5)")
    net.add_argument("--timeout", type=_number, default=120.0, metavar="S",
                     help="seconds an attempt may take (default 120)")
    net.add_argument("--max-wait", type=_number, default=600.0, metavar="S",
                     help="seconds a request may spend waiting as 429s and 503s with "
                          "Retry-After ask (default 600); such a wait is not a failed attempt")
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
    money.add_argument("--dry-run", action="store_true",
                       help="count the requests to send, their exact input tokens and the cost "
                            "bound; send nothing, write nothing")
    store = p.add_argument_group("store and outputs")
    store.add_argument("--cache", type=path, metavar="FILE",
                       help="the answer store (SQLite); default beside the output "
                            "(verdicts.judge.sqlite); share one to never pay twice across "
                            "datasets")
    store.add_argument("--retry-unscored", action="store_true",
                       help="ask again where the stored answer is unscored (not JSON, wrong "
                            "shape, refusal, truncated)")
    store.add_argument("--show-request", type=text, nargs=2, metavar=("CASE_ID", "RUBRIC_ID"),
                       help="print the exact request body for one judge state and exit")
    store.add_argument("--max-unscored-rate", type=share, metavar="R",
                       help="exit 1 when more than this share of the verdicts are unscored")
    add_force(store)
    store.add_argument("--rejects", type=path, metavar="FILE",
                       help="where rejected lines go (default verdicts.rejects.jsonl)")
    store.add_argument("--report", type=path, metavar="FILE",
                       help="where the run report goes (default verdicts.report.json)")
    store.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                       help="reject longer lines without reading them whole (default 256MiB)")
    store.add_argument("-q", "--quiet", action="store_true",
                       help="no progress bar and no summary on stderr")
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> Any:
    """The library's options from the parsed arguments."""
    from evalstream._cli.common import settings
    from evalstream._judge.live import Options
    from evalstream._judge.request import JudgeConfig

    config = JudgeConfig(model=args.model, provider=args.provider, base_url=args.base_url,
                         temperature=args.temperature,
                         max_output_tokens=args.max_output_tokens, **settings(args))
    return Options(
        input=args.input, output=args.output, config=config, rejects=args.rejects,
        report=args.report, cache=args.cache, api_key_env=args.api_key_env,
        max_connections=args.max_connections, max_attempts=args.max_attempts,
        timeout=args.timeout, max_wait=args.max_wait, rpm=args.rpm, tpm=args.tpm,
        max_cost=args.max_cost,
        max_requests=args.max_requests, price_in=args.price_in, price_out=args.price_out,
        retry_unscored=args.retry_unscored, max_unscored_rate=args.max_unscored_rate,
        max_line_bytes=args.max_line_bytes, tokenizer=args.tokenizer, force=args.force)


def run(args: argparse.Namespace) -> int:
    """Run ``judge``; return the exit code."""
    from evalstream._cli import Terminated
    from evalstream._judge import live

    opts = options(args)
    if args.show_request:
        return _show_request(opts, *args.show_request)
    targets = live.check(opts)
    if args.dry_run:
        from evalstream._judge.dryrun import dry_run, text

        sys.stdout.write(text(dry_run(opts)))
        return 0
    progress = None if args.quiet or not sys.stderr.isatty() else _Bar(opts.input)
    try:
        if progress is None:
            report = live.run(opts, targets=targets)
        else:
            with progress.bar:
                report = live.run(opts, progress.update, targets)
    except (KeyboardInterrupt, Terminated):
        print(f"evalstream: answers received so far are kept in {live.store_path(opts)}; "
              "run the same command again to continue.", file=sys.stderr)
        raise
    if not args.quiet:
        from evalstream._render.judge_summary import render

        render(report, sys.stderr)
    return report.exit_code


def _show_request(opts: Any, case_id: str, rubric_id: str) -> int:
    from evalstream._judge.live import first_state, held
    from evalstream._judge.request import build
    from evalstream.errors import UsageError

    with held(opts) as source:
        state = first_state(source, case_id, rubric_id, opts.max_line_bytes)
    if state is None:
        raise UsageError(f"no judge state for case `{case_id}` and rubric `{rubric_id}` in "
                         f"{opts.input}.")
    req = build(opts.config, state.question, state.state)
    api = opts.config.api
    # The headers that carry the key, with the variable in its place: never the key itself.
    shown = api.headers("$" + (opts.api_key_env or api.key_env))
    auth = ", ".join(f"{name}: {shown[name]}" for name in api.credential_headers)
    print(f"POST {opts.config.url}  ({auth}); store key {req.key}", file=sys.stderr)
    sys.stdout.buffer.write(req.body + b"\n")
    sys.stdout.flush()
    return 0


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
        self.bar.update(self.task, completed=p.lines, text=(
            f"{p.states:,} states, {p.done:,}/{p.sent:,} requests, {p.done / elapsed:,.0f}/s, "
            f"{p.input_tokens + p.output_tokens:,} tokens, {p.unscored:,} unscored{cost}"))


def _lines(path: str) -> int | None:
    """The number of lines of a plain file (for the bar's total), else None."""
    if path == "-" or path.endswith((".gz", ".zst")):
        return None
    try:
        with open(path, "rb") as f:
            return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return None
