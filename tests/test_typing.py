"""The API's signatures are typed keyword options: mypy passes a script that uses the API as
docs/api.md does, and names every misspelled option and wrong type in one that does not
(before issue 24, ``**options: Any`` let them all through, and ``max_token=5`` did nothing)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

GOOD = """
import evalstream

report = evalstream.build("cases.jsonl", "states.jsonl", max_tokens=16_000, engine="dask",
                          rubric_files=["builtin", "mine.toml"], rejects="r.jsonl")
checked = evalstream.validate(["a.jsonl", "b.jsonl"], format="json", workers=2)
stats = evalstream.stats("cases.jsonl", by=["scenario", "split"], html="stats.html",
                         rejects="rejects.jsonl", format="json", output="stats.json")
again = evalstream.render_stats("stats.json", format="markdown", sections=None)
agreed = evalstream.agree("v.jsonl", "c.jsonl", by="scenario", confidence=0.9, html="a.html")
compared = evalstream.compare("a.jsonl", "b.jsonl", max_ids=0, view="review")
cases = evalstream.convert("qa.csv", "cases.jsonl", format="csv", maps=["input=q,output=a"])
old = evalstream.convert_cases("qa.csv", "cases.jsonl", quoting=False)
verdicts = evalstream.judge("s.jsonl", "v.jsonl", "gpt-4.1-mini", temperature=None,
                            max_connections=4, store="answers.sqlite", environ={"K": "v"})
older = evalstream.judge_verdicts("s.jsonl", "v.jsonl", "m", provider="anthropic")
azure = evalstream.judge("s.jsonl", "v.jsonl", "gpt-4o-mini", provider="azure",
                         base_url="https://r.openai.azure.com", deployment="judge",
                         api_version="2025-01-01-preview", reasoning_effort="low",
                         max_wait=60.0, response_format="json_object")
plan = evalstream.judge_dry_run("s.jsonl", "v.jsonl", "m", price_in=0.4, price_out=1.6)
request = evalstream.judge_request("case-01", "claim-support", "s.jsonl", "v.jsonl", "m")
prepared = evalstream.batch_prepare("s.jsonl", "batch", "m", max_bytes_per_file=100 << 20,
                                    provider="anthropic", thinking_budget=2048)
submitted = evalstream.batch_submit("batch", timeout=30.0)
status = evalstream.batch_status("batch", wait=True, poll=5.0, download=False)
collected = evalstream.batch_collect("batch", "v.jsonl", ["out.jsonl"], missing="skip")
exported = evalstream.export_view("v.jsonl", "c.jsonl", "review", limit=5, by="scenario")
states = list(evalstream.judge_states([{"id": "c", "input": "i", "output": "o"}],
                                      max_tokens=1000, tokenizer="cl100k_base"))
n: int = evalstream.count_tokens("How many tokens?", "cl100k_base")
"""
# Each line one mistake, and what mypy must say of it.
BAD = [
    ('evalstream.build("c.jsonl", "s.jsonl", max_token=5)', r'"max_token" for "build"'),
    ('evalstream.validate("c.jsonl", rubric_files=["r.toml"])', r'"rubric_files" for "validate"'),
    ('evalstream.stats("c.jsonl", workers="2")', r'"workers" to "stats" has incompatible type'),
    ('evalstream.build("c.jsonl", "s.jsonl", engine="spark")', r'"engine" to "build"'),
    ('evalstream.agree("v.jsonl", "c.jsonl", format="html")', r'"format" to "agree"'),
    ('evalstream.judge("s.jsonl", "v.jsonl", "m", max_conections=4)', r'"max_conections" for "judge"'),
    ('evalstream.judge_dry_run("s.jsonl", "v.jsonl", "m", cache="x")', r'"cache" for "judge_dry_run"'),
    ('evalstream.judge_request("c", "r", "s.jsonl", "v.jsonl", "m", timeout="9")', r'"timeout"'),
    ('evalstream.judge("s.jsonl", "v.jsonl", "m", thinking_budget="2048")', r'"thinking_budget"'),
    ('evalstream.batch_prepare("s.jsonl", "b", "m", max_wait=60.0)', r'"max_wait" for "batch_prepare"'),
    ('evalstream.batch_collect("b", "v.jsonl", missing="drop")', r'"missing" to "batch_collect"'),
    ('evalstream.export_view("v.jsonl", "c.jsonl", "out", port=8000)', r'"port" for "export_view"'),
]
# mypy reads the API's own modules; the library below it counts as untyped (Any), which keeps
# the check to the signatures, and quick.
CONFIG = """[mypy]
follow_imports = silent
[mypy-{}]
follow_imports = skip
""".format(",".join(f"evalstream.{p}.*" for p in (
    "_files", "_cases", "_checks", "_build", "_stats", "_verdicts", "_judge", "_convert",
    "_render", "_view", "_engines", "_cli")))


def _mypy(tmp_path: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "mypy.ini").write_text(CONFIG)
    (tmp_path / name).write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir",
         str(tmp_path / "cache"), "--no-error-summary", name],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_mypy_passes_the_api_used_as_documented(tmp_path: Path) -> None:
    done = _mypy(tmp_path, "good.py", GOOD)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_names_a_misspelled_option_and_a_wrong_type(tmp_path: Path) -> None:
    text = "import evalstream\n" + "\n".join(line for line, _ in BAD) + "\n"
    done = _mypy(tmp_path, "bad.py", text)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error: " in line]
    for number, (line, said) in enumerate(BAD, 2):
        found = [e for e in errors if e.startswith(f"bad.py:{number}: ")]
        assert found and re.search(said, found[0]), f"{line}: {found or 'no error'}"
