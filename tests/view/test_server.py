"""The server as a real process on 127.0.0.1 (``evalstream view ... --port 0``): the token
in the path (never a cookie), the Host check, the headers, GET only, the pages and filters
by URL, the raw records, a file changed under it, and Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.view.support import CASES, VERDICTS, VERDICTS_B, no_proxy, server

no_proxy()


@pytest.mark.slow
def test_nothing_is_served_outside_the_tokens_path() -> None:
    with server(str(VERDICTS), "--cases", str(CASES)) as s:
        token = s.base[len(s.origin):].strip("/")
        for path in ("/", "/list/disagreements", "/check?case=case-02&rubric=tool-backed-claims",
                     "/raw/cases/0", "/favicon.ico", f"/?token={token}", "/wrong/",
                     f"/{token}x/", f"/{token[:-1]}/", f"/x/{token}/",
                     f"/{token.upper()}/", f"/%2F{token}/"):
            for method in ("GET", "HEAD"):
                status, headers, body = s.outside(path, method=method)
                assert status == 403, path
                assert "Set-Cookie" not in headers and headers["Referrer-Policy"] == "no-referrer"
                assert token.encode() not in body and b"case-02" not in body
                assert b"teeth" not in body and b"Disagreements" not in body  # no navigation
            assert b"open the address that `evalstream view` printed" in s.outside(path)[2]
        # A cookie or any header holding the token opens nothing: only the path does.
        for header in ({"Cookie": f"evalstream-view-1={token}; token={token}"},
                       {"Referer": s.base}, {"Authorization": f"Bearer {token}"}):
            assert s.outside("/", headers=header)[0] == 403
        assert s.get("/")[0] == 200


@pytest.mark.slow
def test_the_token_is_a_path_never_a_cookie_and_no_page_names_it(tmp_path: Path) -> None:
    # Browsers send a cookie of 127.0.0.1 to every port of it (RFC 6265, 8.5): another local
    # server would receive and replay it. No response sets one; no page names the token
    # (links are relative), so it travels only in the path of requests to this server.
    from html.parser import HTMLParser
    from urllib.parse import urljoin, urlsplit

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.found += [v for k, v in attrs if k in ("href", "action") and v is not None]

    cases = tmp_path / "cases.jsonl"  # with a rejected line: the rejects link to raw lines
    cases.write_bytes(CASES.read_bytes() + b'{"id": "bad"}\n')
    with server(str(VERDICTS), "--cases", str(cases), "--compare", str(VERDICTS_B)) as s:
        token = s.base[len(s.origin):].strip("/")
        assert s.start_url == f"{s.origin}{token}/" and len(token) >= 24
        status, headers, _ = s.outside(token)  # without the folder's slash
        assert status == 303 and headers["Location"] == f"/{token}/"
        # Every kind of page the overview leads to (each list, a check page, a raw line):
        # each link resolves below the token's folder, no response sets a cookie or names
        # the token.
        kinds: set[str] = set()
        queue = [s.base]
        while queue:
            url = queue.pop(0)
            kind = urlsplit(url).path.rstrip("0123456789")
            if kind in kinds:
                continue
            kinds.add(kind)
            status, headers, body = s.get(url[len(s.base):])
            assert status == 200, url
            assert "Set-Cookie" not in headers and headers["Referrer-Policy"] == "no-referrer"
            assert token.encode() not in body, url
            if headers["Content-Type"].startswith("text/html"):
                parser = Links()
                parser.feed(body.decode())
                for link in parser.found:
                    target = urljoin(url, link)
                    assert target.startswith(s.base), (url, link)
                    queue.append(target)
        assert {kind[len(urlsplit(s.base).path):] for kind in kinds} >= {
            "", "list/disagreements", "list/flips", "list/verdicts", "rejects", "check",
            "raw/cases/"}, kinds
        for path in ("nowhere", "list/nowhere", "list/flips/deeper/still"):
            status, headers, body = s.get(path)  # a page's navigation from any depth
            assert status == 404 and "Set-Cookie" not in headers and token.encode() not in body
            parser = Links()
            parser.feed(body.decode())
            assert parser.found and all(urljoin(s.base + path, link).startswith(s.base)
                                        for link in parser.found)


@pytest.mark.slow
def test_pages_headers_and_refusals() -> None:
    with server(str(VERDICTS), "--cases", str(CASES), "--compare", str(VERDICTS_B)) as s:
        status, headers, body = s.get("/")
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        policy = headers["Content-Security-Policy"]
        assert policy.startswith("default-src 'none'; style-src 'sha256-")
        assert "frame-ancestors 'none'" in policy and "script" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Frame-Options"] == "DENY"
        assert headers["Cache-Control"] == "no-store"
        assert b"Disagreements with labels (8)" in body
        # Another site whose name resolves here (DNS rebinding) gets nothing.
        status, _, body = s.get("/", headers={"Host": "evil.example:80"})
        assert status == 421 and b"case-02" not in body
        port = s.origin.rsplit(":", 1)[1].rstrip("/")
        assert s.get("/", headers={"Host": f"localhost:{port}"})[0] == 200
        for method in ("POST", "PUT", "DELETE"):
            status, headers, _ = s.get("/", method=method)
            assert status == 405 and headers["Allow"] == "GET, HEAD"
            assert headers["Referrer-Policy"] == "no-referrer"
        assert s.get("/", method="HEAD")[0] == 200
        assert s.get("/nowhere")[0] == 404
        assert s.get("/list/nowhere")[0] == 404
        assert s.get("/check?case=case-02&rubric=nowhere")[0] == 404
        assert s.get("/check?case=case-02")[0] == 404


@pytest.mark.slow
def test_filters_and_pages_by_url() -> None:
    with server(str(VERDICTS), "--cases", str(CASES)) as s:

        def ids(path: str) -> list[str]:
            status, _, body = s.get(path)
            assert status == 200
            return [m.decode() for m in
                    re.findall(rb'<td class="key"><a href="\.\./check\?case=([^&]+)&', body)]

        assert ids("/list/disagreements") == ["case-02", "case-04", "case-12", "case-21",
                                              "case-20", "case-27", "case-30", "case-08"]
        assert ids("/list/disagreements?rubric=tool-backed-claims") == ["case-02", "case-04",
                                                                   "case-20"]
        assert ids("/list/disagreements?" + urlencode({"kind": "false alarm"})) == [
            "case-20", "case-27", "case-30"]
        assert ids("/list/disagreements?rubric=tool-backed-claims&kind=missed&source=human"
                   "&group=booking&case=case-04") == ["case-04"]
        assert ids("/list/disagreements?rubric=&source=&group=&kind=&case=") == ids(
            "/list/disagreements")  # an empty field is no filter (the form sends them)
        status, _, body = s.get("/list/disagreements?rubric=nope")
        assert status == 200 and b"a filter names a value this list does not have" in body
        verdicts = [json.loads(line)["case_id"] for line in VERDICTS.read_text().splitlines()]
        assert ids("/list/verdicts") == verdicts[:50]
        assert ids("/list/verdicts?page=2") == verdicts[50:100]
        assert ids("/list/verdicts?page=3") == verdicts[100:]
        assert ids("/list/verdicts?page=99") == verdicts[100:]  # past the end: the last page
        assert ids("/list/verdicts?page=x") == verdicts[:50]
        status, _, body = s.get("/list/verdicts?page=2")
        assert b"page 2 of 3 (111 entries)" in body
        assert b'href="../list/verdicts?page=3"' in body and b'href="../list/verdicts"' in body
        status, _, body = s.get("/rejects")
        assert status == 200 and b"No rejected line." in body


@pytest.mark.slow
def test_raw_records_are_plain_text_at_known_offsets_only() -> None:
    with server(str(VERDICTS), "--cases", str(CASES)) as s:
        first = CASES.read_bytes().split(b"\n")[0]
        status, headers, body = s.get("/raw/cases/0")
        assert status == 200 and body == first + b"\n"
        assert headers["Content-Type"] == "text/plain; charset=utf-8"
        assert headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
        second = len(first) + 1
        assert s.get(f"/raw/cases/{second}")[0] == 200
        for bad in (f"/raw/cases/{second - 1}", "/raw/cases/-1", "/raw/secrets/0",
                    "/raw/cases/99999999", "/raw/../../etc/passwd"):
            assert s.get(bad)[0] == 404, bad


@pytest.mark.slow
def test_a_file_changed_under_the_server_is_said_not_misread(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(CASES.read_bytes())
    with server(str(VERDICTS), "--cases", str(cases)) as s:
        assert s.get("/check?case=case-02&rubric=tool-backed-claims")[0] == 200
        cases.write_bytes(b"\n" + CASES.read_bytes())
        os.utime(cases, ns=(1, 1))
        status, _, body = s.get("/check?case=case-02&rubric=tool-backed-claims")
        assert status == 409 and b"changed after view indexed it" in body


def test_ctrl_c_stops_the_server_with_exit_0() -> None:
    with server(str(VERDICTS), "--cases", str(CASES)) as s:
        s.process.send_signal(signal.SIGINT)
        assert s.process.wait(timeout=10) == 0
        assert s.process.stderr is not None
        assert b"view: stopped." in s.process.stderr.read()


def test_a_port_in_use_is_a_usage_error() -> None:
    import socket
    import subprocess
    import sys

    from tests.helpers import ROOT

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "evalstream", "view", str(VERDICTS), "--cases",
                            str(CASES), "--no-browser", "--port", str(port)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use" in r.stderr and "--port 0" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--export", "x", "--port", "1"], "--port applies to the server"),
    (["--export", "x", "--no-browser", "--host", "::1", "--port", "1"],
     "--host and --port apply to the server"),
    (["--limit", "5"], "--limit applies to --export"),
    (["--by", "a,b"], "--by takes one metadata key"),
    (["--compare", "data.jsonl.gz"], "is compressed"),
])
def test_options_that_do_not_apply_are_usage_errors(args: list[str], message: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from evalstream._cli import main

    assert main(["view", str(VERDICTS), "--cases", str(CASES), *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_without_a_port_the_next_free_one_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from evalstream._view import server as view_server
    from tests.view.support import site

    with socket.socket() as taken, site() as s:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(view_server, "DEFAULT_PORT", busy)
        chosen = view_server.listen(s, "127.0.0.1", None)
        try:
            assert chosen.port != busy and chosen.url.startswith("http://127.0.0.1:")
        finally:
            chosen.server_close()
        with pytest.raises(view_server.UsageError, match=f"port {busy} on 127.0.0.1 is in use"):
            view_server.listen(s, "127.0.0.1", busy)
