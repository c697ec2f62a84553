"""The view in a real headless Chromium: the server's lists, a check page and the filter
form; the static export from file://; and a hostile dataset (scripts, ``onerror``
attributes, ``javascript:`` links, RTL overrides and 200,000-character fields in every
field) on every page, where nothing may run, load or overflow, and the page stays usable."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from evalstream._cli import main
from evalstream._verdicts.links import check_page
from tests.browser import Tab, load, open_tab, require_chromium
from tests.view.support import (
    CASES,
    ID_PAYLOADS,
    VERDICTS,
    VERDICTS_B,
    Server,
    fetch,
    hostile_dataset,
    no_proxy,
    server,
)

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it
no_proxy()

ROWS = """JSON.stringify([...document.querySelectorAll('table.list tbody tr')].map(tr =>
  [...tr.querySelectorAll('td')].slice(1, 4).map(td => td.textContent)))"""
# What a page may hold and do: no element that runs or loads anything, no handler, no link
# leaving the page, no flag or title set by data, nothing wider than the window.
INERT = """JSON.stringify({
  injected: document.querySelectorAll('script, iframe, img, object, embed, svg, video, audio, '
                                      + 'link, base, meta[http-equiv=refresh]').length,
  handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(
                a => a.name.startsWith('on') || a.name === 'style')).length,
  foreign: [...document.querySelectorAll('a[href], form')].filter(e => {
              const url = new URL(e.href || e.action, location.href);
              return url.origin !== location.origin && url.protocol !== 'file:'; }).length,
  pwned: typeof window.pwned !== 'undefined' || document.title.includes('pwned'),
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  title: document.title,
  headings: [...document.querySelectorAll('h1, h2')].map(h => h.getBoundingClientRect().width)
})"""


@pytest.fixture(autouse=True)
def chromium() -> None:
    require_chromium()


@pytest.fixture
def samples() -> Iterator[Server]:
    with server(str(VERDICTS), "--cases", str(CASES), "--compare", str(VERDICTS_B)) as s:
        yield s


def check_inert(tab: Tab) -> dict[str, object]:
    state = json.loads(tab.evaluate(INERT))
    assert tab.errors == [], tab.errors
    assert state["injected"] == 0 and state["handlers"] == 0 and state["foreign"] == 0, state
    assert state["pwned"] is False
    assert state["overflow"] <= 1, state  # long words wrap; nothing pushes the page sideways
    assert all(w > 100 for w in state["headings"]), state  # headings laid out, not squeezed
    return state


def test_lists_and_a_check_page_in_chromium(samples: Server) -> None:
    with open_tab(samples.base, width=1280, height=900) as tab:
        check_inert(tab)
        assert tab.evaluate("document.cookie") == ""  # the token is the path, never a cookie
        assert tab.evaluate("document.querySelectorAll('.cards .card').length") == 7
        tab.follow("document.querySelector('nav.top a[href=\"list/disagreements\"]').click()")
        check_inert(tab)
        rows = json.loads(tab.evaluate(ROWS))
        assert [r[0] for r in rows] == ["case-02", "case-04", "case-12", "case-21", "case-20",
                                        "case-27", "case-30", "case-08"]  # then the na verdict
        tab.follow("document.querySelector('table.list a').click()")
        check_inert(tab)
        layout = json.loads(tab.evaluate("""JSON.stringify((() => {
          const [a, b] = document.querySelectorAll('.check > section');
          const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
          return {side_by_side: s.left >= r.right, widths: [r.width, s.width],
                  verdict: document.querySelector('.verdict-status').textContent,
                  state: document.querySelectorAll('.check .text').length}; })())"""))
        assert layout["side_by_side"] and min(layout["widths"]) > 500
        assert layout["verdict"] == "pass" and layout["state"] >= 4
        assert "case-02 · tool-backed-claims" in tab.evaluate("document.title")
        # The checks of the case link to each other.
        tab.follow("[...document.querySelectorAll('.siblings a')].find(a => "
                   "a.textContent === 'booking-succeeded').click()")
        check_inert(tab)
        assert tab.evaluate("document.querySelector('h1').textContent") == \
            "case-02 · booking-succeeded"


class _Neighbour(BaseHTTPRequestHandler):
    """Another server on 127.0.0.1 (a notebook, a dev server, another user's): it keeps every
    request a browser sends it, and its page loads an image from itself."""

    seen: list[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:
        self.seen.append((self.path, dict(self.headers)))
        body = b'<!doctype html><title>neighbour</title><img src="/pixel.png">'
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_another_server_on_127_0_0_1_learns_nothing_that_opens_the_view(
        samples: Server) -> None:
    # Browsers scope cookies by host, not port (RFC 6265, 8.5), and 127.0.0.1 on two ports
    # is one site: whatever the view keeps in the browser for 127.0.0.1 goes to every other
    # server there. Browse the view, follow a link from it to the other server, open that
    # server's page; then replay every header the other server got against the view.
    seen: list[tuple[str, dict[str, str]]] = []
    neighbour = ThreadingHTTPServer(("127.0.0.1", 0), type("N", (_Neighbour,), {"seen": seen}))
    threading.Thread(target=neighbour.serve_forever, daemon=True).start()
    other = f"http://127.0.0.1:{neighbour.server_address[1]}/"
    try:
        with open_tab(samples.start_url, width=1280, height=900) as tab:
            tab.follow("document.querySelector('nav.top a[href$=\"list/disagreements\"]')"
                       ".click()")
            tab.follow("document.querySelector('table.list a').click()")
            assert tab.evaluate("document.querySelector('h1').textContent") == \
                "case-02 · tool-backed-claims"
            tab.follow(f"""(() => {{ const a = document.createElement('a');
              a.href = {json.dumps(other + "followed")}; document.body.append(a);
              a.click(); }})()""")
            tab.navigate(other + "typed")
            tab.browser.drain(0.5)  # the image of the neighbour's page
    finally:
        neighbour.shutdown()
        neighbour.server_close()
    assert {path for path, _ in seen} >= {"/followed", "/typed", "/pixel.png"}, seen
    start = urlsplit(samples.start_url)
    token = (parse_qs(start.query).get("token") or [start.path.strip("/")])[0]
    assert len(token) >= 20
    view_host = start.netloc
    for path, headers in seen:
        assert token not in path and token not in json.dumps(headers), (path, headers)
        replayed = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
        replayed["Host"] = view_host  # the view's own, so only the token decides
        targets = {path, "/", "/list/disagreements",
                   "/check?case=case-02&rubric=tool-backed-claims",
                   urlsplit(headers.get("Referer", "")).path or "/"}
        for target in targets:
            status, answer, body = fetch(samples.origin + target.lstrip("/"), replayed)
            assert status in (403, 404), (target, replayed, status)
            assert b"case-02" not in body and "Set-Cookie" not in answer


def test_the_filter_form_in_chromium(samples: Server) -> None:
    with open_tab(samples.base + "list/verdicts", width=1280, height=900) as tab:
        check_inert(tab)
        tab.follow("""(() => {
          const form = document.querySelector('form.filters');
          form.querySelector('select[name=rubric]').value = 'policy-compliance';
          form.querySelector('select[name=kind]').value = 'fail';
          form.submit(); })()""")
        check_inert(tab)
        rows = json.loads(tab.evaluate(ROWS))
        wanted = [(v["case_id"], v["rubric_id"]) for v in map(
            json.loads, VERDICTS.read_text().splitlines())
            if v["rubric_id"] == "policy-compliance" and v["status"] == "fail"]
        assert [(r[0], r[1]) for r in rows] == wanted and wanted
        assert tab.evaluate("document.querySelector('select[name=rubric]').value") == \
            "policy-compliance"
        tab.follow("""(() => { const box = document.querySelector('input[name=case]');
          box.value = 'case-27'; box.form.submit(); })()""")
        assert [r[0] for r in json.loads(tab.evaluate(ROWS))] == ["case-27"]
        tab.follow("document.querySelector('form.filters a').click()")  # clear
        assert len(json.loads(tab.evaluate(ROWS))) == 50
        assert tab.errors == []


def test_the_export_from_file_in_chromium(tmp_path: Path) -> None:
    folder = tmp_path / "review"
    assert main(["view", str(VERDICTS), "--cases", str(CASES), "--compare", str(VERDICTS_B),
                 "--export", str(folder), "-q"]) == 0
    with open_tab(folder / "index.html", width=1280, height=900) as tab:
        check_inert(tab)
        tab.follow("document.querySelector('nav.top a[href=\"lists/flips.html\"]').click()")
        check_inert(tab)
        assert len(json.loads(tab.evaluate(ROWS))) == 13
        tab.follow("[...document.querySelectorAll('div.filters a')].find(a => "
                   "a.textContent === 'tool-backed-claims').click()")
        check_inert(tab)
        assert [r[1] for r in json.loads(tab.evaluate(ROWS))] == ["tool-backed-claims"] * 4
        tab.follow("document.querySelector('table.list a').click()")
        check_inert(tab)
        assert tab.evaluate("location.href").endswith(check_page("case-01", "tool-backed-claims"))
        assert tab.evaluate("document.querySelector('.verdict-status').textContent") == "pass"


def test_hostile_data_runs_nothing_and_pages_stay_usable(tmp_path: Path) -> None:
    paths = hostile_dataset(tmp_path)
    with server(str(paths["verdicts"]), "--cases", str(paths["cases"]), "--compare",
                str(paths["compare"])) as s:
        pages = ["/", "/rejects", "/list/verdicts", "/list/flips", "/list/unscored",
                 "/list/skipped", "/list/disagreements",
                 "/list/verdicts?" + urlencode({"rubric": ID_PAYLOADS[0]}),
                 "/list/disagreements?" + urlencode({"group": ID_PAYLOADS[0]})]
        pages += ["/check?" + urlencode({"case": case_id, "rubric": rubric})
                  for case_id in ID_PAYLOADS for rubric in ID_PAYLOADS[:2]]
        with open_tab(s.base, width=1280, height=900) as tab:
            for path in pages:
                tab.navigate(s.base + path.lstrip("/"))
                state = check_inert(tab)
                assert "pwned" not in str(state["title"])
            # The 200,000-character case: the page is usable, its fields folded, the verdict
            # beside the case.
            tab.navigate(s.base + "check?" + urlencode({"case": ID_PAYLOADS[0],
                                                        "rubric": ID_PAYLOADS[0]}))
            usable = json.loads(tab.evaluate("""JSON.stringify({
              folded: document.querySelectorAll('details.more').length,
              tall: Math.max(...[...document.querySelectorAll('.text')].map(
                      t => t.getBoundingClientRect().height)),
              verdict: document.querySelector('.check > section:nth-child(2)')
                         .getBoundingClientRect().top,
              marks: document.querySelectorAll('.ctl').length})"""))
            assert usable["folded"] >= 8 and usable["tall"] < 700 and usable["verdict"] < 400
            assert usable["marks"] == 0  # (the long case has none; the others do)
            tab.navigate(s.base + "check?" + urlencode({"case": ID_PAYLOADS[3],
                                                        "rubric": ID_PAYLOADS[0]}))
            assert tab.evaluate("document.querySelectorAll('.ctl').length") > 5
            assert tab.evaluate("document.querySelector('h1').textContent").startswith(
                "U+202Ereversed")
            assert tab.errors == []


def test_a_hostile_export_runs_nothing_from_file(tmp_path: Path) -> None:
    paths = hostile_dataset(tmp_path)
    folder = tmp_path / "review"
    assert main(["view", str(paths["verdicts"]), "--cases", str(paths["cases"]), "--compare",
                 str(paths["compare"]), "--export", str(folder), "-q"]) == 1
    pages = sorted(folder.rglob("*.html"))
    assert len(pages) > 40
    with open_tab(folder / "index.html", width=1280, height=900) as tab:
        for page in pages:
            tab.navigate(page)
            check_inert(tab)


def test_the_checks_would_see_a_script_that_ran(tmp_path: Path) -> None:
    # Controls: the same policy refuses an injected script and the refusal is an error; a
    # page without it would run the payload, and the flag shows it.
    from evalstream._render.html import Page

    page = Page("control", strict=True)
    page.fragment('<script>window.pwned = 1</script><img src="x.png">')
    blocked = tmp_path / "blocked.html"
    blocked.write_text(page.html())
    result = load(blocked, "typeof window.pwned")
    assert result.value == "undefined"
    assert any("Content Security Policy" in e or "Refused" in e for e in result.errors), \
        result.errors
    open_page = tmp_path / "open.html"
    open_page.write_text("<!doctype html><title>t</title><script>window.pwned = 1</script>")
    assert load(open_page, "typeof window.pwned").value == "number"
