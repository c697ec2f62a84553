"""Command line: parse arguments, call the library, map its errors to messages and exit codes.

Every command lives in its own module (``cli.build``, ``cli.stats``, ...) that registers
its subcommand and calls the library; this module maps what escapes them to an exit code,
in one place: an ``EvalstreamError`` by its ``exit_code`` (see ``evalstream.errors``),
Ctrl-C 130, SIGTERM 143, SIGHUP 129, anything else 70 (a bug: please report it), also a
native library's panic, which Python sees as a BaseException. Only
argparse is imported up front, and a command's module registers its options only when that
command runs (``Commands``), so that a command pays for no other command's start-up and
``--help`` stays cheaper than importing msgspec.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import Any, cast

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


# Every command, in the order `evalstream --help` lists them: the module of _cli/ whose
# `register` adds its parser (options, description, examples), and its line in that list.
COMMANDS = {
    "convert": ("convert", "turn other formats (OpenAI chats, traces, CSV, Parquet, inspect "
                           "logs, ...) into cases, and other tools' judges into verdicts"),
    "build": ("build", "write one judge state per applicable (case, rubric)"),
    "validate": ("build", "check the cases only; write nothing unless asked"),
    "stats": ("stats", "report what a dataset holds: groups, sizes, labels, checks, metadata"),
    "judge": ("judge", "ask an LLM judge for a verdict on every judge state"),
    "batch": ("batch", "judge through the providers' batch APIs: prepare, submit, status, "
                       "collect"),
    "agree": ("agree", "how well a judge's verdicts agree with the cases' expected labels"),
    "compare": ("compare", "what changed between two judge runs, pair by pair"),
    "rubrics": ("rubrics", "check rubric files and list what each rubric shows and when it "
                           "applies"),
    "view": ("view", "see each check as the judge saw it: pages served locally, or exported"),
}


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


class Commands(argparse._SubParsersAction):
    """The subcommands, each listed by its name and line (``COMMANDS``) and registered by its
    module only when it runs: registering every command's options read every API function's
    defaults and the judge providers' registry, ~20 ms of a build's CPU and ~40 of
    ``--version``'s (benchmarks/README.md, "Start-up")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unregistered: dict[str, str] = {}  # command -> its module, until it registers

    def add_unregistered(self, name: str, module: str, line: str) -> None:
        """List ``name`` (in ``--help`` and the choices); ``module`` registers it on use."""
        # Its line, as add_parser(help=...) lists it, and its name among the choices, which
        # argparse only looks up: no parser until it runs (one costs ~0.4 ms, mostly gettext).
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), line))
        self._name_parser_map[name] = None
        self.unregistered[name] = module

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        """The command's parser, as its module registers it; its line in ``--help`` stays
        the one ``COMMANDS`` gives."""
        if self.unregistered.pop(name, None) is not None:
            del self._name_parser_map[name]
            kwargs.pop("help", None)  # listed already
        return super().add_parser(name, **kwargs)

    def register(self, name: str) -> None:
        """Register ``name`` (and the commands its module registers with it), once."""
        module = self.unregistered.get(name)
        if module is not None:
            importlib.import_module(f"evalstream._cli.{module}").register(self)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        self.register(values[0])  # the command that runs: argparse has checked its name
        super().__call__(parser, namespace, values, option_string)


def parser(every_command: bool = True) -> Parser:
    """The evalstream argument parser: with every command registered, or (``every_command``
    False, as ``main`` runs) each registered when it is the command given."""
    top = Parser(
        prog="evalstream",
        description="Prepare and check LLM-judge evaluations at any scale: your data in, "
                    "exactly what each judge may see, verdicts, and their agreement.",
        epilog=WORKFLOW + "\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from evalstream._version import __version__

    top.add_argument("--version", action="version", version=f"evalstream {__version__}")
    sub = cast(Commands, top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                            parser_class=Parser, action=Commands))
    for name, (module, line) in COMMANDS.items():
        sub.add_unregistered(name, module, line)
    # Each command module imports only argparse at the top; its work is imported when it runs.
    for name in COMMANDS if every_command else ():
        sub.register(name)
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
    args = parser(every_command=False).parse_args(argv)
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
