"""Writes are safe: kill -9, Ctrl-C, SIGTERM, a full disk, a file-size limit, an unwritable
or missing folder, an output that is the input. Targets are complete or untouched, a
previous output survives a failed run, temporary files go when the process can remove
them, and the error says what happened.

These run evalstream as a subprocess: signals, rlimits and mounts are process-level.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import ROOT, cli, cli_env

SAMPLES = ROOT / "data" / "samples" / "cases.jsonl"
# An earlier run's outputs (of the kinds written there: a run may replace them).
OLD = {"states.jsonl": b'{"case_id":"old","rubric_id":"r","question":"Q?","state":{}}\n',
       "states.rejects.jsonl": b'{"line":1,"offset":0,"error":"old","raw":"x"}\n',
       "states.report.json": b'{"command":"build","evalstream":"0.0.1"}\n'}


def _many_cases(copies: int) -> bytes:
    """The sample cases repeated with fresh ids: enough to outgrow a read block."""
    lines = SAMPLES.read_bytes().splitlines()
    return b"\n".join(line.replace(b'"id":"', b'"id":"copy%d-' % n, 1)
                      for n in range(copies) for line in lines) + b"\n"


def _old_outputs(folder: Path) -> None:
    for name, data in OLD.items():
        (folder / name).write_bytes(data)


def _assert_old_outputs_intact(folder: Path, names: tuple[str, ...] = tuple(OLD)) -> None:
    for name in names:
        assert (folder / name).read_bytes() == OLD[name], f"{name} was touched"




def _temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _default_sigint() -> None:
    # A child of a shell that ignores SIGINT would inherit that; Python installs its Ctrl-C
    # handler only when the signal is at its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_mid_run(folder: Path) -> subprocess.Popen[bytes]:
    """A build that has read part of its input from a pipe and waits for the rest."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstream", "build", "-", "states.jsonl", "--rejects",
         "states.rejects.jsonl", "--report", "states.report.json", "-q"],
        cwd=folder, env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, preexec_fn=_default_sigint)
    assert proc.stdin is not None
    proc.stdin.write(_many_cases(12))  # ~560 kB: more than one read block, not the end
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while len(_temp_files(folder)) < 3:  # all three targets are open under temporary names
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the build never started writing"
        time.sleep(0.02)
    time.sleep(0.3)  # let it process what it has and block on the pipe
    return proc


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    assert proc.stdin is not None and proc.stderr is not None
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    code = proc.wait(timeout=30)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return code, err


@pytest.mark.slow
def test_kill_9_mid_run_leaves_the_targets_untouched(tmp_path: Path) -> None:
    _old_outputs(tmp_path)
    proc = _start_mid_run(tmp_path)
    proc.kill()
    code, _ = _finish(proc)
    assert code == -signal.SIGKILL
    _assert_old_outputs_intact(tmp_path)
    # A killed process cannot clean up: its hidden temporaries stay, never under a target's
    # name, named for the dead run. A run of other targets leaves them; the next run of
    # these targets removes them (and only them).
    stale = _temp_files(tmp_path)
    assert len(stale) == 3 and all(name.startswith(".states.") for name in stale)
    assert all(f".{proc.pid}-" in name for name in stale), stale
    (tmp_path / "in.jsonl").write_bytes(_many_cases(2))
    done = cli("build", "in.jsonl", "other.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _temp_files(tmp_path) == stale
    done = cli("build", "in.jsonl", "states.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "states.jsonl").read_bytes().count(b"\n") == 2 * 247
    assert _temp_files(tmp_path) == []


@pytest.mark.slow
def test_a_live_runs_temporaries_are_never_removed(tmp_path: Path) -> None:
    proc = _start_mid_run(tmp_path)
    try:
        live = _temp_files(tmp_path)
        # Another machine's (or boot's) temporaries look dead here and must stay too.
        foreign = ".states.jsonl.999999999-0123abcd.abcdefgh.tmp"
        (tmp_path / foreign).write_bytes(b"")
        (tmp_path / "in.jsonl").write_bytes(_many_cases(1))
        done = cli("build", "in.jsonl", "states.jsonl", "-q", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert _temp_files(tmp_path) == sorted([*live, foreign])
    finally:
        proc.kill()
        _finish(proc)


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "message"), [
    (signal.SIGINT, 130, "interrupted; no output was written."),
    (signal.SIGTERM, 143, "terminated; no output was written."),
    (signal.SIGHUP, 129, "hung up; no output was written."),
])
def test_ctrl_c_and_sigterm_remove_temporaries_and_keep_old_outputs(
        tmp_path: Path, signum: int, code: int, message: str) -> None:
    _old_outputs(tmp_path)
    proc = _start_mid_run(tmp_path)
    proc.send_signal(signum)
    got, err = _finish(proc)
    assert got == code, err
    assert message in err and "Traceback" not in err
    _assert_old_outputs_intact(tmp_path)
    assert _temp_files(tmp_path) == []


def _file_size_limit(limit: int) -> None:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply  # type: ignore[return-value]


def test_file_size_limit_is_an_io_error_and_old_outputs_survive(tmp_path: Path) -> None:
    _old_outputs(tmp_path)
    (tmp_path / "in.jsonl").write_bytes(SAMPLES.read_bytes())  # 261 kB of states
    done = cli("build", "in.jsonl", "states.jsonl", "-q", cwd=tmp_path,
               preexec_fn=_file_size_limit(64 << 10))
    assert done.returncode == 2
    assert b"evalstream: error: cannot write states.jsonl: File too large" in done.stderr
    assert b"Traceback" not in done.stderr
    _assert_old_outputs_intact(tmp_path)
    assert _temp_files(tmp_path) == []


def test_a_failed_states_file_leaves_the_old_rejects(tmp_path: Path) -> None:
    _old_outputs(tmp_path)
    (tmp_path / "in.jsonl").write_bytes(SAMPLES.read_bytes())
    done = cli("build", "in.jsonl", "states.jsonl", "-q", cwd=tmp_path,
               preexec_fn=_file_size_limit(64 << 10))
    assert done.returncode == 2
    _assert_old_outputs_intact(tmp_path)


def test_a_failed_report_leaves_the_other_targets_untouched(tmp_path: Path) -> None:
    _old_outputs(tmp_path)
    # No rubric applies (the case has no policy), so states and rejects are empty; the
    # report (~0.7 kB) is not.
    (tmp_path / "in.jsonl").write_bytes(b'{"id":"a","input":"x","output":"y"}\n')
    (tmp_path / "r.toml").write_text('[[rubric]]\nid = "p"\nquestion = "Is policy kept?"\n'
                                     'shows = ["policy"]\nrequires = ["policy"]\n')
    done = cli("build", "in.jsonl", "states.jsonl", "--rubrics", "r.toml", "-q", cwd=tmp_path,
               preexec_fn=_file_size_limit(500))
    assert done.returncode == 2
    assert b"cannot write states.report.json" in done.stderr
    _assert_old_outputs_intact(tmp_path)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (skipped where the machine does not allow mounting)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_full_disk_is_an_io_error_and_old_outputs_survive(tiny_tmpfs: Path) -> None:
    _old_outputs(tiny_tmpfs)
    done = cli("build", str(SAMPLES), "states.jsonl", "-q", cwd=tiny_tmpfs)
    assert done.returncode == 2
    assert b"cannot write states.jsonl: No space left on device" in done.stderr
    assert b"Traceback" not in done.stderr
    _assert_old_outputs_intact(tiny_tmpfs)
    assert _temp_files(tiny_tmpfs) == []


def test_unwritable_folder_is_an_io_error(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() == 0:  # root ignores permission bits: make the folder read-only instead
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs",
                               str(folder)], capture_output=True)
        if made.returncode != 0:
            pytest.skip("running as root and cannot mount a read-only tmpfs")
        expected = b"Read-only file system"
    else:
        folder.chmod(0o555)
        expected = b"Permission denied"
    try:
        done = cli("build", str(SAMPLES), str(folder / "states.jsonl"), "-q", cwd=tmp_path)
        assert done.returncode == 2
        assert b"evalstream: error: cannot create " in done.stderr and expected in done.stderr
        assert os.listdir(folder) == []
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def test_missing_folder_is_an_io_error(tmp_path: Path) -> None:
    done = cli("build", str(SAMPLES), "no/such/dir/states.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 2
    assert b"cannot create no/such/dir/states.jsonl: No such file or directory" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("how", ["same", "dot", "symlink", "hardlink", "rejects", "report"])
def test_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path: Path,
                                                                  how: str) -> None:
    data = SAMPLES.read_bytes()
    (tmp_path / "cases.jsonl").write_bytes(data)
    args = ["build", "cases.jsonl", "states.jsonl", "-q"]
    if how == "same":
        args[2] = "cases.jsonl"
    elif how == "dot":
        args[2] = "./sub/../cases.jsonl"
        (tmp_path / "sub").mkdir()
    elif how == "symlink":
        (tmp_path / "link.jsonl").symlink_to("cases.jsonl")
        args[2] = "link.jsonl"
    elif how == "hardlink":
        os.link(tmp_path / "cases.jsonl", tmp_path / "hard.jsonl")
        args[2] = "hard.jsonl"
    else:
        args += [f"--{how}", "cases.jsonl"]
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert b"are the same file" in done.stderr
    assert (tmp_path / "cases.jsonl").read_bytes() == data
    assert not (tmp_path / "states.jsonl").exists()
    assert _temp_files(tmp_path) == []


def test_a_pipe_or_device_output_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "evalstream", "build", str(SAMPLES),
                             str(fifo), "--rejects", "r.jsonl", "--report", "r.json", "-q"],
                            cwd=tmp_path, env=cli_env(), stderr=subprocess.PIPE)
    # Read as `build cases.jsonl /dev/stdout` or a named pipe would be read, but without
    # blocking: a build that replaced the pipe by a file would never open it for writing.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    data, deadline = b"", time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                chunk = None  # a writer is there, nothing to read yet
            if chunk:
                data += chunk
            elif proc.poll() is not None:
                break
            else:
                time.sleep(0.01)
    finally:
        os.close(fd)
    assert proc.wait(timeout=60) == 0
    assert proc.stderr is not None and proc.stderr.read() == b""
    proc.stderr.close()
    assert data.count(b"\n") == 247
    assert fifo.is_fifo(), "the pipe was replaced by a regular file"
    assert _temp_files(tmp_path) == []


def test_a_symlinked_output_keeps_its_link(tmp_path: Path) -> None:
    (tmp_path / "real.jsonl").write_bytes(OLD["states.jsonl"])
    (tmp_path / "link.jsonl").symlink_to("real.jsonl")
    done = cli("build", str(SAMPLES), "link.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link.jsonl").is_symlink()
    assert (tmp_path / "real.jsonl").read_bytes().count(b"\n") == 247


@pytest.mark.slow
@pytest.mark.parametrize("target", ["folder", "folder/", "missing/"])
def test_a_folder_as_output_is_refused_before_reading(tmp_path: Path, target: str) -> None:
    (tmp_path / "folder").mkdir()
    # stdin stays open and empty: had build started reading, it would wait for ever.
    proc = subprocess.Popen([sys.executable, "-m", "evalstream", "build", "-", target,
                             "--rejects", "r.jsonl", "--report", "r.json", "-q"],
                            cwd=tmp_path, env=cli_env(), stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.wait(timeout=30) == 2
    finally:
        proc.kill()
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.close()
        err = proc.stderr.read()
        proc.stderr.close()
    assert b"that names a directory; give a file name." in err
    assert not (tmp_path / "r.json").exists()


def test_a_bad_rubric_file_keeps_old_outputs(tmp_path: Path) -> None:
    _old_outputs(tmp_path)
    (tmp_path / "r.toml").write_text("[[rubric]\n")
    done = cli("build", str(SAMPLES), "states.jsonl", "--rubrics", "r.toml", "-q", cwd=tmp_path)
    assert done.returncode == 2
    _assert_old_outputs_intact(tmp_path)
    assert _temp_files(tmp_path) == []


def test_commit_all_replaces_every_target_or_none(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from evalstream._files.outputs import AtomicOutput, OutputError, commit_all

    _old_outputs(tmp_path)
    outputs = [AtomicOutput(str(tmp_path / name)) for name in OLD]
    for output in outputs:
        output.write(b"NEW\n")
    failing = outputs[-1]._raw
    assert failing is not None

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(failing, "flush", full)
    with pytest.raises(OutputError, match=r"cannot write .*states\.report\.json: No space left"):
        commit_all(outputs)
    _assert_old_outputs_intact(tmp_path)
    assert _temp_files(tmp_path) == []
    outputs = [AtomicOutput(str(tmp_path / name)) for name in OLD]
    for output in outputs:
        output.write(b"NEW\n")
    commit_all(outputs)
    assert all((tmp_path / name).read_bytes() == b"NEW\n" for name in OLD)


# -- the write-behind thread of build's output ------------------------------------------------
def test_write_behind_keeps_the_order_of_every_piece(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstream._files import outputs as sink

    monkeypatch.setattr(sink._WriteBehind, "BATCH", 7)  # a hand-over every few pieces
    out = sink.AtomicOutput(str(tmp_path / "states.jsonl"))
    out.write_behind()
    pieces = [b"%d," % i for i in range(5_000)]
    for at in range(0, len(pieces), 3):
        out.write_all(pieces[at:at + 3])
    out.commit()
    assert (tmp_path / "states.jsonl").read_bytes() == b"".join(pieces)


def test_write_behind_reports_a_failed_write_and_the_target_is_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from evalstream._files import outputs as sink

    _old_outputs(tmp_path)
    monkeypatch.setattr(sink._WriteBehind, "BATCH", 4)
    written: list[int] = []

    def full(fd: int, buffers: list[bytes]) -> int:
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(fd)
        return sum(map(len, buffers))

    monkeypatch.setattr(sink.os, "writev", full)
    out = sink.AtomicOutput(str(tmp_path / "states.jsonl"))
    out.write_behind()
    raised = None
    for _ in range(10_000):  # the thread's error comes back on a later write
        try:
            out.write_all([b"12345"])
        except sink.OutputError as exc:
            raised = exc
            break
        time.sleep(0.001)
    assert raised is not None and "cannot write" in str(raised) and "No space left" in str(raised)
    out.abort()
    _assert_old_outputs_intact(tmp_path)
    assert _temp_files(tmp_path) == []
