"""The one way evalstream makes a rich ``Console``.

rich answers a closed standard output (``| head``) by pointing it at /dev/null and raising
``SystemExit(1)``, which would read as "finished with rejects". Here a broken pipe is a
``BrokenPipeError`` again, so the command line ends every command the same way: quietly,
with 141, as the shell reports a reader that went away.
"""

from __future__ import annotations

from typing import IO, Any

from rich.console import Console


class _Console(Console):
    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def terminal(file: IO[str], **options: Any) -> Console:
    """A rich console writing to ``file`` (other options as rich's)."""
    return _Console(file=file, **options)
