"""Helpers for the view tests: an indexed site in this process, list entries as ids, and a
real ``evalstream view`` server process on 127.0.0.1."""

from __future__ import annotations

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
from urllib.parse import urlsplit

from evalstream._view.index import Options, split_key
from evalstream._view.lists import Filters
from evalstream._view.pages import Site
from evalstream._view.run import open_site
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
    """A running ``evalstream view`` process: the address it printed (its pages live under
    it: ``base``) and the origin it listens on."""

    process: subprocess.Popen[bytes]
    start_url: str
    base: str  # the start URL: every page is under it (it holds the token)
    origin: str  # http://127.0.0.1:PORT/: the server's root, outside the token's path

    def get(self, path: str, headers: dict[str, str] | None = None,
            method: str = "GET") -> tuple[int, dict[str, str], bytes]:
        """Request ``path`` under ``base`` (a page of the view)."""
        return fetch(self.base + path.lstrip("/"), headers, method)

    def outside(self, path: str, headers: dict[str, str] | None = None,
                method: str = "GET") -> tuple[int, dict[str, str], bytes]:
        """Request ``path`` from the server's root, without the token's path."""
        return fetch(self.origin + path.lstrip("/"), headers, method)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None  # a redirect is an answer to look at, not to follow


_OPENER = urllib.request.build_opener(_NoRedirect())


def fetch(url: str, headers: dict[str, str] | None = None,
          method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One request, no cookie jar, no redirect followed: (status, headers, body)."""
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with _OPENER.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


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
        parts = urlsplit(url)
        yield Server(process, url, url, f"{parts.scheme}://{parts.netloc}/")
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


# -- a hostile dataset -----------------------------------------------------------------------------
# Text that would run, load, redirect or restyle something if a page ever used it as HTML,
# or read backwards (RTL override); ids cannot hold whitespace or `/`, so theirs are shorter.
PAYLOADS = [
    '<script>document.title="pwned";window.pwned=1</script>',
    '"><img src=x onerror="document.title=\'pwned\';window.pwned=1">',
    "javascript:document.title='pwned'",
    "'onmouseover='window.pwned=1' x='",
    '<a href="javascript:window.pwned=1">click</a>',
    '<iframe src="http://evil.example/"></iframe><form action="http://evil.example/"><button>go'
    "</button></form>",
    '<style>body{display:none}</style><meta http-equiv="refresh" content="0;url=http://evil.example/">'
    '<base href="http://evil.example/">',
    "\u202eevil.exe\u202c and \u2066isolated\u2069 and zero\u200bwidth and \x00nul \x1b[31mred",
    "</textarea></title></style><svg onload=window.pwned=1>",
]
ID_PAYLOADS = ['"><b>bold', "<script>x", "javascript:alert(1)", "\u202ereversed",
               "'onmouseover='x", "a&amp;b?c=d#e", "%3Cscript%3E"]
LONG = "y" * 200_000  # the cap: every field may be this long


def _text(i: int) -> str:
    return PAYLOADS[i % len(PAYLOADS)]


def hostile_dataset(folder: Path) -> dict[str, Path]:
    """Cases and two verdict runs with hostile text in every field (and 200,000-character
    fields), a rejected line, an unscored verdict and flips, written to ``folder``."""
    import json

    cases, run_a, run_b = [], [], []
    for n, case_id in enumerate(ID_PAYLOADS):
        long_case = n == 0
        text = LONG if long_case else _text(n)
        case = {
            "id": case_id, "input": text if long_case else _text(n + 1),
            "output": text if long_case else _text(n + 2),
            "messages": [{"id": ID_PAYLOADS[(n + k) % len(ID_PAYLOADS)], "role": "user",
                          "content": LONG if long_case else _text(n + k)} for k in range(2)],
            "context": [{"id": ID_PAYLOADS[n], "text": LONG if long_case else _text(n + 3)}],
            "policy": LONG if long_case else _text(n + 4),
            "toolEvents": [{"id": ID_PAYLOADS[n], "name": _text(n + 5), "status": "failure",
                            "input": {_text(n): _text(n + 6)},
                            "output": LONG if long_case else _text(n + 7),
                            "error": LONG if long_case else _text(n + 8)}],
            "metadata": {"scenario": _text(n), _text(n + 1): LONG if long_case else _text(n)},
            "expected": {ID_PAYLOADS[m]: {"status": "fail", "source": "human"}
                         for m in range(2)}}
        cases.append(case)
        for m in range(2):
            rubric = ID_PAYLOADS[m]
            status = "unscored" if (n + m) % 5 == 4 else "pass"
            verdict = {"case_id": case_id, "rubric_id": rubric, "status": status,
                       "rationale": None if status == "unscored" else
                       (LONG if long_case else _text(n + m)),
                       "judge": {"model": _text(n), "provider": _text(n + 1)},
                       "usage": {"input_tokens": 10, "output_tokens": 5},
                       "request_id": _text(n + 2), "rubric_hash": _text(m),
                       "state_hash": _text(n),
                       "exposure": {"shown": ["user_input", "assistant_response"],
                                    "withheld": ["policy"], "never_shown": ["metadata"],
                                    "tokens": {"state": 1, "tokenizer": _text(n)}}}
            if status == "unscored":
                verdict["error"] = {"cause": _text(n), "detail": LONG if long_case else _text(m)}
            run_a.append(verdict)
            other = dict(verdict, status="fail", rationale=_text(n + m + 1))
            other.pop("error", None)
            run_b.append(other)
    paths = {name: folder / f"{name}.jsonl" for name in ("cases", "verdicts", "compare")}
    bad = json.dumps({"id": "bad", "input": PAYLOADS[0], "output": 5}).encode()
    paths["cases"].write_bytes(b"\n".join(json.dumps(c).encode() for c in cases) + b"\n" + bad
                               + b"\n" + PAYLOADS[1].encode() + b"\n")
    for name, records in (("verdicts", run_a), ("compare", run_b)):
        paths[name].write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    return paths
