"""Command line: parse arguments, call the library, map its errors to messages and exit codes.

Every command lives in its own module (``cli.build``, ``cli.stats``, ...) that registers
its subcommand and calls the library; this module maps what escapes them to an exit code,
in one place: an ``EvalstreamError`` by its ``exit_code`` (see ``evalstream.errors``),
Ctrl-C 130, SIGTERM 143, SIGHUP 129, anything else 70 (a bug: please report it), also a
native library's panic, which Python sees as a BaseException. Only
argparse is imported up front so that ``--help`` stays as cheap as importing msgspec.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from evalstream._cli.common import Terminated
from evalstream.errors import (
    EXIT_HANGUP,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_TERMINATED,
    EvalstreamError,
    ReaderGone,
)

EXIT_CODES = """exit codes: 0 clean; 1 finished with rejects (or unscored verdicts above a
threshold); 2 usage, input or I/O error; 3 stopped by a limit you set (judge), run again to
continue; 4 the input is plainly not the file the command reads; 129 hung up;
130 interrupted; 141 the reader of stdout went away (| head); 143 terminated;
70 internal error (a bug in evalstream)."""


WORKFLOW = """the workflow (each command's --help has more examples):
  evalstream convert chats.jsonl cases.jsonl --from openai-chat   # your data in
  evalstream validate cases.jsonl                                 # what is wrong, by line
  evalstream stats cases.jsonl --by scenario                      # what the dataset holds
  evalstream build cases.jsonl states.jsonl                       # what each judge may see
  evalstream judge states.jsonl verdicts.jsonl --model gpt-4.1-mini
  evalstream agree verdicts.jsonl cases.jsonl                     # judge against labels
  evalstream compare verdicts.jsonl other-run.jsonl               # run against run"""
# Terminated (SIGTERM, SIGHUP unwinding like Ctrl-C) is in common: `judge` catches it, and a
# command module must not import this package, which imports it.


class Parser(argparse.ArgumentParser):
    """An argument parser that takes options only as spelled (``--max-token`` is not taken for
    ``--max-tokens``: a prefix would silently change meaning when an option is added) and
    whose command says itself what it does not recognise, with its own usage line (argparse
    would leave that to the top-level parser, whose usage names no option)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        found, extras = super().parse_known_args(args, namespace)
        if extras and self.prog != "evalstream":
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return found, extras


def parser() -> Parser:
    """The evalstream argument parser."""
    top = Parser(
        prog="evalstream",
        description="Prepare and check LLM-judge evaluations at any scale: your data in, "
                    "exactly what each judge may see, verdicts, and their agreement.",
        epilog=WORKFLOW + "\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from evalstream._version import __version__

    top.add_argument("--version", action="version", version=f"evalstream {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                             parser_class=Parser)
    # Each command module imports only argparse at the top; its work is imported when it runs.
    from evalstream._cli import agree, batch, build, compare, convert, judge, rubrics, stats, view

    convert.register(sub)
    build.register(sub)
    stats.register(sub)
    judge.register(sub)
    batch.register(sub)
    agree.register(sub)
    compare.register(sub)
    rubrics.register(sub)
    view.register(sub)
    return top


def _error(message: str) -> None:
    print(f"evalstream: error: {message}", file=sys.stderr)


def _on_signal(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def _reader_gone() -> int:
    """Standard output's reader went away (``| head``): end quietly with 141, as Unix tools
    do, and keep the interpreter from complaining when it flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_PIPE


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
    except (BrokenPipeError, ReaderGone):
        return _reader_gone()
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
    except Exception:
        import traceback

        traceback.print_exc()
        _error("internal error (a bug in evalstream); no output was written.")
        return EXIT_INTERNAL
    except BaseException as exc:
        if isinstance(exc, (SystemExit, GeneratorExit)):
            raise
        # A native library's panic (pyo3's PanicException, e.g. a Rust tokenizer) is a
        # BaseException: still a bug, never "finished with rejects". The library has
        # already printed its own panic message.
        _error(f"internal error in a native library ({type(exc).__name__}: "
               f"{str(exc)[:200]}); no output was written. This is a bug: please report it.")
        return EXIT_INTERNAL
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
