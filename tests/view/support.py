"""Helpers for the view tests: an indexed site in this process, list entries as ids, and a
real ``evalstream view`` server process on 127.0.0.1."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstream.view.index import Options, split_key
from evalstream.view.lists import Filters
from evalstream.view.pages import Site
from evalstream.view.run import open_site
from tests.helpers import ROOT, SAMPLES

VERDICTS = SAMPLES / "verdicts.jsonl"
VERDICTS_B = SAMPLES / "verdicts-b.jsonl"
CASES = SAMPLES / "cases.jsonl"


@contextmanager
def site(verdicts: Path | str = VERDICTS, cases: Path | str = CASES,
         **options: Any) -> Iterator[Site]:
    with open_site(Options(verdicts=str(verdicts), cases=str(cases), **options)) as s:
        yield s


def entries(s: Site, name: str, filters: Filters | None = None) -> list[tuple[str, str, str]]:
    """A list's entries, in order, as (case id, rubric id, kind)."""
    lst = s.lists[name]
    positions = lst.select(s.index, filters or Filters())
    assert positions is not None
    out = []
    for p in positions.tolist():
        row, rubric = split_key(int(lst.keys[p]))
        out.append((s.source.case_id(row), s.index.rubric_names.names[rubric],
                    lst.kind_names[lst.kind[p]]))
    return out


@dataclass
class Server:
    """A running ``evalstream view`` process and a client that keeps its cookie."""

    process: subprocess.Popen[bytes]
    start_url: str
    base: str
    opener: urllib.request.OpenerDirector

    def get(self, path: str, headers: dict[str, str] | None = None,
            method: str = "GET") -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.base + path.lstrip("/"), headers=headers or {},
                                         method=method)
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def login(self) -> None:
        """Open the start URL (with the token): the cookie is kept for later requests."""
        status, _, _ = self.get(self.start_url[len(self.base):])
        assert status == 200


@contextmanager
def server(*args: str) -> Iterator[Server]:
    """``python -m evalstream view ARGS --no-browser --port 0`` until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "evalstream", "view", *args, "--no-browser", "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        url = None
        deadline = time.monotonic() + 60
        seen = b""
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            seen += line
            found = re.search(rb"serving at (http://\S+)", line)
            if found:
                url = found[1].decode()
        assert url is not None, f"view did not start: {seen.decode()}"
        base = url.split("?")[0]
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        yield Server(process, url, base, opener)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def no_proxy() -> None:
    """urllib must not send 127.0.0.1 requests to a proxy from the environment."""
    os.environ["no_proxy"] = os.environ["NO_PROXY"] = "127.0.0.1,localhost"
