"""The README and docs/ are true: every example marked ```console runs on a copy of the samples
and prints the lines shown, every relative link and #anchor resolves, and the set-up commands are
the ones CI runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.helpers import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
ELIDED = "..."
# Timings differ run to run; both sides read them as the same figure.
SECONDS = re.compile(r"\b\d+(?:\.\d+)? s\b")


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def transcripts(text: str) -> list[tuple[str, list[str]]]:
    """Each `$ command` of the page's ```console blocks with the lines shown under it; a command
    ending in a backslash continues on the next line."""
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.S | re.M):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                raise AssertionError(f"a console block must start with `$ `: {line!r}")
            command = line[2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            i += 1
            shown = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            found.append((command, shown))
    return found


def _normal(line: str) -> str:
    return SECONDS.sub("N s", line.rstrip())


def _pattern(line: str) -> re.Pattern[str]:
    # `...` inside a shown line stands for any text there (a long raw line, say).
    return re.compile(".*".join(re.escape(part) for part in _normal(line).split(ELIDED)), re.S)


def matches(shown: list[str], printed: list[str]) -> bool:
    """The printed lines are the shown ones, in order and adjacent, where a line `...` stands for
    any number of lines (none included)."""
    patterns = [None if line.strip() == ELIDED else _pattern(line) for line in shown]
    printed = [_normal(line) for line in printed]

    @cache
    def match(i: int, j: int) -> bool:
        if i == len(patterns):
            return j == len(printed)
        pattern = patterns[i]
        if pattern is None:
            return any(match(i + 1, k) for k in range(j, len(printed) + 1))
        return j < len(printed) and pattern.fullmatch(printed[j]) is not None and match(i + 1, j + 1)

    return match(0, 0)


def _missing(shown: list[str], printed: list[str]) -> list[str]:
    text = [_normal(line) for line in printed]
    return [line for line in shown if line.strip() != ELIDED
            and not any(_pattern(line).fullmatch(p) for p in text)]


def test_the_matcher_fails_on_a_line_not_printed() -> None:
    printed = ["a", "b 0.12 s", "c", "d"]
    assert matches(["a", "...", "d"], printed)
    assert matches(["a", "b 3.40 s", "...", "d"], printed)
    assert matches(["...", "c", "..."], printed)
    assert matches(["a", "b ...", "c", "d"], printed)
    assert not matches(["a", "x", "..."], printed)      # a line that is not printed
    assert not matches(["a", "c", "..."], printed)      # a line left out without `...`
    assert not matches(["a", "b 0.12 s", "c"], printed)  # the end left out without `...`
    assert not matches(["d", "..."], printed)           # out of order


def test_the_transcript_reader() -> None:
    text = ("```console\n$ python -m evalstream a \\\n    --b c\nout 1\n...\n$ python -m evalstream d\n"
            "```\n```\n$ not run\n```\n")
    assert transcripts(text) == [("python -m evalstream a  --b c", ["out 1", "..."]),
                                 ("python -m evalstream d", [])]


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if "```console" in p.read_text()], ids=_relative)
def test_console_examples_print_what_is_shown(page: Path, tmp_path: Path) -> None:
    examples = transcripts(page.read_text())
    assert examples
    shutil.copytree(ROOT / "data" / "samples", tmp_path / "data" / "samples")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", NO_COLOR="1", COLUMNS="80")
    env.pop("FORCE_COLOR", None)
    for command, shown in examples:
        assert command.startswith("python -m evalstream "), command
        done = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        printed = done.stdout.replace(f"{tmp_path}{os.sep}", "").splitlines()
        assert "Traceback" not in done.stdout, done.stdout
        assert matches(shown, printed), (
            f"{_relative(page)}: `{command}` printed:\n{done.stdout}\n"
            f"shown lines not printed: {_missing(shown, printed)}")


def _slug(heading: str) -> str:
    # GitHub's anchors: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        heading = None if fence else re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = _slug(heading.group(1))
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def links(text: str) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def test_anchors_and_links_read_as_github_makes_them() -> None:
    assert _slug("The folder `prepare` writes") == "the-folder-prepare-writes"
    assert _slug("1. Your data: `convert` (or `validate`)") == "1-your-data-convert-or-validate"
    assert anchors("# a\n## a\n```\n# b\n```\n") == {"a", "a-1"}
    assert links("[x](a.md#b) `[y](c.md)`\n```\n[z](d.md)\n```\n") == ["a.md#b"]


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or ROOT not in file.parents:
            broken.append(f"{target}: no file {path}")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file.read_text())):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{_relative(page)}: {broken}"


def test_the_readme_links_every_page_of_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert {p.name for p in DOCS.glob("*.md")} <= {
        Path(t.partition("#")[0]).name for t in links(readme) if t.startswith("docs/")}
    # The package index shows the README without the repository: say where the docs are.
    assert "The reference lives in the `docs/` folder of the source repository" in readme


def test_the_set_up_commands_are_the_ones_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```\n(.*?)\n```", readme, re.S | re.M)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    test_command = ci[ci.index("# The README's test command, verbatim:") + 1]
    assert blocks[1] == test_command
    assert blocks[0] == (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
        "python -m evalstream build data/samples/cases.jsonl states.jsonl")


def _json_after(text: str, heading: str) -> dict:
    """The first JSON object of the first code block after a heading."""
    block = text[text.index(heading):]
    block = block[block.index("```"):]
    block = block[block.index("\n") + 1:block.index("\n```")]
    value, _ = json.JSONDecoder().raw_decode(block)
    return value


def test_the_record_and_verdict_examples_are_what_build_writes(tmp_path: Path) -> None:
    from evalstream._cli import main
    from evalstream._judge.request import JudgeConfig

    formats = (DOCS / "formats.md").read_text()
    record = _json_after(formats, "## Output records")
    verdict = _json_after(formats, "## Verdicts")
    out = tmp_path / "states.jsonl"
    exact = tmp_path / "exact.jsonl"
    assert main(["build", str(ROOT / "data/samples/cases.jsonl"), str(out), "-q"]) == 0
    assert main(["build", str(ROOT / "data/samples/cases.jsonl"), str(exact), "-q",
                 "--exact-tokens"]) == 0

    def written(path: Path) -> dict:
        return next(r for r in map(json.loads, path.read_text().splitlines())
                    if (r["case_id"], r["rubric_id"]) == (record["case_id"], record["rubric_id"]))

    real = written(out)
    assert _pattern(record.pop("question")).fullmatch(real.pop("question"))
    assert record == real
    shown = re.search(r'`"exact": (\{.*?\})` for this one', formats)
    assert shown and json.loads(shown.group(1)) == written(exact)["exposure"]["tokens"]["exact"]
    # The verdict judge writes for that state carries what the state's record says.
    for key in ("case_id", "rubric_id", "rubric_hash", "state_hash", "exposure"):
        assert verdict[key] == real[key], key
    judge = verdict["judge"]
    config = JudgeConfig(judge["model"], provider=judge["provider"],
                         temperature=judge["temperature"])
    assert (judge["config_hash"], judge["base_url"]) == (config.hash, config.host)


def test_the_request_example_is_the_golden_body() -> None:
    judge = (DOCS / "judge.md").read_text()
    shown = _json_after(judge, "## The request")
    sent = json.loads((ROOT / "tests/judge/golden/request.openai.json").read_text())
    assert shown == sent


@pytest.mark.slow
def test_the_judge_transcript_runs_against_the_fake_server(tmp_path: Path) -> None:
    from tests.judge.support import FakeServer

    text = (DOCS / "judge.md").read_text()
    text = text[text.index("Try it with no key and no network"):]
    block = text[text.index("```\n") + 4:text.index("\n```", text.index("```\n") + 4)]
    steps = transcripts(f"```console\n{block}\n```\n")
    assert len(steps) >= 5
    shutil.copytree(ROOT / "data" / "samples", tmp_path / "data" / "samples")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", NO_COLOR="1", COLUMNS="80")
    server = FakeServer()
    try:
        port = str(server.port)
        for command, shown in steps:
            if command.endswith("&"):
                assert "tests.judge.fake_server --port 8765" in command  # started above
                continue
            done = subprocess.run(["bash", "-c", command.replace("8765", port) + " 2>&1"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=120)
            printed = done.stdout.splitlines()
            assert matches([line.replace("8765", port) for line in shown], printed), (
                f"docs/judge.md: `{command}` printed:\n{done.stdout}")
    finally:
        server.stop()


@pytest.mark.slow
def test_the_view_server_prints_what_docs_show(tmp_path: Path) -> None:
    text = (DOCS / "view.md").read_text()
    (command, shown), = [t for t in transcripts(text.replace("```\n$ python -m evalstream view",
                                                             "```console\n$ python -m evalstream view"))
                         if "--export" not in t[0]]
    # The port is the first free one and the token random: both are read as `...`.
    shown = [re.sub(r"127\.0\.0\.1:\d+/[\w-]+/", "127.0.0.1:.../.../", line)
             for line in shown]
    shutil.copytree(ROOT / "data" / "samples", tmp_path / "data" / "samples")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    argv = [sys.executable, *command.split()[1:], "--no-browser", "--port", "0"]
    server = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        printed = [server.stdout.readline().rstrip("\n") for _ in shown]
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)
    assert matches(shown, printed), printed


def test_the_shell_glob_example_of_reliability_is_refused_as_shown(tmp_path: Path) -> None:
    text = (DOCS / "reliability.md").read_text()
    block = re.search(r"^  ```\n  \$ (python -m evalstream build shards/.*?)\n(.*?)\n  ```", text,
                      re.S | re.M)
    assert block
    (tmp_path / "shards").mkdir()
    for name in ("part-1.jsonl", "part-2.jsonl"):  # two shards of a dataset
        shutil.copy(ROOT / "data/samples/cases.jsonl", tmp_path / "shards" / name)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", block.group(1) + " 2>&1"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert matches([line[2:] for line in block.group(2).splitlines()], done.stdout.splitlines())
    assert (tmp_path / "shards/part-2.jsonl").read_bytes() == (
        ROOT / "data/samples/cases.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("page", [DOCS / "api.md", ROOT / "README.md"], ids=_relative)
def test_the_python_api_example_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import ast

    text = page.read_text()
    code = text[text.index("```python\n") + 10:]
    code = code[:code.index("\n```")]
    tree = ast.parse(code)
    # The live judge needs a key and the network: every other statement runs as shown.
    live = [s for s in tree.body if "evalstream.judge(" in ast.unparse(s)]
    assert len(live) == 1
    tree.body.remove(live[0])
    shutil.copytree(ROOT / "data" / "samples", tmp_path / "data" / "samples")
    monkeypatch.chdir(tmp_path)
    exec(compile(tree, _relative(page), "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert (tmp_path / "stats.html").is_file() and (tmp_path / "rejects.jsonl").is_file()
    if page.name == "api.md":
        shown = re.search(r'count_tokens\("How many tokens\?", "cl100k_base"\)\)\s+# (\d+)',
                          code)
        assert shown and shown.group(1) in printed
        assert (tmp_path / "review" / "evalstream-view.json").is_file()
    else:
        assert any("'state': {" in line for line in printed)  # a record as Python values
