"""Sending one request body, with evalstream's only retry layer.

aiohttp, directly (no provider SDK): the body sent is exactly the bytes that were hashed into
the store key, and no second retry layer hides attempts or ``Retry-After``. httpx was the
first choice; at 64 connections against the benchmark's 50 ms server its connection pool
(httpcore 1.0.9, quadratic in the connections) spent 6.9 ms of CPU a request and reached 101
requests/s, httpx2 780 us and 635/s, aiohttp 183 us and 984/s (benchmarks/README.md,
``python -m benchmarks judge-clients``).

Retries, as the official SDKs do them: HTTP 408, 409, 429 and 5xx, timeouts and connection
errors are retried up to ``max_attempts`` in all, waiting what ``retry-after-ms`` or
``Retry-After`` asks (seconds or an HTTP date; more than two minutes is not retried), else
0.5 s doubling up to 8 s, less up to a quarter at random. A 429 also halves the concurrency.
Other statuses are not retried; 401, 403 and 404 stop the run (a wrong key, a model or URL
that does not exist would fail every request alike).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from evalstream import __version__
from evalstream.errors import UsageError
from evalstream.judge.answer import excerpt, http_error_detail
from evalstream.judge.limits import Concurrency, TokenBucket
from evalstream.judge.request import JudgeConfig

RETRY_STATUSES = frozenset({408, 409, 429})
FATAL_STATUSES = frozenset({401, 403, 404})
MAX_RETRY_AFTER = 120.0
INITIAL_DELAY, MAX_DELAY = 0.5, 8.0
ANTHROPIC_VERSION = "2023-06-01"
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
REDACTED = "[redacted]"


def key_from_environment(config: JudgeConfig, api_key_env: str | None,
                         environ: Mapping[str, str]) -> str | None:
    """The API key from the environment (``api_key_env``, else the provider's usual variable);
    None for a server that needs none. Raises UsageError when the provider's public endpoint,
    or a variable named on purpose, would give no key."""
    name = api_key_env or KEY_ENV[config.provider]
    key = environ.get(name) or None
    public = config.base_url in ("https://api.openai.com/v1", "https://api.anthropic.com/v1")
    if key is None and (public or api_key_env):
        raise UsageError(f"set {name} in the environment to the API key (keys are read from the "
                         "environment only, never from a file or an option).")
    return key


class Reply(NamedTuple):
    """How a request ended: a 200 body, or a failure cause and detail (``fatal``: stop)."""

    body: bytes | None
    request_id: str | None
    cause: str | None
    detail: str | None
    latency_ms: float  # of the last attempt
    attempts: int
    fatal: bool = False


class Tally:
    """What the transport did: attempts, retries by reason, rate-limit answers."""

    def __init__(self) -> None:
        self.attempts = 0
        self.retries = 0
        self.rate_limited = 0
        self.retried: dict[str, int] = {}

    def retry(self, reason: str) -> None:
        self.retries += 1
        self.retried[reason] = self.retried.get(reason, 0) + 1


class Transport:
    """An HTTP session for one judge run; use as ``async with``."""

    def __init__(self, config: JudgeConfig, api_key: str | None, concurrency: Concurrency, *,
                 timeout: float, max_attempts: int, rpm: TokenBucket | None = None,
                 tpm: TokenBucket | None = None) -> None:
        self.config = config
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.rpm, self.tpm = rpm, tpm
        self.tally = Tally()
        self._secrets = [s.encode() for s in (api_key,) if s]
        self._headers = {"content-type": "application/json",
                         "user-agent": f"evalstream/{__version__}"}
        if config.provider == "anthropic":
            self._headers["anthropic-version"] = ANTHROPIC_VERSION
            if api_key:
                self._headers["x-api-key"] = api_key
        elif api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._id_header = "request-id" if config.provider == "anthropic" else "x-request-id"
        self._session: Any = None

    async def __aenter__(self) -> Transport:
        import aiohttp

        self._aiohttp = aiohttp
        connector = aiohttp.TCPConnector(limit=self.concurrency.maximum, limit_per_host=0,
                                         ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout),
            headers=self._headers, auto_decompress=True, trust_env=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    def redact(self, data: bytes) -> bytes:
        """``data`` with any copy of the API key replaced (a server may echo what it got)."""
        for secret in self._secrets:
            data = data.replace(secret, REDACTED.encode())
        return data

    def _redact_text(self, text: str) -> str:
        return self.redact(text.encode()).decode("utf-8", "replace")

    async def send(self, body: bytes, tokens: int) -> Reply:
        """Send one body (``tokens``: its estimate, for --tpm) until it is answered or out of
        attempts; the caller holds a concurrency slot."""
        aiohttp = self._aiohttp
        attempt = 0
        while True:
            attempt += 1
            if self.rpm is not None:
                await self.rpm.take(1)
            if self.tpm is not None:
                await self.tpm.take(tokens)
            self.tally.attempts += 1
            started = time.perf_counter()
            wait: float | None = None
            try:
                async with self._session.post(self.config.url, data=body) as response:
                    data = await response.read()
                    status, headers = response.status, response.headers
            except (asyncio.TimeoutError, TimeoutError):
                cause, detail = "timeout", f"no complete answer within {self.timeout:g} s"
            except aiohttp.ClientError as exc:
                cause, detail = "connection", excerpt(f"{type(exc).__name__}: {exc}")
            else:
                latency = (time.perf_counter() - started) * 1000
                request_id = headers.get(self._id_header)
                if status == 200:
                    self.concurrency.succeeded()
                    return Reply(self.redact(data), request_id, None, None, latency, attempt)
                cause, detail = "http_error", http_error_detail(status, data)
                if status == 429:
                    self.tally.rate_limited += 1
                    self.concurrency.rate_limited()
                if status in FATAL_STATUSES:
                    return Reply(None, request_id, cause, self._redact_text(detail), latency,
                                 attempt, fatal=True)
                if status not in RETRY_STATUSES and status < 500:
                    return Reply(None, request_id, cause, self._redact_text(detail), latency,
                                 attempt)
                wait = retry_after(headers)
                if wait is not None and wait > MAX_RETRY_AFTER:
                    return Reply(None, request_id, cause, self._redact_text(
                        f"{detail} (asked to retry after {wait:.0f} s: more than "
                        f"{MAX_RETRY_AFTER:.0f})"), latency, attempt)
                cause_key = f"http {status}"
            if cause != "http_error":
                cause_key = cause
                latency = (time.perf_counter() - started) * 1000
            if attempt >= self.max_attempts:
                return Reply(None, None, cause, self._redact_text(
                    f"{detail} (after {attempt} attempts)"), latency, attempt)
            self.tally.retry(cause_key)
            await asyncio.sleep(wait if wait is not None else backoff(attempt))


def backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based) when the server said none."""
    return min(INITIAL_DELAY * 2 ** (attempt - 1), MAX_DELAY) * (1 - 0.25 * random.random())


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or
    an HTTP date), else None."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if seconds == seconds and seconds >= 0:  # not NaN
            return seconds
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return None
