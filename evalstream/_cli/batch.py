"""``evalstream batch``: judging through the providers' batch APIs (prepare, submit, status,
collect).

Only argparse is imported at the top: ``python -m evalstream --help`` must stay cheap.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``batch`` command and its subcommands."""
    from evalstream._cli.common import helps

    p = subparsers.add_parser(
        "batch", help="judge through the providers' batch APIs: prepare, submit, status, collect",
        **helps("Judge every judge state of a build output through a provider's batch API "
                "(OpenAI Batch API, Anthropic Message Batches, vllm run-batch): half the "
                "price, no rate limits, results within a day. The requests are the live "
                "judge's, byte for byte; results are matched back by custom_id, never by "
                "position, and stored with the live judge's answers.",
                ["evalstream batch prepare states.jsonl batch/ --model gpt-4.1-mini",
                 "evalstream batch submit batch/ && evalstream batch status batch/ --wait",
                 "evalstream batch collect batch/ verdicts.jsonl"],
                [(0, "done (see each subcommand's --help for its own codes)")]))
    sub = p.add_subparsers(dest="batch_command", required=True, metavar="SUBCOMMAND")
    _prepare(sub)
    _submit(sub)
    _status(sub)
    _collect(sub)


def _prepare(sub: Any) -> None:
    from evalstream._cli.common import (
        add_provider,
        add_settings,
        helps,
        path,
        positive,
        size,
        temperature,
        text,
    )

    p = sub.add_parser(
        "prepare", help="write request files and a manifest for a batch",
        **helps("Read a build output and write DIR: request files split at the provider's "
                "limits (OpenAI 50,000 requests and 200 MB a file, Anthropic 100,000 requests "
                "and 256 MB a batch), never mid-line, the manifest that maps each custom_id "
                "back to its judge states, the rejects and a report. The folder appears whole "
                "or not at all.",
                ["evalstream batch prepare states.jsonl batch/ --model gpt-4.1-mini",
                 "evalstream batch prepare states.jsonl batch/ --model claude-sonnet-4-5 "
                 "--provider anthropic",
                 "evalstream batch prepare states.jsonl batch/ --model qwen2.5-7b --base-url "
                 "http://127.0.0.1:8000/v1   # then: vllm run-batch -i "
                 "batch/requests-00001.jsonl ...",
                 "evalstream batch prepare states.jsonl batch2/ --model gpt-4.1-mini "
                 "--only-missing batch/"],
                [(0, "prepared"),
                 (1, "prepared, but some input lines rejected (DIR/rejects.jsonl)"),
                 (4, "the input is plainly not build's output")]))
    p.add_argument("input", type=path,
                   help="build's output: a .jsonl path, .gz or .zst, or - for stdin")
    p.add_argument("folder", type=path, metavar="DIR", help="the folder to write (new, or empty)")
    who = p.add_argument_group("the judge (as for `evalstream judge`)")
    who.add_argument("--model", type=text, required=True, help="the model, e.g. gpt-4.1-mini")
    add_provider(who, batch=True)
    add_settings(who)
    who.add_argument("--base-url", metavar="URL", default="",
                     help="the API's base URL, as for a live run (default the provider's); "
                          "submit sends there, and answers are stored under it")
    who.add_argument("--temperature", type=temperature, default=0.0, metavar="T",
                     help="sampling temperature (default 0); `none` sends none")
    who.add_argument("--max-output-tokens", type=positive, default=1024, metavar="N",
                     help="the answer's token limit (default 1024)")
    files = p.add_argument_group("files")
    files.add_argument("--max-requests-per-file", type=positive, metavar="N",
                       help="requests a file may hold (default the provider's limit)")
    files.add_argument("--max-bytes-per-file", type=size, metavar="SIZE",
                       help="bytes a file may hold, e.g. 100MB (default the provider's limit)")
    files.add_argument("--only-missing", type=path, metavar="DIR",
                       help="leave out every request whose answer came back to a batch folder "
                            "already collected (what never came back, or failed, is prepared "
                            "again)")
    files.add_argument("--cache", type=path, metavar="FILE",
                       help="leave out every request whose answer this answer store holds "
                            "(a live run's, or a collect's)")
    files.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                       help="reject longer input lines without reading them whole (default "
                            "256MiB)")
    files.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=_run_prepare)


def _remote_options(p: argparse.ArgumentParser) -> None:
    from evalstream._cli.common import amount, key_variables, path, positive, text

    p.add_argument("folder", type=path, metavar="DIR", help="a folder written by `batch prepare`")
    p.add_argument("--api-key-env", type=text, metavar="NAME",
                   help=f"the environment variable holding the API key (default "
                        f"{key_variables()})")
    p.add_argument("--timeout", type=amount, default=600.0, metavar="S",
                   help="seconds one call may take (default 600: uploads are large)")
    p.add_argument("--max-attempts", type=positive, default=5, metavar="N",
                   help="attempts per call, the first included (default 5)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="text (one line a request file) or json (default text)")


def _submit(sub: Any) -> None:
    from evalstream._cli.common import helps

    p = sub.add_parser(
        "submit", help="upload the request files and create their batches",
        **helps("Upload each request file (OpenAI) and create its batch, saving every id in "
                "the manifest the moment it is known: run it again after an error, Ctrl-C or "
                "kill -9 and it continues, creating no second batch of a file. The base URL is "
                "the one the batch was prepared for; the key comes from the environment only.",
                ["export OPENAI_API_KEY=...; evalstream batch submit batch/",
                 "evalstream batch submit batch/ --api-key-env MY_KEY --format json"],
                [(0, "every request file has its batch"),
                 (2, "also: the server refused the key or URL (ids learned so far are kept: "
                     "run it again to continue)"),
                 (3, "some files have no batch yet")]))
    _remote_options(p)
    p.add_argument("--resubmit-unconfirmed", action="store_true",
                   help="Anthropic: create the batch of a file whose create call got no answer "
                        "(a batch of it may exist already: see the message)")
    p.set_defaults(func=_run_remote, action="submit")


def _status(sub: Any) -> None:
    from evalstream._cli.common import amount, helps

    p = sub.add_parser(
        "status", help="show each batch's state; download the results of ended batches",
        **helps("Ask the provider for each batch's state and counts; once a batch has ended "
                "(completed, expired, cancelled or failed), download its results (OpenAI: the "
                "output and error files; Anthropic: the results) into DIR/results/, where "
                "collect finds them.",
                ["evalstream batch status batch/",
                 "evalstream batch status batch/ --wait --poll 300"],
                [(0, "every batch has ended and its results are in DIR/results/"),
                 (3, "some batches have not ended (or were never submitted)")]))
    _remote_options(p)
    p.add_argument("--wait", action="store_true", help="poll until every batch has ended")
    p.add_argument("--poll", type=amount, default=60.0, metavar="S",
                   help="seconds between polls with --wait (default 60)")
    p.add_argument("--no-download", dest="download", action="store_false",
                   help="only show the states; download nothing")
    p.set_defaults(func=_run_remote, action="status")


def _collect(sub: Any) -> None:
    from evalstream._cli.common import add_force, amount, helps, path, share, size

    p = sub.add_parser(
        "collect", help="turn result files into verdicts, one per judge state",
        **helps("Read result files (any order, any number of files, partial results of an "
                "expired batch included), match each line to its request by custom_id, store "
                "every answer with the live judge's answers, and write one verdict per judge "
                "state of the manifest, in input order (exact verdicts in their places): the "
                "same verdict a live run writes for that state. Errored, canceled and expired "
                "requests are unscored with that cause (--missing skip: left out and listed); "
                "states with no result are listed as missing.",
                ["evalstream batch collect batch/ verdicts.jsonl   # results from "
                 "DIR/results/",
                 "evalstream batch collect batch/ verdicts.jsonl out.jsonl errors.jsonl",
                 "evalstream batch collect batch/ verdicts.jsonl vllm-output.jsonl "
                 "--missing skip"],
                [(0, "every judge state has a verdict (unscored ones included) and no result "
                     "line was rejected"),
                 (1, "some result lines rejected (unknown custom_id, conflicting answer, not a "
                     "result), or unscored verdicts above --max-unscored-rate"),
                 (3, "some judge states have no verdict yet (listed in the report)"),
                 (4, "a result file is plainly not results")]))
    p.add_argument("folder", type=path, metavar="DIR", help="a folder written by `batch prepare`")
    p.add_argument("output", type=path,
                   help="verdicts: a .jsonl path, .gz or .zst, or - for stdout")
    p.add_argument("results", type=path, nargs="*", metavar="RESULT_FILE",
                   help="result files (default: DIR/results/*.jsonl, as status downloads them)")
    p.add_argument("--cache", type=path, metavar="FILE",
                   help="the answer store (default: the one prepare consulted, else beside the "
                        "output: verdicts.judge.sqlite, where `evalstream judge` looks)")
    p.add_argument("--missing", choices=["unscored", "skip"], default="unscored",
                   help="errored, canceled, expired requests: unscored verdicts with that cause "
                        "(default), or skip: no verdict, listed as missing")
    p.add_argument("--price-in", type=amount, metavar="USD",
                   help="USD per million input tokens at batch prices (no prices are built in)")
    p.add_argument("--price-out", type=amount, metavar="USD",
                   help="USD per million output tokens at batch prices")
    p.add_argument("--max-unscored-rate", type=share, metavar="R",
                   help="exit 1 when more than this share of the verdicts are unscored")
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="where rejected result lines go (default verdicts.rejects.jsonl)")
    p.add_argument("--report", type=path, metavar="FILE",
                   help="where the report goes (default verdicts.report.json)")
    p.add_argument("--max-line-bytes", type=size, default=256 << 20, metavar="N",
                   help="reject longer result lines without reading them whole (default "
                        "256MiB)")
    add_force(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=_run_collect)


def _print(lines: list[str], file: Any) -> None:
    from evalstream._render.console import terminal
    from evalstream._render.tables import literal

    console = terminal(file, highlight=False)
    for line in lines:
        console.print(literal(line), soft_wrap=True)


def _run_prepare(args: argparse.Namespace) -> int:
    from evalstream._cli.common import settings
    from evalstream._judge.batch import prepare
    from evalstream._judge.request import JudgeConfig
    from evalstream._render.batch import prepare_lines

    config = JudgeConfig(model=args.model, provider=args.provider, base_url=args.base_url,
                         temperature=args.temperature, max_output_tokens=args.max_output_tokens,
                         **settings(args))
    report = prepare.run(prepare.Options(
        input=args.input, folder=args.folder, config=config,
        max_requests_per_file=args.max_requests_per_file,
        max_bytes_per_file=args.max_bytes_per_file, only_missing=args.only_missing,
        cache=args.cache, max_line_bytes=args.max_line_bytes))
    if not args.quiet:
        _print(prepare_lines(report), sys.stderr)
    return report.exit_code


def _run_remote(args: argparse.Namespace) -> int:
    import msgspec

    from evalstream._judge.batch import remote
    from evalstream._render.batch import summary_lines

    opts = remote.Options(folder=args.folder, api_key_env=args.api_key_env,
                          timeout=args.timeout, max_attempts=args.max_attempts)
    if args.action == "submit":
        opts.resubmit_unconfirmed = args.resubmit_unconfirmed
        summary = remote.submit(opts)
    else:
        opts.wait, opts.poll, opts.download = args.wait, args.poll, args.download
        summary = remote.status(opts)
    if args.format == "json":
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(summary), indent=2)
                                + b"\n")
    else:
        _print(summary_lines(summary), sys.stdout)
    return summary.exit_code


def _run_collect(args: argparse.Namespace) -> int:
    from evalstream._judge.batch import collect
    from evalstream._render.batch import collect_lines

    report = collect.run(collect.Options(
        folder=args.folder, output=args.output, results=args.results, cache=args.cache,
        missing=args.missing, price_in=args.price_in, price_out=args.price_out,
        max_unscored_rate=args.max_unscored_rate, rejects=args.rejects, report=args.report,
        max_line_bytes=args.max_line_bytes, force=args.force))
    if not args.quiet:
        _print(collect_lines(report), sys.stderr)
    return report.exit_code
