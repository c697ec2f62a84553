"""Runs with worker processes under attack: a worker killed, the parent killed, Ctrl-C,
SIGTERM and SIGHUP to the whole process group, a file-size limit. The run ends at once with
the documented exit code and one sentence (no traceback from any process), leaves no
temporary where a process lives to remove it, and leaves no worker behind."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .support import ROOT, cli, cli_env

pytestmark = pytest.mark.slow
SAMPLES = ROOT / "data" / "samples" / "cases.jsonl"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """64 MiB of cases (four 16 MiB ranges): seconds of work for two workers."""
    lines = SAMPLES.read_bytes().splitlines()
    path = tmp_path_factory.mktemp("workers") / "cases.jsonl"
    with open(path, "wb") as f:
        n = 0
        while f.tell() < 64 << 20:
            f.write(b"\n".join(line.replace(b'"id":"', b'"id":"c%d-' % n, 1)
                               for line in lines) + b"\n")
            n += 1
    return path


OLD = b'{"case_id":"old","rubric_id":"r","question":"Q?","state":{}}\n'  # an earlier run's


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _start(folder: Path, big: Path, *extra: str, **kwargs: object) -> tuple[
        subprocess.Popen[bytes], list[int]]:
    """A build with two workers, once both workers run."""
    proc = subprocess.Popen([sys.executable, "-m", "evalstream", "build", str(big),
                             "states.jsonl", "--workers", "2", "-q", *extra],
                            cwd=folder, env=cli_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, **kwargs)  # type: ignore[call-overload]
    deadline = time.monotonic() + 60
    while len(workers := _children(proc.pid)) < 2:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.005)
    return proc, workers


def _end(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=60), err


def _gone(pids: list[int], within: float = 5) -> None:
    deadline = time.monotonic() + within
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, f"workers {pids} outlived the run"
        time.sleep(0.02)


def test_a_killed_worker_ends_the_run_cleanly(tmp_path: Path, big: Path) -> None:
    (tmp_path / "states.jsonl").write_bytes(OLD)
    started = time.monotonic()
    proc, workers = _start(tmp_path, big)
    os.kill(workers[0], signal.SIGKILL)
    code, err = _end(proc)
    assert time.monotonic() - started < 60
    assert code == 2, err
    assert err.startswith("evalstream: error: a worker process died (killed by SIGKILL) while "
                          "working on bytes "), err
    assert f"of {big}; nothing was written." in err and "Traceback" not in err
    _gone(workers)
    assert (tmp_path / "states.jsonl").read_bytes() == OLD
    assert _leftovers(tmp_path) == []  # no temporary file, no part folder


def test_a_killed_parent_takes_its_workers_and_the_next_run_cleans_up(tmp_path: Path,
                                                                      big: Path) -> None:
    proc, workers = _start(tmp_path, big)
    time.sleep(0.3)  # part files are being written
    proc.kill()
    code, _ = _end(proc)
    assert code == -signal.SIGKILL
    _gone(workers)  # PR_SET_PDEATHSIG
    stale = _leftovers(tmp_path)
    # Beside the output, each named for it and for the dead run: the parts folder too.
    whose = f".states.jsonl.{proc.pid}-"
    assert any(n.startswith(whose) and n.endswith(".evalstream-parts") for n in stale), stale
    assert any(n.startswith(whose) and n.endswith(".tmp") for n in stale), stale
    done = cli("build", str(SAMPLES), "other.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _leftovers(tmp_path) == stale  # another output's run leaves them
    # The next normal run of the same output (one process, no workers) removes them all.
    done = cli("build", str(SAMPLES), "states.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(("signum", "code", "message"), [
    (signal.SIGINT, 130, "interrupted; no output was written."),
    (signal.SIGTERM, 143, "terminated; no output was written."),
    (signal.SIGHUP, 129, "hung up; no output was written."),
])
def test_signals_to_the_process_group(tmp_path: Path, big: Path, signum: int, code: int,
                                      message: str) -> None:
    # Ctrl-C, a closed terminal and `kill -TERM -PGID` reach every process of the group.
    proc, workers = _start(tmp_path, big,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(0.3)
    os.killpg(proc.pid, signum)
    got, err = _end(proc)
    assert got == code, err
    assert err == f"evalstream: error: {message}\n"  # no traceback from a worker either
    _gone(workers)
    assert _leftovers(tmp_path) == []


def test_a_file_size_limit_in_the_workers_is_cannot_write(tmp_path: Path, big: Path) -> None:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    done = cli("build", str(big), "states.jsonl", "--workers", "2", "-q", cwd=tmp_path,
               preexec_fn=limit)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err == "evalstream: error: cannot write states.jsonl: File too large\n"
    assert _leftovers(tmp_path) == []


def test_a_full_disk_in_the_workers_is_cannot_write(tmp_path: Path, big: Path) -> None:
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        done = cli("build", str(big), "states.jsonl", "--workers", "2", "-q", cwd=mount)
        err = done.stderr.decode()
        assert done.returncode == 2, err
        assert err == "evalstream: error: cannot write states.jsonl: No space left on device\n"
        assert os.listdir(mount) == []
    finally:
        subprocess.run(["umount", str(mount)], check=True)
