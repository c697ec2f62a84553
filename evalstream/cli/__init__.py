"""Command line: parse arguments, call the library, map its errors to messages and exit codes.

Every command lives in its own module (``cli.build``, ``cli.stats``, ...) that registers
its subcommand and calls the library; this module maps what escapes them to an exit code,
in one place: an ``EvalstreamError`` by its ``exit_code`` (see ``evalstream.errors``),
Ctrl-C 130, SIGTERM 143, SIGHUP 129, anything else 70 (a bug: please report it). Only
argparse is imported up front so that ``--help`` stays as cheap as importing msgspec.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from evalstream.errors import (
    EXIT_HANGUP,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    EvalstreamError,
)

EXIT_CODES = ("Exit codes: 0 clean, 1 finished with rejects, 2 usage, input or I/O error, "
              "4 wrong file, 130 interrupted, 143 terminated, 70 internal error (a bug).")


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived; unwinds like Ctrl-C so temporary files are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def parser() -> argparse.ArgumentParser:
    """The evalstream argument parser."""
    top = argparse.ArgumentParser(
        prog="evalstream",
        description="Turn LLM evaluation datasets into exactly what each judge may see.",
        epilog=EXIT_CODES)
    from evalstream import __version__

    top.add_argument("--version", action="version", version=f"evalstream {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Each command module imports only argparse at the top; its work is imported when it runs.
    from evalstream.cli import agree, build, compare, convert, judge, rubrics, stats, view

    convert.register(sub)
    build.register(sub)
    stats.register(sub)
    judge.register(sub)
    agree.register(sub)
    compare.register(sub)
    rubrics.register(sub)
    view.register(sub)
    return top


def _error(message: str) -> None:
    print(f"evalstream: error: {message}", file=sys.stderr)


def _on_signal(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    """Run the evalstream command line; return the exit code."""
    args = parser().parse_args(argv)
    # A file-size limit (ulimit -f) should be an I/O error, not a killed process.
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # A closed terminal (SIGHUP) ends a run like SIGTERM: temporary files removed, no output.
    handled = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, _on_signal) for s in handled}
    try:
        result: int = args.func(args)
        return result
    except EvalstreamError as exc:
        _error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted; no output was written.")
        return EXIT_INTERRUPTED
    except Terminated as exc:
        hangup = exc.signum == getattr(signal, "SIGHUP", None)
        _error(f"{'hung up' if hangup else 'terminated'}; no output was written.")
        return EXIT_HANGUP if hangup else EXIT_TERMINATED
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
        for s, handler in previous.items():
            signal.signal(s, handler)
