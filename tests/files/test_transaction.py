"""``Transaction``: the one output transaction. Targets are refused before the run reads
anything; sidecars get the documented defaults; a failure anywhere (an error, Ctrl-C, exit,
SIGTERM, a target that cannot be created) leaves every target as it was and no temporary;
success commits every target; an optional target nothing went into is left out."""

from __future__ import annotations

import os
import signal
from contextlib import nullcontext
from pathlib import Path

import pytest

from evalstream._cli import Terminated
from evalstream._files import transaction
from evalstream._files.transaction import FOLDER, Target, Transaction
from evalstream.errors import OutputError, UsageError

# Earlier outputs of build: each may be replaced by its own kind.
OLD = {"states.jsonl": b'{"case_id": "c1", "rubric_id": "r", "question": "Q?", "state": {}}\n',
       "states.rejects.jsonl": b'{"line": 1, "offset": 0, "error": "e", "raw": "x"}\n',
       "states.report.json": b'{"command": "build", "evalstream": "0"}\n'}


def _build_targets(folder: Path, **kw: object) -> Transaction:
    """build's targets: states, with the rejects and report beside them by default."""
    return Transaction([("input", str(folder / "cases.jsonl"))], [
        Target("output", str(folder / "states.jsonl"), "judge states"),
        Target("rejects", kw.get("rejects"), "rejects",  # type: ignore[arg-type]
               beside=".rejects.jsonl", optional=True),
        Target("report", None, "json", beside=".report.json")], force=False)


def _listing(folder: Path) -> dict[str, bytes | None]:
    return {p.name: p.read_bytes() if p.is_file() else None for p in sorted(folder.iterdir())}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "cases.jsonl").write_bytes(b'{"id": "c1", "input": "i", "output": "o"}\n')
    for name, data in OLD.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize("stop", [RuntimeError("boom"), KeyboardInterrupt(), SystemExit(2),
                                  Terminated(15), OutputError("disk full")],
                         ids=lambda e: type(e).__name__)
def test_a_failure_in_the_middle_leaves_every_target_untouched(folder: Path,
                                                               stop: BaseException) -> None:
    before = _listing(folder)
    with pytest.raises(type(stop)):
        with _build_targets(folder) as targets:
            for role in ("output", "rejects", "report"):
                targets.open(role).write(b"NEW\n")
            assert len(_listing(folder)) == len(before) + 3  # the temporaries, beside
            raise stop
    assert _listing(folder) == before  # every target as it was, no temporary left


def test_a_target_that_cannot_be_created_leaves_no_temporary_of_the_others(
        folder: Path) -> None:
    targets = Transaction([], [Target("output", str(folder / "v.jsonl"), "verdicts"),
                               Target("rejects", None, "rejects", beside=".rejects.jsonl"),
                               Target("report", str(folder / "gone" / "r.json"), "json")])
    before = _listing(folder)
    with pytest.raises(OutputError, match="cannot create .*gone/r.json"):
        with targets:
            for role in ("output", "rejects", "report"):
                targets.open(role)
    assert _listing(folder) == before


def test_success_commits_every_target(folder: Path) -> None:
    with _build_targets(folder) as targets:
        for role in ("output", "rejects", "report"):
            targets.open(role).write(role.encode())
    assert _listing(folder) == {"cases.jsonl": (folder / "cases.jsonl").read_bytes(),
                                "states.jsonl": b"output", "states.rejects.jsonl": b"rejects",
                                "states.report.json": b"report"}


@pytest.mark.parametrize(("targets", "inputs", "message"), [
    # a target that is an input, two targets that are one file, two on one stream
    ([Target("output", "{d}/cases.jsonl", "judge states")], [("input", "{d}/cases.jsonl")],
     "the input and output paths are the same file"),
    ([Target("output", "{d}/s.jsonl", "judge states"), Target("report", "{d}/./s.jsonl", "json")],
     [], "the output and report paths are the same file"),
    ([Target("output", "-", "judge states"), Target("report", "/dev/stdout", "json")], [],
     "cannot both go to stdout"),
    # what an existing target holds: cases under build's output name
    ([Target("output", "{d}/more.jsonl", "judge states")], [],
     "more.jsonl holds a cases file, and this run would replace it with judge states"),
    # a folder holding an input; a folder of other files
    ([Target("export", "{d}", FOLDER, refusal=lambda _: "is mine")],
     [("cases file", "{d}/cases.jsonl")], "is inside the export folder"),
    ([Target("export", "{d}/notes", FOLDER, refusal=lambda _: "holds notes")], [],
     "notes exists and holds notes; choose a new folder, or give --force"),
    # a directory of parts over a folder of a user's files
    ([Target("output", "{d}/notes/", "judge states", directory=True)], [],
     "holds a.txt, which no directory output wrote"),
], ids=["input", "same-file", "stream", "replace", "folder-input", "folder", "directory"])
def test_a_refused_target_is_refused_before_the_run_reads_anything(
        folder: Path, targets: list[Target], inputs: list[tuple[str, str]],
        message: str) -> None:
    (folder / "more.jsonl").write_bytes(b'{"id": "c1", "input": "i", "output": "o"}\n')
    (folder / "notes").mkdir()
    (folder / "notes" / "a.txt").write_text("mine\n")
    before = _listing(folder)

    def spelled(path: str | None) -> str | None:
        return path.format(d=folder) if path is not None else None

    planned = Transaction([(role, spelled(p)) for role, p in inputs],
                          [Target(t.role, spelled(t.path), t.kind, refusal=t.refusal,
                                  directory=t.directory) for t in targets])
    ran = False
    with pytest.raises(UsageError, match=message):
        with planned:
            ran = True
    assert not ran  # the run's body (its reading) never started
    assert _listing(folder) == before


def test_the_checks_never_open_an_input(folder: Path) -> None:
    # A FIFO with no writer: opening it to read would block (the alarm fails the test then).
    os.mkfifo(folder / "pipe.jsonl")

    def blocked(signum: int, frame: object) -> None:
        pytest.fail("a check opened the input")

    earlier = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(20)
    try:
        with pytest.raises(UsageError, match="the input and report paths are the same file"):
            Transaction([("input", str(folder / "pipe.jsonl"))],
                        [Target("output", str(folder / "s.jsonl"), "judge states"),
                         Target("report", str(folder / "pipe.jsonl"), "json")]).check()
        Transaction([("input", str(folder / "pipe.jsonl"))],
                    [Target("output", str(folder / "s.jsonl"), "judge states"),
                     Target("rejects", None, "rejects", beside=".rejects.jsonl")]).check()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, earlier)


def test_force_replaces_another_kind_but_never_an_input(folder: Path) -> None:
    (folder / "more.jsonl").write_bytes(b'{"id": "c1", "input": "i", "output": "o"}\n')
    with Transaction([], [Target("output", str(folder / "more.jsonl"), "judge states")],
                     force=True) as targets:
        targets.open("output").write(b"states\n")
    assert (folder / "more.jsonl").read_bytes() == b"states\n"
    with pytest.raises(UsageError, match="is inside the export folder"):
        Transaction([("cases file", str(folder / "cases.jsonl"))],
                    [Target("export", str(folder), FOLDER, refusal=lambda _: None)],
                    force=True).check()


@pytest.mark.parametrize(("main", "beside_streams", "rejects", "report"), [
    ("states.jsonl", False, "states.rejects.jsonl", "states.report.json"),
    ("states.jsonl.gz", True, "states.rejects.jsonl", "states.report.json"),
    ("states.ndjson.zst", True, "states.rejects.jsonl", "states.report.json"),
    ("states.json", True, "states.rejects.jsonl", "states.report.json"),
    ("states", True, "states.rejects.jsonl", "states.report.json"),
    ("states/", True, "states/rejects.jsonl", "states/report.json"),  # inside a directory
    ("s3://bucket/states.jsonl", False, "s3://bucket/states.rejects.jsonl",
     "s3://bucket/states.report.json"),
    ("-", True, None, None),  # stdout: only those asked for
    ("fifo", True, "fifo.rejects.jsonl", "fifo.report.json"),  # judge, convert, collect
    ("fifo", False, None, None),  # build: beside a file or a new name only
])
def test_sidecars_derived_as_documented(tmp_path: Path, main: str, beside_streams: bool,
                                        rejects: str | None, report: str | None) -> None:
    os.mkfifo(tmp_path / "fifo")
    os.chdir(tmp_path)
    planned = Transaction([], [Target("output", main, "verdicts", directory=main.endswith("/")),
                               Target("rejects", None, "rejects", beside=".rejects.jsonl"),
                               Target("report", None, "json", beside=".report.json"),
                               Target("html", None, "html")], beside_streams=beside_streams)
    assert (planned.path("rejects"), planned.path("report")) == (rejects, report)
    assert planned.path("html") is None  # no default: written only when asked for
    given = Transaction([], [Target("output", main, "verdicts"),
                             Target("rejects", "mine.jsonl", "rejects", beside=".rejects.jsonl")])
    assert given.path("rejects") == "mine.jsonl"


def test_an_optional_target_nothing_went_into_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_bytes(b"")
    with _build_targets(tmp_path) as targets:
        targets.open("output").write(b"states\n")
        targets.open("rejects")
        targets.empty("rejects")
        assert targets.path("rejects") is None  # the report says: no rejects file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "states.jsonl"]


def test_an_optional_target_replaces_an_earlier_file_or_one_asked_for(folder: Path) -> None:
    # An earlier rejects file is replaced even when nothing is rejected now: a stale one
    # would mislead.
    with _build_targets(folder) as targets:
        targets.open("rejects")
        targets.empty("rejects")
        assert targets.path("rejects") == str(folder / "states.rejects.jsonl")
    assert (folder / "states.rejects.jsonl").read_bytes() == b""
    asked = str(folder / "asked.jsonl")
    with _build_targets(folder, rejects=asked) as targets:
        targets.open("rejects")
        targets.empty("rejects")
    assert (folder / "asked.jsonl").read_bytes() == b""


@pytest.mark.parametrize(("fmt", "output", "opened"), [
    ("table", "-", ["html"]), ("markdown", "-", ["html", "output"]),
    ("json", "report.json", ["html", "output"]), ("table", "report.txt", ["html", "output"]),
    ("table", None, ["html"]),
])
def test_a_report_and_its_page_are_committed_with_the_rejects(
        folder: Path, fmt: str, output: str | None, opened: list[str]) -> None:
    """stats, agree and compare: the report and page are the run's targets with its rejects,
    opened at once (a table for the terminal is printed after the commit, not opened), and
    committed all or none."""
    page, rejects = folder / "page.html", folder / "r.jsonl"
    report = str(folder / output) if output not in (None, "-") else output
    for fails in (True, False):
        targets = Transaction([], transaction.report_targets(report, fmt, str(page),
                                                             str(rejects)))
        with pytest.raises(RuntimeError) if fails else nullcontext(), targets:
            targets.open("rejects").write(b"")
            reports = transaction.open_reports(targets, fmt)
            assert sorted(reports) == opened
            for out in reports.values():
                out.write(b"written")
            if fails:
                raise RuntimeError("the run failed after the report was written")
        assert page.exists() == rejects.exists() == (not fails)
        if report not in (None, "-"):
            assert Path(report).exists() == (not fails)
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_report_and_the_rejects_cannot_share_stdout(folder: Path) -> None:
    with pytest.raises(UsageError, match="cannot both go to stdout"):
        Transaction([], transaction.report_targets("-", "json", None, "-")).check()


def test_checked_once(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = transaction.check_targets
    monkeypatch.setattr(transaction, "check_targets", lambda *a: calls.append(a) or real(*a))
    targets = _build_targets(folder)
    targets.check()
    with targets:
        pass
    assert len(calls) == 1
