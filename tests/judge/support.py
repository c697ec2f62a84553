"""Test support for judge: the fake server as a real process, and judge states to send it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_run
from evalstream._judge.live import Options
from evalstream._judge.request import JudgeConfig
from tests.helpers import ROOT

# A recognisable fake key: the tests look for it in every file and log a run leaves.
FAKE_KEY = "sk-test-EVALSTREAM-LEAKCHECK-7f3a9c2e"
# Every provider's key variable, set to the fake key.
KEYS = {"OPENAI_API_KEY": FAKE_KEY, "ANTHROPIC_API_KEY": FAKE_KEY,
        "AZURE_OPENAI_API_KEY": FAKE_KEY, "GEMINI_API_KEY": FAKE_KEY,
        "AWS_BEARER_TOKEN_BEDROCK": FAKE_KEY}
RUBRIC = """
[[rubric]]
id = "helpful"
question = "Is assistant_response helpful? Answer status \\"pass\\" if so, \\"fail\\" if not, \\"na\\" if no help was asked for; in reason, quote it."
shows = ["user_input", "assistant_response"]
"""


class FakeServer:
    """``python -m tests.judge.fake_server`` on 127.0.0.1, started and stopped by the test."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.judge.fake_server", *args], cwd=ROOT,
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        """``{"requests", "max_in_flight", "by_body": {sha256: n}, "by_status": {code: n}}``"""
        return self._call("GET", "/stats")  # type: ignore[no-any-return]

    def reset(self) -> None:
        self._call("POST", "/reset")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def case(case_id: str, text: str) -> str:
    """A minimal case whose user input carries ``text`` (a FAKE: marker reaches the judge)."""
    return json.dumps({"id": case_id, "input": f"Please help. {text}",
                       "output": "Here is the help."})


def states(folder: Path, markers: list[str], rubric: str = RUBRIC) -> Path:
    """A build output with one judge state per marker (case ids c000, c001, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = folder / "cases.jsonl"
    cases.write_text("".join(case(f"c{i:03d}", m) + "\n" for i, m in enumerate(markers)))
    rubrics = folder / "rubrics.toml"
    rubrics.write_text(rubric)
    out = folder / "states.jsonl"
    build_run(BuildOptions(input=str(cases), output=str(out), rubric_files=[str(rubrics)]))
    return out


def options(server: FakeServer, input_path: Path, output: Path, provider: str = "openai",
            **kw: Any) -> Options:
    """Judge options against the fake server, with the fake key in a private environment."""
    model = kw.pop("model", "fake-judge-1")
    config = JudgeConfig(model=model, provider=provider, base_url=server.url,
                         max_output_tokens=kw.pop("max_output_tokens", 256),
                         temperature=kw.pop("temperature", 0.0))
    env = {**os.environ, **KEYS}
    return Options(input=str(input_path), output=str(output), config=config, environ=env, **kw)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def cli(*args: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m evalstream ARGS`` with the fake key in the environment."""
    environ = {**os.environ, "NO_COLOR": "1", **KEYS, **(env or {})}
    return subprocess.run([sys.executable, "-m", "evalstream", *args], capture_output=True,
                          text=True, cwd=ROOT, env=environ, timeout=120, **kw)


def holds_key(data: bytes, key: str = FAKE_KEY) -> bool:
    """Whether ``data`` holds the key in any form a reader could take it from: its bytes, or
    any string that JSON decodes from a line of it, or from JSON held in such a string
    (a JSON answer in a JSON string), whatever was escaped."""
    if key.encode() in data:
        return True

    def strings(value: Any, depth: int) -> Iterator[str]:
        if isinstance(value, str):
            yield value
            if depth < 2:
                try:
                    yield from strings(json.loads(value), depth + 1)
                except ValueError:
                    pass
        elif isinstance(value, dict):
            for k, v in value.items():
                yield k
                yield from strings(v, depth)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v, depth)

    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if any(key in s for s in strings(value, 0)):
            return True
    return False


def store_holds_key(path: Path, key: str = FAKE_KEY) -> bool:
    """Whether an answer store holds the key in a body or a request id, in any form."""
    import sqlite3

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT body, request_id FROM answers").fetchall()
    finally:
        db.close()
    return any(holds_key(bytes(body), key) or key in (request_id or "")
               for body, request_id in rows)
