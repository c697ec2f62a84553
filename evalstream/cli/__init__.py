"""Command line: parse arguments, call the library, map its errors to messages and exit codes.

Exit codes: 0 clean; 1 finished with rejects; 2 usage or I/O error; 130 interrupted
(Ctrl-C); 143 terminated (SIGTERM); 70 an internal error (a bug: please report it).
Only argparse is imported up front so that ``--help`` stays as cheap as importing msgspec.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

EXIT_OK, EXIT_REJECTS, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143
EXIT_INTERNAL = 70  # a bug in evalstream (EX_SOFTWARE); never a verdict on the data


class Terminated(BaseException):
    """SIGTERM arrived; unwinds like Ctrl-C so temporary files are removed."""


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (e.g. 268435456, 256MiB)") from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def _add_reading(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rejects", metavar="FILE",
                   help="where rejected lines go (JSONL); default: next to the output "
                        "(states.rejects.jsonl), or the input for validate")
    p.add_argument("--report", metavar="FILE",
                   help="where the run report goes (JSON); default: states.report.json")
    p.add_argument("--allow-unknown-fields", action="store_true",
                   help="ignore fields the case format does not know instead of rejecting the line")
    p.add_argument("--max-line-bytes", type=_size, default=256 << 20, metavar="N",
                   help="reject lines longer than this, without reading them whole "
                        "(default 256MiB)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary on stderr")


def parser() -> argparse.ArgumentParser:
    """The evalstream argument parser."""
    top = argparse.ArgumentParser(
        prog="evalstream",
        description="Turn LLM evaluation datasets into exactly what each judge may see.",
        epilog="Exit codes: 0 clean, 1 finished with rejects, 2 usage or I/O error, "
               "130 interrupted, 143 terminated, 70 internal error (a bug).")
    from evalstream import __version__

    top.add_argument("--version", action="version", version=f"evalstream {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", help="write one judge state per applicable (case, rubric)",
                       description="Stream an evaluation dataset and write, for every case and "
                                   "every rubric that applies, the judge state and its "
                                   "field-exposure record.")
    b.add_argument("input", help="cases: a .jsonl path, .gz or .zst, or - for stdin")
    b.add_argument("output", help="judge states: a .jsonl path, .gz or .zst, or - for stdout")
    b.add_argument("--rubrics", action="append", default=[], metavar="FILE",
                   help="a TOML rubric file; repeatable; replaces the built-in rubrics")
    b.add_argument("--max-tokens", type=_positive, default=32_000, metavar="N",
                   help="the judge's budget for state plus longest question (default 32000)")
    b.add_argument("--workers", type=_positive, default=1, metavar="N",
                   help="worker processes for a plain input file (default 1); output is "
                        "byte-identical for any N")
    _add_reading(b)
    b.set_defaults(func=_build)

    v = sub.add_parser("validate", help="check the cases only: write rejects and a report",
                       description="Read and decode a dataset as build does, writing only the "
                                   "rejects and the report.")
    v.add_argument("input", help="cases: a .jsonl path, .gz or .zst, or - for stdin")
    v.add_argument("--format", choices=["table", "json"], default="table",
                   help="table: the first problems as a table on stdout; json: every reject as "
                        "JSONL on stdout (default table)")
    _add_reading(v)
    v.set_defaults(func=_validate)

    # Each command module imports only argparse at the top; its work is imported when it runs.
    from evalstream.cli import agree, compare, judge, stats

    stats.register(sub)
    judge.register(sub)
    agree.register(sub)
    compare.register(sub)
    return top


def _progress(args: argparse.Namespace) -> Any:
    if args.quiet or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    return Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), transient=True)


def _run(args: argparse.Namespace, output: str | None) -> int:
    from evalstream.checks.report import render_summary
    from evalstream.pipeline.build import Options, run

    opts = Options(
        input=args.input, output=output, rejects=args.rejects, report=args.report,
        rubric_files=getattr(args, "rubrics", []), max_tokens=getattr(args, "max_tokens", 32_000),
        max_line_bytes=args.max_line_bytes, allow_unknown_fields=args.allow_unknown_fields,
        workers=getattr(args, "workers", 1))
    json_rejects = getattr(args, "format", None) == "json"
    if json_rejects:
        if opts.rejects not in (None, "-"):
            raise _usage("--format json writes the rejects to stdout; drop --rejects.")
        opts.rejects = "-"
    progress = _progress(args)
    if progress is None:
        report, first = run(opts)
    else:
        with progress:
            task = progress.add_task(args.command, total=None)
            report, first = run(opts, lambda done, total: progress.update(
                task, completed=done, total=total))
    if output is None and not json_rejects:
        from evalstream.render.validate_view import print_problems

        print_problems(report, first, sys.stdout)
    elif not args.quiet:
        render_summary(report, sys.stderr)
    return report.exit_code


def _usage(message: str) -> Exception:
    from evalstream.pipeline.build import UsageError

    return UsageError(message)


def _build(args: argparse.Namespace) -> int:
    return _run(args, args.output)


def _validate(args: argparse.Namespace) -> int:
    return _run(args, None)


def _error(message: str) -> None:
    print(f"evalstream: error: {message}", file=sys.stderr)


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run the evalstream command line; return the exit code."""
    args = parser().parse_args(argv)
    # A file-size limit (ulimit -f) should be an I/O error, not a killed process.
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    from evalstream.checks.rubrics import RubricError
    from evalstream.files.lines import InputError
    from evalstream.files.outputs import OutputError
    from evalstream.pipeline.build import UsageError

    try:
        result: int = args.func(args)
        return result
    except (UsageError, RubricError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except (InputError, OutputError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error("interrupted; no output was written.")
        return EXIT_INTERRUPTED
    except Terminated:
        _error("terminated; no output was written.")
        return EXIT_TERMINATED
    except BrokenPipeError:
        # stdout closed early (`| head`): quiet, as other Unix tools are.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_USAGE
    except Exception:
        import traceback

        traceback.print_exc()
        _error("internal error (a bug in evalstream); no output was written.")
        return EXIT_INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)
