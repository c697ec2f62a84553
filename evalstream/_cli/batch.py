"""``evalstream batch``: judging through the providers' batch APIs (prepare, submit, status,
collect; ``evalstream.batch_prepare`` and the others do the work).

Only argparse and the API's signatures are imported at the top: ``python -m evalstream
--help`` must stay cheap.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import evalstream
from evalstream._cli.common import given


def register(subparsers: Any) -> None:
    """Add the ``batch`` command and its subcommands."""
    from evalstream._cli.common import helps

    p = subparsers.add_parser(
        "batch",
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
        add_judge,
        add_max_line_bytes,
        add_quiet,
        add_settings,
        add_store,
        helps,
        path,
        positive,
        size,
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
    add_judge(who, evalstream.batch_prepare,
              "the API's base URL, as for a live run (default the provider's); submit sends "
              "there, and answers are stored under it", batch=True)
    add_settings(who)
    files = p.add_argument_group("files")
    files.add_argument("--max-requests-per-file", type=positive, metavar="N",
                       help="requests a file may hold (default the provider's limit)")
    files.add_argument("--max-bytes-per-file", type=size, metavar="SIZE",
                       help="bytes a file may hold, e.g. 100MB (default the provider's limit)")
    files.add_argument("--only-missing", type=path, metavar="DIR",
                       help="leave out every request whose answer came back to a batch folder "
                            "already collected (what never came back, or failed, is prepared "
                            "again)")
    add_store(files, "leave out every request whose answer this answer store holds (a live "
                     "run's, or a collect's; --cache: its name before)")
    add_max_line_bytes(files, evalstream.batch_prepare, "input lines")
    add_quiet(files, "no summary on stderr")
    p.set_defaults(func=_run_prepare)


def _remote_options(p: argparse.ArgumentParser, function: Any) -> None:
    """The options submit and status share (``function``: the API function, whose defaults
    the help shows)."""
    from evalstream._cli.common import amount, default, key_variables, path, positive, text

    p.add_argument("folder", type=path, metavar="DIR", help="a folder written by `batch prepare`")
    p.add_argument("--api-key-env", type=text, metavar="NAME",
                   help=f"the environment variable holding the API key (default "
                        f"{key_variables()})")
    p.add_argument("--timeout", type=amount, metavar="S",
                   help=f"seconds one call may take (default {default(function, 'timeout')}: "
                        "uploads are large)")
    p.add_argument("--max-attempts", type=positive, metavar="N",
                   help=f"attempts per call, the first included (default "
                        f"{default(function, 'max_attempts')})")
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
    _remote_options(p, evalstream.batch_submit)
    p.add_argument("--resubmit-unconfirmed", action="store_true",
                   help="Anthropic: create the batch of a file whose create call got no answer "
                        "(a batch of it may exist already: see the message)")
    p.set_defaults(func=_run_remote, action=evalstream.batch_submit)


def _status(sub: Any) -> None:
    from evalstream._cli.common import amount, default, helps

    p = sub.add_parser(
        "status", help="show each batch's state; download the results of ended batches",
        **helps("Ask the provider for each batch's state and counts; once a batch has ended "
                "(completed, expired, cancelled or failed), download its results (OpenAI: the "
                "output and error files; Anthropic: the results) into DIR/results/, where "
                "collect finds them.",
                ["evalstream batch status batch/",
                 "evalstream batch status batch/ --wait --poll 300"],
                [(0, "every batch has ended and its results are in DIR/results/"),
                 (2, "also: an ended batch whose results cannot be downloaded, or a server "
                     "that answers without a batch's status"),
                 (3, "some batches have not ended (or were never submitted), also when "
                     "--wait gave up after --max-wait")]))
    _remote_options(p, evalstream.batch_status)
    p.add_argument("--wait", action="store_true", help="poll until every batch has ended")
    p.add_argument("--poll", type=amount, metavar="S",
                   help="seconds between polls with --wait (default "
                        f"{default(evalstream.batch_status, 'poll')})")
    p.add_argument("--max-wait", type=amount, metavar="S",
                   help="seconds --wait may wait in all, then exit 3 naming the batches not "
                        f"ended (default {default(evalstream.batch_status, 'max_wait')}: "
                        "the providers' 24-hour window and an hour more)")
    p.add_argument("--no-download", dest="download", action="store_false",
                   help="only show the states; download nothing")
    p.set_defaults(func=_run_remote, action=evalstream.batch_status)


def _collect(sub: Any) -> None:
    from evalstream._cli.common import (
        add_force,
        add_max_line_bytes,
        add_quiet,
        add_store,
        amount,
        default,
        helps,
        path,
        share,
    )

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
                     "result), or unscored verdicts above --max-unscored-rate (every verdict "
                     "unscored: always)"),
                 (3, "some judge states have no verdict yet (listed in the report)"),
                 (4, "a result file is plainly not results")]))
    p.add_argument("folder", type=path, metavar="DIR", help="a folder written by `batch prepare`")
    p.add_argument("output", type=path,
                   help="verdicts: a .jsonl path, .gz or .zst, or - for stdout")
    p.add_argument("results", type=path, nargs="*", metavar="RESULT_FILE",
                   help="result files (default: DIR/results/*.jsonl, as status downloads them)")
    add_store(p, "the answer store (default: the one prepare consulted, else beside the "
                 "output: verdicts.judge.sqlite, where `evalstream judge` looks; --cache: its "
                 "name before)")
    p.add_argument("--missing", choices=["unscored", "skip"],
                   help="errored, canceled, expired requests: unscored verdicts with that cause "
                        "(default), or skip: no verdict, listed as missing")
    p.add_argument("--price-in", type=amount, metavar="USD",
                   help="USD per million input tokens at batch prices (no prices are built in)")
    p.add_argument("--price-out", type=amount, metavar="USD",
                   help="USD per million output tokens at batch prices")
    p.add_argument("--max-unscored-rate", type=share, metavar="R",
                   help="exit 1 when more than this share of the verdicts are unscored "
                        f"(default {default(evalstream.batch_collect, 'max_unscored_rate')}; "
                        "1: no limit, but a run with every verdict unscored always exits 1)")
    p.add_argument("--rejects", type=path, metavar="FILE",
                   help="where rejected result lines go (default verdicts.rejects.jsonl, "
                        "written only when a line is rejected)")
    p.add_argument("--report", type=path, metavar="FILE",
                   help="where the report goes (default verdicts.report.json)")
    add_max_line_bytes(p, evalstream.batch_collect, "result lines")
    add_force(p)
    add_quiet(p, "no summary on stderr")
    p.set_defaults(func=_run_collect)


def _print(lines: list[str], file: Any) -> None:
    from evalstream._render.console import terminal
    from evalstream._render.tables import literal

    console = terminal(file, highlight=False)
    for line in lines:
        console.print(literal(line), soft_wrap=True)


def _run_prepare(args: argparse.Namespace) -> int:
    from evalstream._render.batch import prepare_lines

    report = evalstream.batch_prepare(args.input, args.folder, args.model,
                                      **given(args, "input", "folder", "model"))
    if not args.quiet:
        _print(prepare_lines(report), sys.stderr)
    return report.exit_code


def _run_remote(args: argparse.Namespace) -> int:
    import msgspec

    from evalstream._render.batch import summary_lines

    summary = args.action(args.folder, **given(args, "folder", "action", "format"))
    if args.format == "json":
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(summary), indent=2)
                                + b"\n")
    else:
        _print(summary_lines(summary), sys.stdout)
    if summary.stopped:  # --wait gave up: say so where a CI log shows errors
        _print([f"evalstream: {summary.stopped}"], sys.stderr)
    return summary.exit_code


def _run_collect(args: argparse.Namespace) -> int:
    from evalstream._render.batch import collect_lines

    report = evalstream.batch_collect(args.folder, args.output, getattr(args, "results", []),
                                      **given(args, "folder", "output", "results"))
    if not args.quiet:
        _print(collect_lines(report), sys.stderr)
    return report.exit_code
