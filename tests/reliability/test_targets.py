"""Colliding targets through every command that writes: a target that is an input (cases,
rubrics, verdicts), two targets that are one file (also one not yet created, reached through
a symlinked folder), two targets on one stream. Each is exit 2 before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .support import ROOT, cli, cli_env

SAMPLES = ROOT / "data" / "samples"
RUBRIC = '[[rubric]]\nid = "r1"\nquestion = "Is it right?"\nshows = ["user_input"]\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "c.jsonl").write_bytes((SAMPLES / "cases.jsonl").read_bytes())
    verdicts = [{"case_id": json.loads(line)["id"], "rubric_id": "r1", "status": "pass"}
                for line in (SAMPLES / "cases.jsonl").read_text().splitlines()]
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    (tmp_path / "r.toml").write_text(RUBRIC)
    (tmp_path / "q.csv").write_bytes((SAMPLES / "qa.csv").read_bytes())
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    return tmp_path


def _listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


# One new file reached as link/x and real/x, for each command and pair of its targets.
SYMLINKED = [
    ["build", "c.jsonl", "link/s.jsonl", "--report", "real/s.jsonl"],
    ["build", "c.jsonl", "s.jsonl", "--rejects", "link/x.jsonl", "--report", "real/x.jsonl"],
    ["validate", "c.jsonl", "--rejects", "link/x.jsonl", "--report", "real/x.jsonl"],
    ["stats", "c.jsonl", "-o", "link/s.json", "--html", "real/s.json"],
    ["stats", "c.jsonl", "--html", "link/s.html", "--rejects", "real/s.html"],
    ["agree", "v.jsonl", "c.jsonl", "-o", "link/a.json", "--rejects", "real/a.json"],
    ["agree", "v.jsonl", "c.jsonl", "--html", "link/a.html", "-o", "./real/../link/a.html"],
    ["compare", "v.jsonl", "v.jsonl", "-o", "link/a.json", "--html", "real/a.json"],
    ["convert", "q.csv", "link/c.jsonl", "--report", "real/c.jsonl"],
    ["convert", "q.csv", "c.jsonl", "--rejects", "link/x.jsonl", "--report", "real/x.jsonl"],
]
# An input of the run as one of its targets.
INPUTS = [
    ["build", "c.jsonl", "r.toml", "--rubrics", "r.toml"],
    ["build", "c.jsonl", "s.jsonl", "--rubrics", "r.toml", "--report", "r.toml"],
    ["build", "c.jsonl", "s.jsonl", "--rubrics", "r.toml", "--rejects", "./r.toml"],
    ["stats", "c.jsonl", "--rubrics", "r.toml", "-o", "r.toml", "--format", "json"],
    ["stats", "c.jsonl", "--rubrics", "r.toml", "--html", "link/../r.toml"],
    ["agree", "v.jsonl", "c.jsonl", "--rejects", "c.jsonl"],
    ["agree", "v.jsonl", "c.jsonl", "--html", "v.jsonl"],
    ["compare", "v.jsonl", "c.jsonl", "-o", "c.jsonl"],
    ["convert", "q.csv", "q.csv"],
    ["convert", "q.csv", "out.jsonl", "--rejects", "link/../q.csv"],
]
# Two targets on stdout.
STREAMS = [
    ["build", "c.jsonl", "-", "--report", "-"],
    ["build", "c.jsonl", "s.jsonl", "--rejects", "-", "--report", "-"],
    ["build", "c.jsonl", "-", "--rejects", "/dev/stdout"],
    ["build", "c.jsonl", "-", "--rejects", "/proc/self/fd/1"],
    ["validate", "c.jsonl", "--format", "json", "--report", "/dev/stdout"],
    ["stats", "c.jsonl", "--html", "/dev/stdout"],
    ["agree", "v.jsonl", "c.jsonl", "--rejects", "/dev/stdout"],
    ["compare", "v.jsonl", "v.jsonl", "--format", "json", "--html", "-"],
    ["convert", "q.csv", "-", "--rejects", "/dev/stdout", "--report", "r.json"],
]


@pytest.mark.slow
@pytest.mark.parametrize("args", SYMLINKED + INPUTS + STREAMS,
                         ids=lambda a: " ".join(a))
def test_colliding_targets_are_refused_before_anything_is_written(folder: Path,
                                                                  args: list[str]) -> None:
    before = _listing(folder)
    done = cli(*args, cwd=folder)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert ("are the same file" in err or "cannot both go to stdout" in err), err
    assert "Traceback" not in err
    assert done.stdout == b""
    assert _listing(folder) == before  # nothing written, nothing replaced, no temporary


def test_dev_null_may_take_every_target(folder: Path) -> None:
    done = cli("build", "c.jsonl", "/dev/null", "--rejects", "/dev/null", "--report",
               "/dev/null", "-q", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()


def test_stdout_redirected_to_a_named_target_is_refused(folder: Path) -> None:
    with open(folder / "out.txt", "wb") as out:
        done = subprocess.run([sys.executable, "-m", "evalstream", "build", "c.jsonl", "-",
                               "--rejects", "out.txt", "--report", "rep.json", "-q"],
                              cwd=folder, env=cli_env(), stdout=out, stderr=subprocess.PIPE,
                              timeout=120)
    assert done.returncode == 2
    assert b"the output and the rejects cannot both go to stdout (- and out.txt)" in done.stderr
    assert (folder / "out.txt").read_bytes() == b""


@pytest.mark.slow
def test_agree_writes_its_rejects_and_results_together_or_not_at_all(folder: Path) -> None:
    (folder / "v.jsonl").write_text((folder / "v.jsonl").read_text() + "not a verdict\n")
    (folder / "out.json").mkdir()  # -o cannot be written: found after the rejects were made
    done = cli("agree", "v.jsonl", "c.jsonl", "--rejects", "r.jsonl", "-o", "out.json",
               cwd=folder)
    assert done.returncode == 2, done.stderr
    assert b"that names a directory" in done.stderr
    assert not (folder / "r.jsonl").exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_stats_writes_rejects_report_and_page_together_or_not_at_all(folder: Path) -> None:
    (folder / "c.jsonl").write_text((folder / "c.jsonl").read_text() + "not a case\n")
    (folder / "page.html").write_text("<title>evalstream stats</title> OLD")  # an earlier page
    if subprocess.run(["chattr", "+i", str(folder / "page.html")],
                      capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not allowed here")
    try:
        done = cli("stats", "c.jsonl", "--rejects", "r.jsonl", "--format", "json", "-o",
                   "s.json", "--html", "page.html", cwd=folder)
    finally:
        subprocess.run(["chattr", "-i", str(folder / "page.html")], check=True)
    assert done.returncode == 2, done.stderr
    assert b"cannot replace page.html: it is immutable" in done.stderr
    assert not (folder / "r.jsonl").exists() and not (folder / "s.json").exists()
    assert (folder / "page.html").read_text() == "<title>evalstream stats</title> OLD"
