"""Load a local HTML file in headless Chromium; return its console errors, a screenshot and
the value of a JavaScript expression.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages separated by NUL bytes on file descriptors 3 and 4), so the tests need nothing
beyond the standard library and the ``chromium`` binary: no playwright, no downloaded
browsers, no network. Pages are loaded from ``file://`` with networking disabled, so a page
that reaches for a CDN fails loudly (a console error), which is what an offline page test
wants.

Usage in a test::

    from tests.browser import load, require_chromium

    def test_page(tmp_path):
        require_chromium()
        result = load(tmp_path / "page.html", "document.querySelectorAll('svg rect').length")
        assert result.errors == []
        assert result.value > 0
        assert not result.blank()

``require_chromium`` fails the test when the ``CI`` environment variable is set and Chromium
is missing (CI installs it in ``.ci/run``), and skips it otherwise.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
)
DEFAULT_TIMEOUT = 30.0


def chromium_path() -> str | None:
    """The Chromium binary: ``$CHROMIUM`` if set, else /usr/bin/chromium or one on PATH."""
    override = os.environ.get("CHROMIUM")
    if override:
        return override if os.access(override, os.X_OK) else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """The Chromium path; fail the test in CI when it is missing, skip it elsewhere."""
    path = chromium_path()
    if path is None:
        message = ("Chromium is not installed (apt-get install chromium); the browser tests "
                   "need /usr/bin/chromium")
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must install it (.ci/run does).")
        pytest.skip(message + ".")
    return path


class BrowserError(RuntimeError):
    """Chromium could not be started, or did not answer in time."""


@dataclass
class PageResult:
    """What a page did: console errors and exceptions, a PNG screenshot, an expression's value."""

    errors: list[str]
    screenshot: bytes  # PNG of the viewport (or the whole page with ``full_page``)
    thumbnail: bytes  # PNG of the viewport at a quarter of its size, for pixel checks
    value: Any = None
    messages: list[str] = field(default_factory=list)  # every console message, any level

    def pixels(self) -> tuple[int, int, list[bytes]]:
        """The thumbnail as (width, height, rows of RGB bytes)."""
        return decode_png(self.thumbnail)

    def blank(self, min_share: float = 0.01) -> bool:
        """Whether less than ``min_share`` of the viewport differs from its corner colour."""
        width, height, rows = self.pixels()
        background = rows[0][:3]
        differing = 0
        for row in rows:
            for x in range(0, width * 3, 3):
                if row[x:x + 3] != background:
                    differing += 1
        return differing < min_share * width * height

    def colours(self) -> set[bytes]:
        """The distinct RGB colours of the thumbnail."""
        _, _, rows = self.pixels()
        return {row[x:x + 3] for row in rows for x in range(0, len(row), 3)}


def load(path: str | Path, expression: str | None = None, *, width: int = 1280,
         height: int = 900, full_page: bool = False,
         timeout: float = DEFAULT_TIMEOUT) -> PageResult:
    """Open ``path`` (a file, or an ``http://`` URL) in a fresh headless Chromium, wait for the
    load event, evaluate ``expression`` (its JSON value goes to ``value``) and take a
    screenshot.

    Console messages of level error, uncaught exceptions, failed resource loads and
    security (CSP) violations are all reported in ``errors``.
    """
    with open_tab(path, width=width, height=height, timeout=timeout) as tab:
        value = None if expression is None else tab.evaluate(expression)
        return tab.result(value, full_page)


def _url(path: str | Path) -> str:
    text = str(path)
    return text if text.startswith(("http://", "https://")) else Path(path).resolve().as_uri()


class Tab:
    """One page in a running Chromium: evaluate, navigate, follow a navigation a script
    starts, take screenshots; ``errors`` collects what went wrong since it opened."""

    def __init__(self, browser: _Chromium, session: str, width: int, height: int) -> None:
        self.browser, self.session, self.width, self.height = browser, session, width, height

    @property
    def errors(self) -> list[str]:
        return self.browser.errors

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (an exception is an error)."""
        answer = self.browser.call("Runtime.evaluate",
                                   {"expression": expression, "returnByValue": True},
                                   session=self.session)
        if "exceptionDetails" in answer:
            self.browser.errors.append(_exception_text(answer["exceptionDetails"]))
        return answer.get("result", {}).get("value")

    def navigate(self, path: str | Path) -> None:
        """Open another address in this tab and wait for its load event."""
        self.browser.call("Page.navigate", {"url": _url(path)}, session=self.session)
        self.browser.wait_for("Page.loadEventFired", self.session)

    def follow(self, expression: str) -> None:
        """Evaluate ``expression`` (it clicks a link or submits a form) and wait for the page
        it leads to."""
        self.evaluate(expression)
        self.browser.wait_for("Page.loadEventFired", self.session)

    def screenshot(self, full_page: bool = False) -> bytes:
        shot = self.browser.call("Page.captureScreenshot",
                                 {"format": "png", "captureBeyondViewport": full_page},
                                 session=self.session)
        return base64.b64decode(shot["data"])

    def result(self, value: Any = None, full_page: bool = False) -> PageResult:
        """What the page shows now, as ``load`` returns it."""
        shot = self.screenshot(full_page)
        # A quarter-scale copy of the viewport for pixel checks: decoding PNG in pure
        # Python costs about a second per megapixel.
        thumb = self.browser.call("Page.captureScreenshot", {
            "format": "png", "clip": {"x": 0, "y": 0, "width": self.width,
                                      "height": self.height, "scale": 0.25}},
            session=self.session)
        self.browser.drain(0.2)  # late console messages (e.g. from the load handler)
        return PageResult(list(self.browser.errors), shot, base64.b64decode(thumb["data"]),
                          value, list(self.browser.messages))


@contextmanager
def open_tab(path: str | Path, *, width: int = 1280, height: int = 900,
             timeout: float = DEFAULT_TIMEOUT) -> Iterator[Tab]:
    """A fresh headless Chromium showing ``path`` (a file or an ``http://`` URL), loaded."""
    binary = require_chromium()
    with tempfile.TemporaryDirectory(prefix="evalstream-chromium-") as profile, \
            _Chromium(binary, profile, timeout) as browser:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            browser.call(method, session=session)
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": height, "deviceScaleFactor": 1,
                      "mobile": False}, session=session)
        tab = Tab(browser, session, width, height)
        tab.navigate(path)
        yield tab


class _Chromium:
    """One Chromium process and its DevTools pipe."""

    def __init__(self, binary: str, profile: str, timeout: float) -> None:
        self.binary, self.profile, self.timeout = binary, profile, timeout
        self.errors: list[str] = []
        self.messages: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""

    def __enter__(self) -> _Chromium:
        # A file, not a pipe: Chromium logs a lot, and a full pipe would block it.
        self._log = open(os.path.join(self.profile, "chromium.log"), "w+b")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Chromium reads commands on fd 3 and writes answers on fd 4. A shell moves the pipe
        # ends there: a preexec_fn would fork a possibly multi-threaded process (polars).
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        # Through spare descriptors first, as the pipe ends may themselves be 3 or 4.
        script = (f'exec 98<&{to_chrome_r} 99>&{from_chrome_w} && '
                  f'exec {to_chrome_r}<&- {from_chrome_w}>&- && '
                  'exec "$0" "$@" 3<&98 4>&99 98<&- 99>&-')
        try:
            self.process = subprocess.Popen(
                [shutil.which("bash") or "/bin/bash", "-c", script, self.binary, *flags],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
                pass_fds=(to_chrome_r, from_chrome_w))
        except OSError as exc:
            raise BrowserError(f"cannot start {self.binary}: {exc}") from exc
        finally:
            os.close(to_chrome_r)
            os.close(from_chrome_w)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._send({"id": self._new_id(), "method": "Browser.close"})
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any] | None:
        """The next message, or None when the deadline passed."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                return None
            data = os.read(self._from_chrome, 1 << 20)
            if not data:
                self._log.seek(0)
                log = self._log.read().decode(errors="replace")
                raise BrowserError(f"Chromium closed the DevTools pipe: {log[-2000:]}")
            self._buffer += data
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        if "method" in message:
            self._note(message)
        return message

    def _note(self, event: dict[str, Any]) -> None:
        """Keep console output; record errors."""
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", "")))
                            for a in params.get("args", []))
            self.messages.append(f"{params.get('type')}: {text}")
            if params.get("type") in ("error", "assert"):
                self.errors.append(f"console.{params.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            self.errors.append(_exception_text(params.get("exceptionDetails", {})))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.messages.append(f"{entry.get('level')}: {entry.get('text')}")
            if entry.get("level") == "error":
                self.errors.append(f"{entry.get('source')}: {entry.get('text')} "
                                   f"{entry.get('url', '')}".rstrip())
        self._events.append(event)

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        """Send a command and return its result; raise BrowserError on an error answer."""
        ident = self._new_id()
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._receive(deadline)
            if answer is None:
                raise BrowserError(f"Chromium did not answer {method} within {self.timeout}s")
            if answer.get("id") == ident:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        """Wait for an event of this session (it may already have arrived)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self._events:
                if event["method"] == method and event.get("sessionId") == session:
                    self._events.remove(event)
                    return event
            if self._receive(deadline) is None:
                raise BrowserError(f"no {method} within {self.timeout}s")

    def drain(self, seconds: float) -> None:
        """Read whatever arrives in the next ``seconds``."""
        deadline = time.monotonic() + seconds
        while self._receive(deadline) is not None:
            pass


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception", {})
    return (f"uncaught: {exception.get('description') or details.get('text', 'exception')} "
            f"(line {details.get('lineNumber')})")


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode a non-interlaced 8-bit RGB or RGBA PNG into (width, height, RGB rows)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, []
    width = height = colour = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        rows.append(bytes(line) if channels == 3 else
                    bytes(b for i, b in enumerate(line) if i % 4 != 3))
        previous = line
    return width, height, rows


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    if kind == 0:
        return
    if kind == 2:
        line[:] = bytes((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
        elif kind == 4:
            corner = previous[i - bpp] if i >= bpp else 0
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[i] = (line[i] + pred) & 0xFF
        else:
            raise ValueError(f"bad PNG filter {kind}")
