"""Calls to the providers' files and batches endpoints, over aiohttp (as the live judge; no
SDK). Which endpoints a batch is made of is the provider's (``Provider.submit``,
``download``, ``batch_path``: OpenAI uploads a file and creates a batch of it, Anthropic
creates a batch of a file's lines); every call goes through here.

Retries follow the live transport's rules (HTTP 408, 409, 429 and 5xx, timeouts and connection
errors; ``Retry-After``; 0.5 s doubling to 8 s) for every call but the one that creates a
batch: a create that timed out or failed with a 5xx may have created the batch, and sending it
again could pay twice. Such a create is ``Unconfirmed``: for OpenAI, its ``submit`` then looks
for a batch made from the same uploaded file before creating one; Anthropic offers no such
lookup.
HTTP 401, 403 and 404 stop at once (a wrong key, model or URL). No redirect is followed, so
that the key goes nowhere but the prepared base URL's host: a 3xx stops the command with a
sentence naming where it pointed (as the live judge). The key is sent in headers only and
removed, in every form ``transport.Secret`` finds, from anything the server sends back, before
it is read, saved or shown. A JSON answer is read up to ``JSON_BYTES``, an error's body up to
``transport.ERROR_BYTES``; result files are streamed to disk.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from evalstream._files.outputs import AtomicOutput
from evalstream._judge.answer import excerpt
from evalstream._judge.providers.base import Unconfirmed
from evalstream._judge.request import JudgeConfig
from evalstream._judge.transport import (
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

OVERLOADED = 529  # Anthropic: overloaded, nothing was done
DOWNLOAD_BLOCK = 1 << 20
JSON_BYTES = 16 << 20  # a batch object or a page of 100 of them is a few hundred KB


class BatchClient:
    """One provider's batch endpoints for one command; use as ``async with``."""

    def __init__(self, config: JudgeConfig, api_key: str | None, *, timeout: float,
                 max_attempts: int) -> None:
        self.config = config
        self.base = config.base_url
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.secret = Secret(api_key)
        self._headers = {"user-agent": f"evalstream/{__version__}",
                         **config.api.headers(api_key)}
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

    def url(self, path: str) -> str:
        """The URL of an endpoint of the prepared base URL (the provider's to say)."""
        return self.config.api.endpoint(self.config, path)

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
                reason = self.config.api.error_detail(status, data)
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

    async def json(self, method: str, path_or_url: str, **kw: Any) -> dict[str, Any]:
        """A call's JSON object (``kw`` as ``_call``'s: ``body``, ``headers``, ``creates``)."""
        url = path_or_url if "://" in path_or_url else self.url(path_or_url)
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

    async def save(self, url: str, path: str) -> None:
        """A GET's body streamed into ``path``, atomically, without any form of the key."""
        await self._call("GET", url, save_to=path)

    async def get(self, batch_id: str) -> dict[str, Any]:
        """A batch as the provider sees it now."""
        return await self.json("GET", self.config.api.batch_path(batch_id))


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


def _failure(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return f"no complete answer within {timeout:g} s"
    return excerpt(f"{type(exc).__name__}: {exc}")
