"""``commit_all``: every target replaced, or none; and when a rename fails after the check
anyway, the error names exactly which targets hold the new output and which do not."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evalstream._files import outputs
from evalstream._files.outputs import AtomicOutput, commit_all
from evalstream.errors import OutputError

NAMES = ("states.jsonl", "states.rejects.jsonl", "states.report.json")


def _outputs(folder: Path) -> list[AtomicOutput]:
    for name in NAMES:
        (folder / name).write_bytes(b"OLD\n")
    made = [AtomicOutput(str(folder / name)) for name in NAMES]
    for output in made:
        output.write(b"NEW\n")
    return made


def _contents(folder: Path) -> dict[str, bytes | None]:
    return {p.name: p.read_bytes() if p.is_file() else None for p in sorted(folder.iterdir())}


def test_a_target_replaced_by_a_folder_mid_run_leaves_every_target(tmp_path: Path) -> None:
    made = _outputs(tmp_path)
    (tmp_path / "states.report.json").unlink()
    (tmp_path / "states.report.json").mkdir()
    with pytest.raises(OutputError, match=r"cannot replace .*states\.report\.json: it is now a "
                                          r"folder; no target was replaced\."):
        commit_all(made)
    assert _contents(tmp_path) == {"states.jsonl": b"OLD\n", "states.rejects.jsonl": b"OLD\n",
                                   "states.report.json": None}


def test_an_immutable_target_leaves_every_target(tmp_path: Path) -> None:
    made = _outputs(tmp_path)
    report = tmp_path / "states.report.json"
    if subprocess.run(["chattr", "+i", str(report)], capture_output=True).returncode != 0:
        for output in made:
            output.abort()
        pytest.skip("chattr +i is not allowed here")
    try:
        with pytest.raises(OutputError, match=r"states\.report\.json: it is immutable or "
                                              r"append-only .*no target was replaced"):
            commit_all(made)
    finally:
        subprocess.run(["chattr", "-i", str(report)], check=True)
    assert set(_contents(tmp_path).values()) == {b"OLD\n"}  # and no temporary left


def test_an_unwritable_folder_found_before_any_rename(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    made = _outputs(tmp_path)
    real_access = os.access
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: False if mode & os.W_OK
                        and str(path) == str(tmp_path) else real_access(path, mode))
    with pytest.raises(OutputError, match="its folder .* is not writable; no target"):
        commit_all(made)
    monkeypatch.undo()
    assert set(_contents(tmp_path).values()) == {b"OLD\n"}


def test_a_rename_that_fails_after_the_check_names_what_was_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _outputs(tmp_path)
    real_replace = os.replace

    def third_fails(src: str, dst: str) -> None:
        if dst.endswith("states.report.json"):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        real_replace(src, dst)

    monkeypatch.setattr(outputs.os, "replace", third_fails)
    with pytest.raises(OutputError) as caught:
        commit_all(made)
    message = str(caught.value)
    assert "cannot write" in message and "states.report.json: Operation not permitted" in message
    assert "nothing" not in message and "no target was replaced" not in message
    assert (f"Only part of the output was written: {tmp_path}/states.jsonl and "
            f"{tmp_path}/states.rejects.jsonl hold this run's output, "
            f"{tmp_path}/states.report.json was not replaced") in message
    assert _contents(tmp_path) == {"states.jsonl": b"NEW\n", "states.rejects.jsonl": b"NEW\n",
                                   "states.report.json": b"OLD\n"}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another user")
def test_another_users_file_in_a_sticky_folder(tmp_path: Path) -> None:
    import sys
    import tempfile

    from tests.reliability.support import ROOT, cli_env

    # /tmp itself is not used: other tests' files live there. A folder like it, world
    # writable with the sticky bit, outside pytest's own (private) temporary folders.
    sticky = Path(tempfile.mkdtemp(prefix="evalstream-sticky-", dir="/tmp"))
    try:
        sticky.chmod(0o1777)
        for name in NAMES:
            (sticky / name).write_bytes(b"")  # owned by root; empty: a run may write it
            (sticky / name).chmod(0o666)  # even writable by all: still not replaceable

        # The interpreter lives where `nobody` may not read (/root): the child starts as
        # root, imports what the run needs, then becomes `nobody` before it writes anything.
        child = ("import os, sys, traceback; import evalstream._cli as cli, evalstream._cli.build, "
                 "evalstream._build.run, evalstream._build.ranges, "
                 "evalstream._render.summary, evalstream._checks.rubrics as r; r.builtin(); "
                 "os.setgid(65534); os.setuid(65534); "
                 "sys.exit(cli.main(sys.argv[1:]))")
        done = subprocess.run([sys.executable, "-c", child, "build",
                               str(ROOT / "data/samples/cases.jsonl"), "states.jsonl", "-q"],
                              cwd=sticky, env=cli_env(), capture_output=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert (b"cannot replace states.jsonl: it belongs to another user, in a folder where "
                b"only a file's owner may replace it") in done.stderr
        assert _contents(sticky) == dict.fromkeys(NAMES, b"")
    finally:
        shutil.rmtree(sticky)


@pytest.mark.parametrize("fails_after", [0, 1])
def test_a_splice_the_kernel_cannot_copy_goes_through_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails_after: int) -> None:
    # copy_file_range refuses some file systems (EXDEV, EINVAL, EOPNOTSUPP...): the part is
    # then copied through Python from where the kernel stopped, the same bytes in the end.
    part = tmp_path / "part"
    part.write_bytes(b"".join(b"line %d\n" % i for i in range(5000)))
    calls = []
    copy = os.copy_file_range

    def refusing(fd_in: int, fd_out: int, count: int, offset_src: int | None = None) -> int:
        calls.append(count)
        if len(calls) > fails_after:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return copy(fd_in, fd_out, min(count, 1000), offset_src)

    monkeypatch.setattr(outputs.os, "copy_file_range", refusing)
    out = AtomicOutput(str(tmp_path / "states.jsonl"))
    out.write(b"head\n")
    out.splice(str(part), 7, 30_000)
    out.write(b"tail\n")
    out.finish()
    commit_all([out])
    assert calls  # the kernel was asked first
    assert (tmp_path / "states.jsonl").read_bytes() == \
        b"head\n" + part.read_bytes()[7:30_000] + b"tail\n"


def test_a_splice_that_fails_for_another_reason_is_a_write_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    part = tmp_path / "part"
    part.write_bytes(b"x\n" * 100)

    def full(fd_in: int, fd_out: int, count: int, offset_src: int | None = None) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs.os, "copy_file_range", full)
    out = AtomicOutput(str(tmp_path / "states.jsonl"))
    with pytest.raises(OutputError, match="No space left on device"):
        out.splice(str(part), 0, 200)
    out.abort()
