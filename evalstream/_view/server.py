"""The local server of ``evalstream view``: the standard library's ``http.server``, GET only.

What it guards against, since every page shows data from files someone else wrote:

- It binds 127.0.0.1 unless told otherwise, and on a loopback address it answers only
  requests whose ``Host`` is that address (or ``localhost``) and its port: a web page that
  rebinds its own domain name to 127.0.0.1 gets nothing (DNS rebinding).
- Every page lives under a path that holds the access token (``/TOKEN/``), printed at
  start; links are relative, so they carry it, and nothing outside that path answers
  (403, a body that does not name it). The token never travels as a cookie: a browser
  sends the cookies of 127.0.0.1 to every server on 127.0.0.1, whatever its port (RFC
  6265, 8.5), and two ports of one address are one site to it, so no cookie attribute
  (``SameSite``, ``HttpOnly``, a name with the port) keeps another local server (a
  notebook, a dev server, another user's) from receiving it and replaying it. A path is
  sent only to this server, and ``Referrer-Policy: no-referrer`` keeps it out of the
  ``Referer`` of any link followed. Other users of the machine, and pages in other tabs,
  cannot read the data.
- Every HTML response carries the strict Content-Security-Policy of the pages (no script,
  nothing loaded, no framing), ``nosniff``, no referrer and no caching; a raw record is
  ``text/plain`` in a sandbox.
- Nothing changes state: other methods get 405, unknown paths 404.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote

from evalstream._render.html import BASE_CSS, strict_csp
from evalstream._view.check import CHECK_CSS, check_page
from evalstream._view.index import ROLES
from evalstream._view.lists import Filters
from evalstream._view.pages import CSS, Site, list_page, message_page, overview, rejects_page
from evalstream._view.records import FileChanged
from evalstream.errors import EvalstreamError, UsageError

DEFAULT_PORT = 8765
PORTS_TRIED = 10  # with no port asked for: 8765 to 8774, then any free one
MAX_URL = 1 << 20  # a longer request line is refused (ids are at most 512 characters)


def _policy() -> str:
    """The header policy: both page styles allowed by hash, and no framing at all."""
    hashes = " ".join(strict_csp(BASE_CSS + css).split("style-src ")[1].split(";")[0]
                      for css in (CSS, CSS + CHECK_CSS))
    return (f"default-src 'none'; style-src {hashes}; base-uri 'none'; form-action 'self'; "
            "frame-ancestors 'none'")


HTML_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class ViewServer(ThreadingHTTPServer):
    """Serves one site; ``token`` is the secret every request's path must start with."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, site: Site, host: str, port: int, token: str | None = None) -> None:
        self.site = site
        self.token = token or secrets.token_urlsafe(18)
        self.policy = _policy()
        if ":" in host:
            self.address_family = socket.AF_INET6
        try:
            super().__init__((host, port), _Handler)
        except OSError as exc:
            if port and exc.errno in (98, 48):  # EADDRINUSE on Linux, macOS
                raise UsageError(f"port {port} on {host} is in use (another view?); give "
                                 "--port N, or --port 0 for any free port.") from None
            raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}."
                             ) from None
        self.port = self.server_address[1]
        self.loopback = _is_loopback(host)
        shown = f"[{host}]" if ":" in host else host
        self.hosts = {f"{shown}:{self.port}"}
        if self.loopback:
            self.hosts |= {f"127.0.0.1:{self.port}", f"localhost:{self.port}",
                           f"[::1]:{self.port}"}
        self.url = f"http://{shown}:{self.port}/"

    @property
    def start_url(self) -> str:
        """The URL to open first, the site's root: its path holds the token."""
        return f"{self.url}{self.token}/"

    def inside(self, path: str) -> str | None:
        """The page ``path`` asks for below the token's folder (``/TOKEN/list/x`` ->
        ``/list/x``, ``/TOKEN`` -> ``""``), or None when it is not below it."""
        folder, slash, rest = path[1:].partition("/")
        if not path.startswith("/") or not hmac.compare_digest(folder.encode(),
                                                               self.token.encode()):
            return None
        return slash + rest


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    site: Site | None = None  # this request's site, once its path holds the token
    server_version = "evalstream-view"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a request log of a review session is noise

    def do_GET(self) -> None:
        self._respond(head=False)

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def _refuse(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"evalstream view only reads: GET and HEAD.\n",
                   {"Content-Type": "text/plain; charset=utf-8", "Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

    # -- the request -----------------------------------------------------------------------
    def _respond(self, head: bool) -> None:
        server = self.server
        self.head = head
        # One handler serves every request of a kept-alive connection: a request earns the
        # site (its pages' navigation) only once its path holds the token.
        self.site = None
        if len(self.path) > MAX_URL:
            return self._page(HTTPStatus.REQUEST_URI_TOO_LONG, "Too long",
                              "The address is too long.")
        if server.loopback and self.headers.get("Host") not in server.hosts:
            # A page on another site whose name now points here (DNS rebinding).
            return self._page(HTTPStatus.MISDIRECTED_REQUEST, "Wrong address",
                              f"This server answers at {server.url} only.")
        # The token is the first folder of the path, never a query or a cookie: a path is
        # sent to this server only (see the module's docstring).
        path, _, query = self.path.partition("?")
        page = server.inside(path)
        if page is None:
            return self._page(HTTPStatus.FORBIDDEN, "Open the address evalstream printed",
                              "This page needs the access token: open the address that "
                              "`evalstream view` printed when it started (the token is "
                              "part of its path).")
        if page == "":  # relative links need the folder's slash
            return self._send(HTTPStatus.SEE_OTHER, b"", {
                "Location": f"{path}/", "Cache-Control": "no-store"})
        # Links are relative to the page's own folder (the raw path, as the browser
        # resolves them), so every link stays below the token's folder.
        site = self.site = replace(server.site,
                                   links=server.site.links.at(page.count("/") - 1))
        params = dict(parse_qsl(query, keep_blank_values=True))
        try:
            self._route(site, page, params)
        except FileChanged as exc:
            self._page(HTTPStatus.CONFLICT, "A file changed", str(exc))
        except EvalstreamError as exc:
            self._page(HTTPStatus.BAD_REQUEST, "Cannot show this", str(exc))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:
            traceback.print_exc(file=sys.stderr)
            self._page(HTTPStatus.INTERNAL_SERVER_ERROR, "Internal error",
                       "evalstream view failed on this page (a bug: please report it with "
                       "the message printed where view runs).")

    def _route(self, site: Site, path: str, params: dict[str, str]) -> None:
        value: Callable[[str], str | None] = lambda name: params.get(name) or None  # noqa: E731
        if path == "/":
            return self._html(overview(site))
        if path.startswith("/list/"):
            name = unquote(path[len("/list/"):])
            if name in site.lists.available():
                filters = Filters(rubric=value("rubric"), source=value("source"),
                                  group=value("group"), kind=value("kind"),
                                  case=value("case"))
                return self._html(list_page(site, name, filters, _page_number(params))[0])
        elif path == "/rejects":
            return self._html(rejects_page(site, value("file"), value("kind"),
                                           _page_number(params)))
        elif path == "/check":
            case, rubric = params.get("case"), params.get("rubric")
            if case is not None and rubric is not None:
                html = check_page(site, case, rubric)
                if html is not None:
                    return self._html(html)
                return self._page(HTTPStatus.NOT_FOUND, "No such check",
                                  "No file has a record for this case and rubric.")
        elif path.startswith("/raw/"):
            parts = path.split("/")
            if len(parts) == 4 and parts[2] in site.index.files and parts[3].isdigit():
                return self._raw(site, parts[2], int(parts[3]))
        self._page(HTTPStatus.NOT_FOUND, "Not found", "There is no page at this address.")

    def _raw(self, site: Site, role: str, offset: int) -> None:
        if not _is_record_offset(site, role, offset):
            return self._page(HTTPStatus.NOT_FOUND, "Not found", "No line starts there.")
        line = site.source.line(role, offset)
        self._send(HTTPStatus.OK, line + b"\n", {
            "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "no-store"})

    # -- the response ----------------------------------------------------------------------
    def _html(self, html: str, status: HTTPStatus = HTTPStatus.OK) -> None:
        headers = dict(HTML_HEADERS)
        headers["Content-Security-Policy"] = self.server.policy
        self._send(status, html.encode("utf-8", "replace"), headers)

    def _page(self, status: HTTPStatus, title: str, message: str) -> None:
        """A message page; with the site's navigation only below the token's folder."""
        self._html(message_page(self.site, title, message), status)

    def _send(self, status: HTTPStatus, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        # On every response: a link followed from any page never carries its address (the
        # token) in a Referer.
        self.send_header("Referrer-Policy", "no-referrer")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not getattr(self, "head", False):
            self.wfile.write(body)


def _page_number(params: dict[str, str]) -> int:
    page = params.get("page", "1")
    return int(page) if page.isdigit() and len(page) < 12 else 1


def _is_record_offset(site: Site, role: str, offset: int) -> bool:
    """Whether a line of the ``role`` file that the index knows starts at ``offset``."""
    import numpy as np

    ix = site.index
    candidates = {"cases": [ix.case_offset], "verdicts": [ix.run.offset],
                  "compare": [ix.other.offset] if ix.other is not None else [],
                  "states": [np.sort(ix.state_offset)],
                  "compare-cases": [ix.paired_offset] if ix.paired_offset is not None
                  else []}[role]
    log = ix.rejects
    if len(log):
        roles = np.frombuffer(log.role, dtype=np.uint8)
        offsets = np.frombuffer(log.offset, dtype=np.uint64)
        if bool(((roles == ROLES.index(role)) & (offsets == offset)).any()):
            return True
    for offsets in candidates:
        at = int(np.searchsorted(offsets, np.uint64(offset)))
        if at < len(offsets) and int(offsets[at]) == offset:
            return True
    return False


def listen(site: Site, host: str, port: int | None) -> ViewServer:
    """A server on ``port``; with None, on the first free one of 8765 to 8774, else any."""
    if port is not None:
        return ViewServer(site, host, port)
    for candidate in [*range(DEFAULT_PORT, DEFAULT_PORT + PORTS_TRIED), 0]:
        try:
            return ViewServer(site, host, candidate)
        except UsageError:
            if candidate == 0:
                raise
    raise AssertionError("unreachable")


def serve(site: Site, host: str = "127.0.0.1", port: int | None = None,
          open_browser: bool = True, announce: Callable[[str], None] | None = None) -> int:
    """Serve the site until Ctrl-C; return 0. ``port`` None: the first free of 8765-8774.
    ``announce`` gets the URL to open (with its token) once the server listens."""
    server = listen(site, host, port)
    try:
        # Ctrl-C stops the server from the moment its address is announced: a user (or a test)
        # may press it before serve_forever is reached.
        if announce is not None:
            announce(server.start_url)
        if open_browser:
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(server.start_url,),
                             daemon=True).start()
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
