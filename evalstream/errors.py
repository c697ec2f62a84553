"""evalstream's errors: one tree under ``EvalstreamError``, each class with its exit code.

The command line maps these to exit codes in one place (``evalstream._cli``); the Python API
raises them as they are. Anything else that escapes a command is a bug (exit 70).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REJECTS = 1  # finished, with rejected lines (or unscored verdicts above a threshold)
EXIT_USAGE = 2  # usage, input or I/O error: nothing was written
EXIT_INCOMPLETE = 3  # stopped by a limit the user set (--max-cost, --max-requests): resumable
EXIT_WRONG_FILE = 4  # the input is plainly not the kind of file the command reads
EXIT_INTERNAL = 70  # a bug in evalstream (EX_SOFTWARE); never a verdict on the data
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_HANGUP = 129
EXIT_PIPE = 141  # the reader of standard output closed it (128 + SIGPIPE, as shells report it)


class EvalstreamError(Exception):
    """Base of every error evalstream raises on purpose; ``exit_code`` is the CLI's."""

    exit_code = EXIT_USAGE


class UsageError(EvalstreamError):
    """The command line or API call asks for something that cannot be done."""


class UnknownOptionError(UsageError, TypeError):
    """An API function was given a keyword it does not take (a TypeError too, as Python's
    own would be); the message names the nearest option and all of them."""


class RubricError(UsageError, ValueError):
    """A rubric file cannot be used; the message names the file, the rubric and the key."""


class JuryError(UsageError, ValueError):
    """A jury file cannot be used; the message names the file, the juror and the key."""


class InputError(EvalstreamError):
    """An input could not be opened or read to its end."""


class WrongFileError(InputError):
    """An input is plainly not the kind of file the command reads (a CSV given as cases)."""

    exit_code = EXIT_WRONG_FILE


class OutputError(EvalstreamError):
    """An output could not be created, written or moved into place."""


class ReaderGone(OutputError):
    """The program reading evalstream's standard output closed it (``| head``)."""

    exit_code = EXIT_PIPE


class SetupError(EvalstreamError):
    """evalstream's installation cannot do the job (a missing package, a changed data file);
    the message names the fix."""
