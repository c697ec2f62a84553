"""Run one command and report its wall time, CPU time and peak RSS as one JSON line.

``python -S -I benchmarks/measure.py TIMEOUT STDERR_FILE -- CMD ARGS...``

This runs as its own small process (standard library only, no ``site``) because Linux
carries the peak RSS of whichever process spawns a command into that command's ``ru_maxrss``:
spawned from the benchmark runner, every command would report at least the runner's RSS.
From here the floor is this interpreter's ~8-10 MiB. The command inherits the working
directory and environment; its stdin and stdout are ``/dev/null`` and its stderr goes to
``STDERR_FILE``. It is killed (SIGKILL) after ``TIMEOUT`` seconds.

Output on stdout: ``{"exit_code": int, "wall_s": float, "cpu_s": float, "max_rss_kib": int}``;
``max_rss_kib`` covers the command and the descendants it waited for.
"""

import json
import os
import signal
import sys
import time


def measure(argv: list[str], stderr_path: str, timeout: float) -> dict[str, float | int]:
    """Run ``argv`` to completion (or until ``timeout``) and return its measurements."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
    signal.setitimer(signal.ITIMER_REAL, timeout)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    signal.setitimer(signal.ITIMER_REAL, 0)
    return {
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_kib": usage.ru_maxrss,
    }


def main(args: list[str]) -> int:
    """Parse ``TIMEOUT STDERR_FILE -- CMD...``, measure, print the JSON line."""
    if len(args) < 4 or args[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(measure(args[3:], args[1], float(args[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
