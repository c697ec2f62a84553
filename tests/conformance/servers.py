"""Third-party judge servers, started as their own processes on 127.0.0.1 for the
conformance suite: LLMock (PyPI ``llmock``, in the test extra) and AIMock (npm
``@copilotkit/aimock``, installed into ``tests/conformance/node_modules`` by ``.ci/run``),
and llama-cpp-python's server with a real model (a documented check: docs/testing.md).

A server that is not installed skips its tests with the install command as the reason, but
fails them where ``CI`` is set (CI installs them), as the browser tests do for Chromium."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
AIMOCK_CLI = HERE / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
FIXTURES = HERE / "fixtures"
# A conformance key: long enough that its redaction touches nothing else in a body.
KEY = "sk-conformance-5b0e7f3d2a91"
KEYS = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY, "AZURE_OPENAI_API_KEY": KEY,
        "GEMINI_API_KEY": KEY, "AWS_BEARER_TOKEN_BEDROCK": KEY}


def require(found: str | None, what: str, install: str) -> str:
    """``found``, or the test skipped (failed in CI) saying how to install ``what``."""
    if found is None:
        message = f"{what} is not installed ({install})"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must install it (.ci/run does).")
        pytest.skip(message + ".")
    return found


def llmock_command() -> str:
    """The ``llmock`` command: beside this Python (the test extra installs it), or on PATH."""
    beside = Path(sys.executable).parent / "llmock"
    found = str(beside) if beside.exists() else shutil.which("llmock")
    return require(found, "LLMock", "pip install -e '.[test]', or pip install llmock")


def aimock_command() -> list[str]:
    """``node .../aimock/dist/cli.js`` (its ``llmock`` command, which takes fixtures and
    chaos as options)."""
    node = shutil.which("node")
    found = str(AIMOCK_CLI) if node and AIMOCK_CLI.exists() else None
    require(found, "AIMock", "npm ci --prefix tests/conformance")
    assert node is not None
    return [node, str(AIMOCK_CLI)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process on 127.0.0.1:``port``, ready once ``ready_path`` answers; stopped
    (SIGTERM, then SIGKILL) by ``stop``, and by the fixture that made it."""

    def __init__(self, args: Sequence[str], port: int, ready_path: str, *,
                 env: dict[str, str] | None = None, timeout: float = 60.0,
                 log: Path | None = None) -> None:
        self.port = port
        self.origin = f"http://127.0.0.1:{port}"
        self._log = open(log, "wb") if log else subprocess.DEVNULL
        self.proc = subprocess.Popen(list(args), stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})},
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{args[0]} exited with {self.proc.returncode} at start")
            try:
                with urllib.request.urlopen(self.origin + ready_path, timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"{args[0]} did not answer within {timeout:g} s") from None
                time.sleep(0.2)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.origin + path, data=data, method=method,
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self._log is not subprocess.DEVNULL:
            self._log.close()  # type: ignore[union-attr]


def llmock(*options: str, log: Path | None = None) -> Server:
    """``llmock serve`` with ``options`` (``--rpm 60``: a real quota)."""
    port = free_port()
    return Server([llmock_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
                   "--log-level", "warning", *options], port, "/_llmock/requests",
                  env={"NO_COLOR": "1", "TERM": "dumb"}, log=log)


def aimock(*options: str, log: Path | None = None) -> Server:
    """AIMock with the suite's fixtures (a ``record_verdict`` tool call where a tool is
    offered, the answer as text otherwise) and ``options`` (``--chaos-*``)."""
    port = free_port()
    return Server([*aimock_command(), "--port", str(port), "--host", "127.0.0.1",
                   "--fixtures", str(FIXTURES / "aimock.json"), "--log-level", "warn",
                   *options], port, "/__aimock/chaos", log=log)
