"""The providers' files and batches endpoints, over aiohttp (as the live judge; no SDK).

- OpenAI (https://platform.openai.com/docs/api-reference/batch): ``POST /files`` (multipart,
  ``purpose=batch``), ``POST /batches`` (``input_file_id``, ``endpoint``,
  ``completion_window: 24h``, ``metadata``), ``GET /batches/{id}``, ``GET /batches`` (pages of
  ``data``, ``has_more``, ``last_id``), ``GET /files/{id}/content``.
- Anthropic (https://docs.anthropic.com/en/api/creating-message-batches): ``POST
  /messages/batches`` (``{"requests": [{custom_id, params}, ...]}``), ``GET
  /messages/batches/{id}``, ``GET`` its ``results_url``.

Retries follow the live transport's rules (HTTP 408, 409, 429 and 5xx, timeouts and connection
errors; ``Retry-After``; 0.5 s doubling to 8 s) for every call but the one that creates a
batch: a create that timed out or failed with a 5xx may have created the batch, and sending it
again could pay twice. Such a create is ``Unconfirmed``: for OpenAI, ``remote`` then looks for
a batch made from the same uploaded file before creating one; Anthropic offers no such lookup.
HTTP 401, 403 and 404 stop at once (a wrong key, model or URL). No redirect is followed, so
that the key goes nowhere but the prepared base URL's host: a 3xx stops the command with a
sentence naming where it pointed (as the live judge). The key is sent in headers only and
removed, in every form ``transport.Secret`` finds, from anything the server sends back, before
it is read, saved or shown. A JSON answer is read up to ``JSON_BYTES``, an error's body up to
``transport.ERROR_BYTES``; result files are streamed to disk.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import msgspec

from evalstream._files.outputs import AtomicOutput
from evalstream._judge.answer import excerpt, http_error_detail
from evalstream._judge.request import JudgeConfig
from evalstream._judge.transport import (
    ANTHROPIC_VERSION,
    ERROR_BYTES,
    FATAL_STATUSES,
    MAX_RETRY_AFTER,
    RETRY_STATUSES,
    Secret,
    backoff,
    read_body,
    redirect_detail,
    retry_after,
)
from evalstream._version import __version__
from evalstream.errors import OutputError, UsageError

COMPLETION_WINDOW = "24h"
OVERLOADED = 529  # Anthropic: overloaded, nothing was done
DOWNLOAD_BLOCK = 1 << 20
JSON_BYTES = 16 << 20  # a batch object or a page of 100 of them is a few hundred KB


class Unconfirmed(Exception):
    """A create call ended without an answer that says whether the batch was made."""


class BatchClient:
    """One provider's batch endpoints for one command; use as ``async with``."""

    def __init__(self, config: JudgeConfig, api_key: str | None, *, timeout: float,
                 max_attempts: int) -> None:
        self.config = config
        self.base = config.base_url
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.anthropic = config.provider == "anthropic"
        self.secret = Secret(api_key)
        self._headers = {"user-agent": f"evalstream/{__version__}"}
        if self.anthropic:
            self._headers["anthropic-version"] = ANTHROPIC_VERSION
            if api_key:
                self._headers["x-api-key"] = api_key
        elif api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._session: Any = None

    async def __aenter__(self) -> BatchClient:
        import aiohttp

        self._aiohttp = aiohttp
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.timeout), headers=self._headers,
            trust_env=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    def _url(self, path: str) -> str:
        return self.base + path

    # -- one call, with retries ------------------------------------------------------------------
    async def _call(self, method: str, url: str, *, body: Any = None,
                    headers: dict[str, str] | None = None, creates: bool = False,
                    save_to: str | None = None) -> bytes:
        """The 200 body of a call (with ``save_to``, streamed into that file, atomically).
        ``body`` makes a fresh payload for each attempt. A create (``creates``) is retried only
        when the server said nothing was done (429, 529); otherwise it is ``Unconfirmed``."""
        aiohttp = self._aiohttp
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            sink = None
            try:
                async with self._session.request(
                        method, url, data=body() if body is not None else None,
                        headers=headers, allow_redirects=False) as response:
                    status = response.status
                    if status == 200 and save_to is not None:
                        sink = AtomicOutput(save_to)
                        redact = _Redactor(self.secret)
                        async for block in response.content.iter_chunked(DOWNLOAD_BLOCK):
                            sink.write(redact(block))
                        sink.write(redact.rest())
                        sink.commit()
                        return b""
                    data, whole = await read_body(response,
                                                  JSON_BYTES if status == 200 else ERROR_BYTES)
                    data = self.secret.redact(data)
                    if status == 200:
                        if not whole:
                            raise OutputError(f"{method} {url} answered more than "
                                              f"{JSON_BYTES >> 20} MiB, more than any batch "
                                              "object: is --base-url the provider's API?")
                        return data
                    response_headers = response.headers
            except (asyncio.TimeoutError, TimeoutError, aiohttp.ClientError) as exc:
                if sink is not None:
                    sink.abort()
                reason = self.secret.redact_text(_failure(exc, self.timeout))
                # No connection was made: nothing was sent, so a create may be sent again.
                if creates and not isinstance(exc, aiohttp.ClientConnectorError):
                    raise Unconfirmed(reason) from exc
            except BaseException:
                if sink is not None:
                    sink.abort()
                raise
            else:
                if 300 <= status < 400:
                    raise UsageError(f"{method} {url}: " + redirect_detail(
                        status, response_headers.get("location"), self.secret) + ".")
                reason = http_error_detail(status, data)
                if status in FATAL_STATUSES:
                    raise UsageError(
                        f"the server refused {method} {url} ({reason}); check the API key "
                        "variable and the base URL the batch was prepared for.")
                if creates and status not in (429, OVERLOADED):
                    if status >= 500 or status == 408:
                        raise Unconfirmed(reason)
                    raise UsageError(f"the server refused {method} {url}: {reason}")
                if status not in RETRY_STATUSES and status < 500:
                    raise UsageError(f"the server refused {method} {url}: {reason}")
                wait = retry_after(response_headers)
                if wait is not None and wait > MAX_RETRY_AFTER:
                    raise OutputError(f"{method} {url}: {reason}; the server asks to wait "
                                      f"{wait:.0f} s: run the command again later.")
            if attempt >= self.max_attempts:
                raise OutputError(f"{method} {url} failed after {attempt} attempts: {reason}; "
                                  "run the command again to continue.")
            await asyncio.sleep(wait if wait is not None else backoff(attempt))

    async def _json(self, method: str, path_or_url: str, **kw: Any) -> dict[str, Any]:
        url = path_or_url if "://" in path_or_url else self._url(path_or_url)
        data = await self._call(method, url, **kw)
        try:
            value = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise OutputError(f"{method} {url} answered with something that is not JSON: "
                              f"{excerpt(data)}") from exc
        except RecursionError:
            raise OutputError(f"{method} {url} answered JSON nested too deeply to read: "
                              f"{excerpt(data)}; is --base-url the provider's API?") from None
        if not isinstance(value, dict):
            raise OutputError(f"{method} {url} answered {excerpt(data)}, not a JSON object.")
        return value

    # -- OpenAI ----------------------------------------------------------------------------------
    async def upload(self, path: str, name: str) -> str:
        """Upload a request file (``purpose=batch``); its file id."""
        aiohttp = self._aiohttp

        def form() -> Any:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", open(path, "rb"), filename=name,
                           content_type="application/jsonl")
            return data

        found = await self._json("POST", "/files", body=form)
        return _field(found, "id", "/files")

    async def create_openai(self, file_id: str, metadata: dict[str, str]) -> dict[str, Any]:
        """Create a batch of an uploaded file."""
        payload = msgspec.json.encode({"input_file_id": file_id,
                                       "endpoint": "/v1/chat/completions",
                                       "completion_window": COMPLETION_WINDOW,
                                       "metadata": metadata})
        return await self._json("POST", "/batches", body=lambda: payload, creates=True,
                                headers={"content-type": "application/json"})

    async def find_openai(self, file_id: str, pages: int = 10) -> dict[str, Any] | None:
        """A batch made from ``file_id``, if one was (newest first, the first ``pages``)."""
        after = None
        for _ in range(pages):
            query = "/batches?limit=100" + (f"&after={after}" if after else "")
            page = await self._json("GET", query)
            data = page.get("data") or []
            for batch in data:
                if isinstance(batch, dict) and batch.get("input_file_id") == file_id:
                    return batch
            if not page.get("has_more") or not data:
                return None
            after = page.get("last_id") or data[-1].get("id")
        return None

    async def get(self, batch_id: str) -> dict[str, Any]:
        """A batch as the provider sees it now."""
        path = f"/messages/batches/{batch_id}" if self.anthropic else f"/batches/{batch_id}"
        return await self._json("GET", path)

    async def download_file(self, file_id: str, path: str) -> None:
        """An OpenAI file's content (an output or error file), streamed into ``path``."""
        await self._call("GET", self._url(f"/files/{file_id}/content"), save_to=path)

    # -- Anthropic -------------------------------------------------------------------------------
    async def create_anthropic(self, path: str) -> dict[str, Any]:
        """Create a batch of a request file's lines, streamed as ``{"requests": [...]}``."""
        size = os.path.getsize(path)
        return await self._json(
            "POST", "/messages/batches", body=lambda: _wrapped(path, size), creates=True,
            headers={"content-type": "application/json", "content-length": str(size + 14)})

    async def download_results(self, batch: dict[str, Any], path: str) -> None:
        """An ended Anthropic batch's results, streamed into ``path``. The ``results_url`` is
        followed only on the API's own host: the key is never sent anywhere else."""
        own = f"/messages/batches/{batch['id']}/results"
        url = batch.get("results_url")
        if not isinstance(url, str) or _origin(url) != _origin(self.base):
            url = self._url(own)
        await self._call("GET", url, save_to=path)


class _Redactor:
    """Removes the API key, in every form ``Secret`` finds, from a stream of blocks (a result
    file might echo it in an error or an answer), including a copy cut in two by a block
    boundary: the last ``Secret.longest - 1`` bytes wait for the next block."""

    def __init__(self, secret: Secret) -> None:
        self.secret = secret
        self.tail = b""

    def __call__(self, block: bytes) -> bytes:
        if self.secret.key is None:
            return block
        data = self.secret.redact(self.tail + block)
        cut = max(0, len(data) - (self.secret.longest - 1))
        self.tail = data[cut:]
        return data[:cut]

    def rest(self) -> bytes:
        rest, self.tail = self.tail, b""
        return rest


async def _wrapped(path: str, size: int) -> AsyncIterator[bytes]:
    """A request file as the body of an Anthropic create call: ``{"requests":[`` + its lines
    joined by commas + ``]}`` (JSON lines hold no raw newline, so each newline is a seam)."""
    yield b'{"requests":['
    left = size
    with open(path, "rb") as f:
        while left:
            block = f.read(min(DOWNLOAD_BLOCK, left))
            if not block:
                break
            left -= len(block)
            if not left:
                block = block.removesuffix(b"\n")
            yield block.replace(b"\n", b",")
    yield b"]}"


def _failure(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return f"no complete answer within {timeout:g} s"
    return excerpt(f"{type(exc).__name__}: {exc}")


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def _field(value: dict[str, Any], name: str, where: str) -> str:
    found = value.get(name)
    if not isinstance(found, str) or not found:
        raise OutputError(f"{where} answered without `{name}`: {excerpt(str(value))}")
    return found
