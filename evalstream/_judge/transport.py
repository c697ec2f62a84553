"""Sending one request body, with evalstream's only retry layer.

aiohttp, directly (no provider SDK): the body sent is exactly the bytes that were hashed into
the store key, and no second retry layer hides attempts or ``Retry-After``. httpx was the
first choice; at 64 connections against the benchmark's 50 ms server its connection pool
(httpcore 1.0.9, quadratic in the connections) spent 6.9 ms of CPU a request and reached 101
requests/s, httpx2 780 us and 635/s, aiohttp 183 us and 984/s (benchmarks/README.md,
``python -m benchmarks judge-clients``).

Retries, as the official SDKs do them: HTTP 408, 409, 429 and 5xx, timeouts, connection
errors and a 200 whose body is not JSON at all (``garbled``) are retried up to
``max_attempts`` failed attempts in all, waiting what ``retry-after-ms`` or ``Retry-After``
asks (seconds or an HTTP date; more than two minutes is not retried), else 0.5 s doubling up
to 8 s, less up to a quarter at random. A 429 or 503 that says when to come back is waited
out and is no failed attempt: its waits are bounded by time (``max_wait``), not by a count
(issue 27); a 429 that does waits without holding its concurrency slot, and halves the
concurrency only when the server is congested (``limits``: most attempts refused, the quota
its headers said spent, or no wait named; issue 31). A failed attempt's backoff gives the
slot up too, unless the server is failing (at least a quarter of the recent attempts
failed: an outage), when it holds it, as a 503's wait does (``limits``). The server's
rate-limit headers pace the requests before any 429 (``limits.Pacer``). Other statuses are
not retried; 401, 403 and 404 stop the run (a wrong key, a model or URL that does not
exist would fail every request alike), and so do the first ``SAME_REFUSALS`` attempts
refused alike before any answer (a gateway says a wrong key or model with a 400 or a 500;
a port with nothing listening refuses every connection).

No redirect is followed (issue 23): aiohttp drops ``Authorization`` on a redirect to another
origin but keeps every session header (Anthropic's ``x-api-key``), and would send the judge
state there too. A 3xx stops the run like a 404, with a sentence naming where it pointed.

What differs between providers (the URL, the headers and the key, the request-id header,
the error's message) comes from the provider (``JudgeConfig.api``).

What a server sends back is read within bounds: a 200 body up to ``answer_bytes`` (what an
answer of ``--max-output-tokens`` can take), an error body up to ``ERROR_BYTES``; any copy of
the key in it, raw or JSON-escaped, and in the request-id header, is replaced before it is
stored or written (``Secret``).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import random
import re
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import msgspec

from evalstream._checks.exact import linear_regex
from evalstream._judge.answer import excerpt
from evalstream._judge.limits import Concurrency, Pacer, TokenBucket
from evalstream._judge.providers import REGISTRY
from evalstream._judge.providers.base import Signer
from evalstream._judge.request import JudgeConfig, shown_url
from evalstream._version import __version__
from evalstream.errors import UsageError

RETRY_STATUSES = frozenset({408, 409, 429})
FATAL_STATUSES = frozenset({401, 403, 404})
# Refusals that say the server is busy, not that the request is wrong: never "refused alike".
TRANSIENT_STATUSES = frozenset({408, 409, 429, 503, 529})
# A refusal with Retry-After from these is a wait, not a failed attempt.
POLITE_STATUSES = frozenset({429, 503, 529})
SAME_REFUSALS = 8  # refusals alike, before any answer, that stop a run
MAX_RETRY_AFTER = 120.0
DEFAULT_MAX_WAIT = 600.0  # seconds of Retry-After waits a request may take in all
INITIAL_DELAY, MAX_DELAY = 0.5, 8.0
REDACTED = "[redacted]"
# A 200 body is read up to 1 KiB a token of --max-output-tokens, plus 1 MiB for the rest of the
# response (ids, usage, logprobs): a token is at most 128 bytes of text in the encodings
# evalstream counts with, and JSON escaping at the two levels of an answer (a JSON answer in a
# JSON string) makes a byte of text at most 7 (a control character, ``\\u0001``).
ANSWER_BYTES_A_TOKEN = 1024
ANSWER_BYTES_BESIDES = 1 << 20
ERROR_BYTES = 64 << 10  # of an error body only the message, cut to 200 characters, is kept
READ_BLOCK = 1 << 20
# JSON escapes of a key's characters are found under up to this many backslashes (a JSON
# answer in a JSON string needs two; what is under more is decoded by no reader of evalstream).
MAX_BACKSLASHES = 16
_skip = msgspec.json.Decoder(msgspec.Raw).decode  # checks a body is JSON, builds nothing


def answer_bytes(max_output_tokens: int) -> int:
    """The most bytes of a 200 body read: more cannot be an answer of ``max_output_tokens``."""
    return ANSWER_BYTES_BESIDES + ANSWER_BYTES_A_TOKEN * max_output_tokens


def key_from_environment(config: JudgeConfig, api_key_env: str | None,
                         environ: Mapping[str, str]) -> str | None:
    """The API key from the environment (``api_key_env``, else the provider's usual variable);
    None for a server that needs none. Raises UsageError when a provider's public endpoint
    (any provider's: one named with another's --provider still wants its key), or a variable
    named on purpose, would give no key."""
    name = api_key_env or config.api.key_env
    key = environ.get(name) or None
    for other in () if api_key_env else config.api.key_env_also:
        if key is None and environ.get(other):
            name, key = other, environ[other]
    public = config.api.key_always or any(p.key_required and config.base_url == p.base_url
                                          for p in REGISTRY.values())
    if key is None and (public or api_key_env):
        raise UsageError(f"set {name} in the environment to the API key (keys are read from the "
                         "environment only, never from a file or an option).")
    if key is not None:
        check_key(name, key)
    return key


def check_key(name: str, key: str) -> None:
    """Raise UsageError unless every character of the key in variable ``name`` is visible
    ASCII other than a quote or a backslash, as keys are and as an HTTP header can carry (and
    as ``Secret`` finds in every escaped form). A key is refused, not stripped: one pasted
    with a carriage return or a line break may hold more than the key. The sentence names the
    character and where it is, never the key."""
    for i, c in enumerate(key):
        if "!" <= c <= "~" and c not in '"\\':
            continue
        what = {"\r": "a carriage return (CR)", "\n": "a line feed (LF)", " ": "a space",
                "\t": "a tab", '"': "a double quote", "\\": "a backslash"}.get(
                    c, f"the character U+{ord(c):04X}")
        where = "at its end" if i == len(key) - 1 else f"at character {i + 1} of {len(key)}"
        raise UsageError(
            f"{name} holds {what} {where}; an API key is visible ASCII without quotes or "
            f"backslashes (a line copied from a Windows file ends with CR): set {name} to the "
            "key alone.")


class Secret:
    """The API key, and every form a server can send it back in: its bytes, and JSON escapes
    of any of its characters (``\\u0073``, ``\\/``) under any number of backslashes up to
    ``MAX_BACKSLASHES`` (an answer's JSON inside a JSON string escapes them once more). Found
    by one RE2 pattern: linear in the data, whatever the server sends.

    A match takes the whole run of backslashes before it (RE2 finds the leftmost match), so
    the JSON around ``[redacted]`` stays valid and a verdict is still read from it. The key
    is replaced all the same, but the JSON may not stay readable (the answer is then
    unscored), under a longer run, or where a match starts inside a ``\\u`` escape: a key that
    begins with a hex digit or ``u`` and is echoed right after an escape whose last digits
    repeat its first ones. Keys hold no quote or backslash (``check_key``)."""

    def __init__(self, key: str | None) -> None:
        self.key = key or None
        self._pattern: Any = None
        # the most bytes one form of the key takes: a stream holds back one less
        self.longest = 0
        if self.key is None:
            return
        parts = []
        for c in self.key:
            hex_digits = "".join(f"[{d}{d.upper()}]" if d.isalpha() else d
                                 for d in f"{ord(c):04x}")
            parts.append(f"\\\\{{0,{MAX_BACKSLASHES}}}(?:{re.escape(c)}|u{hex_digits})")
        self._pattern = linear_regex("".join(parts))
        self.longest = len(self.key) * (MAX_BACKSLASHES + 6)

    def redact(self, data: bytes) -> bytes:
        """``data`` with every form of the key replaced by ``[redacted]``."""
        if self._pattern is None:
            return data
        return bytes(self._pattern.sub(REDACTED.encode(), data))

    def redact_text(self, text: str) -> str:
        """The same for text (a header value, an error message; any code point kept)."""
        if self._pattern is None:
            return text
        return self.redact(text.encode("utf-8", "surrogatepass")).decode("utf-8",
                                                                         "surrogatepass")


async def read_body(response: Any, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of an aiohttp response's body (after decompression), and
    whether that is all of it. A body left unread closes its connection when released."""
    parts: list[bytes] = []
    size = 0
    while True:
        block = await response.content.read(min(READ_BLOCK, limit + 1 - size))
        if not block:
            return b"".join(parts), True
        parts.append(block)
        size += len(block)
        if size > limit:
            return b"".join(parts)[:limit], False


def redirect_detail(status: int, location: str | None, secret: Secret) -> str:
    """Why a 3xx is not followed, naming where it pointed (never a credential in it)."""
    where = f"a redirect to {secret.redact_text(shown_url(location))}" if location else \
        "a redirect status without a location"
    return (f"HTTP {status}: {where}, not followed: evalstream sends the API key and the judge "
            "states to --base-url only; give the URL it names as --base-url if that server is "
            "the one to use")


class Reply(NamedTuple):
    """How a request ended: a 200 body, or a failure cause and detail (``fatal``: stop)."""

    body: bytes | None
    request_id: str | None
    cause: str | None
    detail: str | None
    latency_ms: float  # of the last attempt
    attempts: int
    fatal: bool = False
    whole: bool = True  # False: the body was longer than the transport's answer_limit


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
                 tpm: TokenBucket | None = None, max_wait: float = DEFAULT_MAX_WAIT,
                 signer: Signer | None = None) -> None:
        self.config = config
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.max_wait = max_wait
        self.signer = signer  # headers computed from each request (Provider.signer)
        self.pacer = Pacer(MAX_RETRY_AFTER)
        self.answered = False  # an answer came: refusals alike no longer stop the run
        # the refusal every attempt met, once SAME_REFUSALS of them were alike: stop
        self.refused: str | None = None
        self.unreachable = False  # ... and it was no connection made at all (nothing listening)
        self._same: str | None = None
        self._same_count = 0
        self._same_bodies: set[bytes] = set()
        self.rpm, self.tpm = rpm, tpm
        self.tally = Tally()
        self.secret = Secret(api_key or (signer.secret if signer is not None else None))
        self.answer_limit = answer_bytes(config.max_output_tokens)
        self._headers = {"content-type": "application/json",
                         "user-agent": f"evalstream/{__version__}", **config.api.headers(api_key)}
        self._id_header = config.api.request_id_header
        self._session: Any = None

    async def __aenter__(self) -> Transport:
        import aiohttp

        self._aiohttp = aiohttp
        connector = aiohttp.TCPConnector(limit=self.concurrency.maximum, limit_per_host=0,
                                         ttl_dns_cache=300)
        import yarl

        # A signed request is sent exactly as built (the signature covers the path: `%3A`
        # must stay escaped); any other as aiohttp spells it (a host name made IDNA).
        self._url = yarl.URL(self.config.url, encoded=self.signer is not None)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout),
            headers=self._headers, auto_decompress=True, trust_env=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def send(self, body: bytes, tokens: int, answers: int = 1) -> Reply:
        """Send one body (``tokens``: its estimate, for --tpm and the server's token quota)
        until it is answered or out of attempts; the caller holds a concurrency slot. What
        the server sent is in the reply with every form of the key replaced, and a 200 body
        longer than ``answers`` times ``answer_limit`` (a request for several samples is
        answered with each) cut there (``Reply.whole`` False).

        A refusal that says when to come back (a 429 or 503 with ``Retry-After``) is waited
        out and not counted as a failed attempt: the request gives up once such waits add up
        to more than ``max_wait`` seconds (issue 27)."""
        aiohttp = self._aiohttp
        redact = self.secret.redact_text
        attempt = failed = 0
        waited = 0.0
        while True:
            attempt += 1
            resting = False  # this attempt's wait is a 429's Retry-After: no slot held
            if self.rpm is not None:
                await self.rpm.take(1)
            if self.tpm is not None:
                await self.tpm.take(tokens)
            await self.pacer.before(tokens)
            self.tally.attempts += 1
            started = time.perf_counter()
            wait: float | None = None
            headers = None
            try:
                signed = self.signer.sign(self.config.url, body) if self.signer else None
                async with self._session.post(self._url, data=body, headers=signed,
                                              allow_redirects=False) as response:
                    status = response.status
                    data, whole = await read_body(
                        response, self.answer_limit * answers if status == 200
                        else ERROR_BYTES)
                    headers = response.headers  # only once the body is read (a cut is none)
            except (asyncio.TimeoutError, TimeoutError):
                cause, detail = "timeout", f"no complete answer within {self.timeout:g} s"
            except aiohttp.ClientError as exc:
                cause, detail = "connection", excerpt(redact(f"{type(exc).__name__}: {exc}"))
                if isinstance(exc, aiohttp.ClientConnectorError):
                    # No connection made at all (nothing listening, no such host): alike for
                    # every request, as a refusal is (issue 25). A connection cut once made
                    # is a fault on the way, never counted here.
                    self._refused(detail, body, connecting=True)
            else:
                latency = (time.perf_counter() - started) * 1000
                request_id = headers.get(self._id_header)
                if request_id is not None:
                    request_id = redact(request_id)
                data = self.secret.redact(data)
                if status == 200 and (not whole or is_json(data)):
                    self.pacer.after(headers)
                    self.concurrency.succeeded()
                    self.answered = True
                    return Reply(data, request_id, None, None, latency, attempt, whole=whole)
            # The pace is set by answers; a refusal's wait is its Retry-After (AIMock's 429s
            # carry fixed headers saying no tokens are left for six minutes).
            self.pacer.after(None)
            if headers is not None:
                if status == 200:
                    # Not JSON at all (a proxy's error page, a body cut short): a fault on
                    # the way, not an answer of the wrong shape; asked again, never stored.
                    cause, detail = "garbled", f"HTTP 200 with a body that is not JSON: " \
                        f"{excerpt(data)}"
                    cause_key = cause
                elif 300 <= status < 400:
                    return Reply(None, request_id, "http_error", redirect_detail(
                        status, headers.get("location"), self.secret), latency, attempt,
                        fatal=True)
                else:
                    cause, detail = "http_error", self.config.api.error_detail(status, data)
                    cause_key = f"http {status}"
                    wait = retry_after(headers)
                    if status == 429:
                        self.tally.rate_limited += 1
                        self.concurrency.rate_limited(wait_named=wait is not None,
                                                      quota_spent=self.pacer.spent(tokens))
                    if status in FATAL_STATUSES:
                        return Reply(None, request_id, cause, detail, latency, attempt,
                                     fatal=True)
                    if status not in TRANSIENT_STATUSES and wait is None:
                        self._refused(detail, body)
                    if self.refused is not None:
                        return Reply(None, request_id, cause, detail, latency, attempt,
                                     fatal=True)
                    if status not in RETRY_STATUSES and status < 500:
                        return Reply(None, request_id, cause, detail, latency, attempt)
                    if wait is not None and wait > MAX_RETRY_AFTER:
                        return Reply(None, request_id, cause, f"{detail} (asked to retry after "
                                     f"{wait:.0f} s: more than {MAX_RETRY_AFTER:.0f})", latency,
                                     attempt)
                    if wait is not None and status in POLITE_STATUSES:
                        # It said when to come back: not a failed attempt; bounded by time.
                        if waited + wait > self.max_wait:
                            return Reply(None, request_id, cause, f"{detail} (asked to wait "
                                         f"{waited + wait:.0f} s in all: more than --max-wait "
                                         f"{self.max_wait:g})", latency, attempt)
                        waited += wait
                        failed -= 1
                        resting = status == 429
            else:
                cause_key = cause
                latency = (time.perf_counter() - started) * 1000
            failed += 1
            # Every attempt that ended otherwise than answered or refused with a 429 (counted
            # by rate_limited) is a failure, towards an outage, the last one of a request too
            # (limits.Concurrency.failed).
            failure = headers is None or status != 429
            outage = failure and self.concurrency.failed()
            if self.refused is not None:
                return Reply(None, None, cause, detail, latency, attempt, fatal=True)
            if failed >= self.max_attempts:
                return Reply(None, None, cause, f"{detail} (after {attempt} attempts)", latency,
                             attempt)
            self.tally.retry(cause_key)
            delay = wait if wait is not None else backoff(failed)
            if resting or failure and not outage and (wait is None or
                                                      status not in POLITE_STATUSES):
                await self.concurrency.rest(delay)
            else:
                # An outage's backoff keeps the slot, and so do a 503's wait and a 429's that
                # names none (congestion): a server that fails, is unavailable or is full gets
                # fewer requests in flight meanwhile, and they use up their attempts C at a
                # time.
                await asyncio.sleep(delay)

    def _refused(self, detail: str, body: bytes, connecting: bool = False) -> None:
        """Count a refusal that no wait can cure; stop the run once the first
        ``SAME_REFUSALS`` attempts, of two requests or more, were all refused alike.
        ``connecting``: the refusal is a connection that could not be made at all.

        Behind a gateway (the LiteLLM proxy) a wrong key or model is HTTP 400 and a missing
        key 500, never the 401/403/404 that stop a run at once: every state became
        ``unscored``, and each 500 was tried five times (issue 27). A port with nothing
        listening made every state ``unscored`` too, each after five attempts (issue 25). A
        run whose requests are all refused the same way, before any answer, would fail the
        rest alike."""
        if self.answered or self.refused is not None:
            return
        if detail != self._same:
            self._same, self._same_count, self._same_bodies = detail, 0, set()
        self._same_count += 1
        self._same_bodies.add(hashlib.sha256(body).digest())
        if self._same_count >= SAME_REFUSALS and len(self._same_bodies) > 1:
            self.unreachable = connecting
            self.refused = (f"{detail}, for each of the first {self._same_count} attempts, of "
                            f"{len(self._same_bodies)} requests, with no answer")


def is_json(data: bytes) -> bool:
    """Whether a 200 body is JSON at all (what is inside it is the provider's to read)."""
    try:
        _skip(data)
    except msgspec.DecodeError:
        return False
    except RecursionError:  # JSON nested past the parser's depth: read (and refused) later
        return True
    return True


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
            return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError, OverflowError, IndexError):
            return None  # a date that cannot be read (an absurd zone: OverflowError): none
    return None
