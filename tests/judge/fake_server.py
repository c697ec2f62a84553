"""A fake OpenAI- and Anthropic-compatible judge server for tests and benchmarks (stdlib, and msgspec for batches).

``python -m tests.judge.fake_server [--port 0] [--latency 0.05] [--key KEY]`` prints
``PORT <n>`` on stdout once it listens on 127.0.0.1, and serves until it is terminated:

- ``POST /v1/chat/completions`` (OpenAI chat completions) and ``POST /v1/messages``
  (Anthropic messages) answer by rule. A request whose body holds ``FAKE:<fault>`` (the
  tests put it in a case's text, so it reaches the state) gets that fault; ``FAKE:<fault>xN``
  gets it on the first N attempts of that exact body and a normal answer after. Faults:
  ``pass`` ``fail`` ``na`` (that status), ``429`` (with ``Retry-After``), ``500``, ``503``,
  ``400``, ``401``, ``cut`` (the connection closes half-way through the answer), ``slow``
  (answers after ``--slow`` seconds, past the client's timeout), ``notjson``, ``wrongshape``,
  ``refusal``, ``length`` (``finish_reason: length`` / ``stop_reason: max_tokens``), ``echokey``
  (a 400 whose body repeats the credentials it was sent), ``bigusage`` (a pass whose usage
  says 2**63 input tokens), ``latin1id`` (a pass whose request id header is latin-1
  ``caf\xe9``, not UTF-8), ``pfpass`` ``pffail`` (promptfoo's llm-rubric answer
  ``{reason, pass, score}``), ``pfnopass`` (the same without ``pass``), ``toolcall`` (OpenAI
  only: a call of the request's first tool with ``{"query": the user's text}``, then, once
  the last message is the tool's result, an answer that quotes it), ``garbled`` (a 200 whose
  body is an HTML error page, as a proxy sends), ``think`` (a reasoning model's ``pass``:
  OpenAI a ``<think>`` block holding a ``fail`` verdict before the JSON,
  ``reasoning_content`` and ``reasoning_tokens``; Anthropic a thinking block holding one
  before the tool call), ``fenced`` (the ``pass`` in a Markdown fence, as a server without
  structured output writes it). Without a marker: ``pass``.
- As a gateway or a quota does (issue 27): ``--refuse CODE`` answers every request with that
  status and one message (the LiteLLM proxy's wrong model); ``--quota N --quota-seconds S``
  takes N requests every S seconds (refilled continuously, N at most at once), says what is
  left in OpenAI's and Anthropic's rate-limit headers on every answer, and refuses the
  request over it with a 429 whose ``Retry-After`` is the real wait.
- Isolated faults, as a busy provider sends them (issue 31): ``--first-429 SHARE`` answers
  the first attempt of that share of request bodies with a 429 and ``Retry-After``, and
  ``--first-500 SHARE`` the first attempt of another share with a 500 (a body is chosen by
  its hash: the same bodies every run, whichever client sends them; ``POST /reset`` makes
  every first attempt first again).
- Hostile answers (issue 23): ``redirect`` (a 307 to the same path on a second port, another
  origin, which counts what reaches it: ``foreign`` in the stats), ``echoheader`` (a ``pass``
  whose request-id header is the key it was sent), ``echoescaped`` (a ``pass`` whose reason
  holds the key with every character JSON-escaped inside the answer's JSON, and whose ``id``
  holds it escaped once; no request-id header), ``huge`` (a 200 of ``--huge-bytes``, streamed
  until the client hangs up: ``huge_sent`` in the stats), ``429zone`` (a 429 whose
  ``Retry-After`` date has an absurd zone), ``negusage`` (a ``pass`` with negative token
  counts), ``deep`` (a 200 nested 100,000 deep), ``deeperror`` (a 500 nested as deep),
  ``hugeheader`` (a 200 with a 100 KB header), ``manyheaders`` (a 200 with 100,000 headers).
- Pairwise states (issue 28: a request asking for ``{reason, better}``, in any dialect's
  schema with ``better``, or, with ``--response-format none``, in the pairwise answer
  instruction of its system text) are answered in that form: the
  response whose text holds ``[better]`` is named (a tie when neither or both do), except on
  the pairs a bias takes: ``--position-bias P`` names ``response_1`` on a share P of the
  pairs (in both orders: the pair's two orders then disagree), ``--length-bias Q`` names the
  longer response on a share Q of the others. Which pairs is a function of the two
  responses (the same in both orders), so a run's biases are known and repeatable. A fault
  marker works as for any request; one that gives a status gives the pairwise answer.
- The batch endpoints (OpenAI files and batches, Anthropic message batches): see
  ``fake_batches.py``; ``--batch-polls N`` (a batch ends when asked for the Nth time) and
  ``--lose-create N`` (the first N creates are made but not answered).
- Juries (issue 26): ``FAKE@MODEL:<fault>`` applies to the requests naming that model only
  (``*``: any), and wins over ``FAKE:<fault>`` for it; ``FAKE@MODEL:a/b/c`` gives the i-th
  request of that body (a juror's i-th sample, asked alone) the i-th fault in turn, or, to
  an OpenAI request asking for ``n`` samples, choice i the i-th: one answer with n choices,
  the prompt's tokens counted once, each choice's output added (``--ignore-n``: one choice
  whatever ``n`` says, as llama.cpp's server and Ollama answer). ``/stats`` adds
  ``by_model`` (requests by the model named) and ``billed`` (the input and output tokens
  the OpenAI answers' usage said).
- ``GET /stats``: ``{"requests", "max_in_flight", "by_body": {sha256 of body: count},
  "order": [sha256 of the body of each of the first 1,000 requests, as they came],
  "by_status": {code: n}, "huge_sent", "foreign": {"requests", "credentials"}, "batch_calls":
  {route: n}, "batches_created", "files_uploaded"}``; ``POST /reset`` zeroes them.

Answers are deterministic functions of the request body (request id, usage, reason), so two
runs of the same states get the same bytes. With ``--key`` a request without that key
(``Authorization: Bearer KEY`` or ``x-api-key: KEY``) gets a 401.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from typing import Any

_MARK = re.compile(rb"FAKE:([a-z0-9]+?)(?:x(\d+))?(?![a-z0-9])")
# A juror's marker: FAKE@MODEL:FAULT, or FAKE@MODEL:A/B/C (the i-th request of a body, or its
# i-th choice, gets the i-th fault, in turn); MODEL `*` is every model.
_JUROR_MARK = re.compile(rb"FAKE@([A-Za-z0-9._*-]+):([a-z0-9]+(?:/[a-z0-9]+)*)(?![a-z0-9/])")
_REASONS = {200: "OK", 302: "Found", 307: "Temporary Redirect", 400: "Bad Request",
            401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}
ABSURD_DATE = "Wed, 21 Oct 2015 07:28:00 +99999999999999"  # parsedate: OverflowError
DEEP = 100_000
# A reasoning model's thought, holding a verdict that is not its answer.
THOUGHT = 'Maybe {"status": "fail", "reason": "a thought, not the answer"}? No: it helps.'


class Stats:
    """What the server saw: requests, the most in flight at once, counts by body and status."""

    def __init__(self) -> None:
        self.by_model: Counter[str] = Counter()  # requests by the model they name
        self.billed = {"input": 0, "output": 0}  # tokens the answers' usage said (OpenAI's)
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.by_body: Counter[str] = Counter()
        self.by_status: Counter[int] = Counter()
        self.huge_sent = 0  # bytes of ``huge`` bodies written before the client hung up
        self.foreign = {"requests": 0, "credentials": 0}  # what reached the other origin
        self.order: list[str] = []  # the first ORDER_KEPT requests' body hashes, as they came

    def json(self) -> bytes:
        return json.dumps({"requests": self.requests, "max_in_flight": self.max_in_flight,
                           "by_body": self.by_body, "by_status": self.by_status,
                           "huge_sent": self.huge_sent, "foreign": self.foreign,
                           "by_model": self.by_model, "billed": self.billed,
                           "order": self.order}).encode()


ORDER_KEPT = 1000  # the order of a test's requests, not a benchmark's


class Server:
    def __init__(self, latency: float, slow: float, key: str | None, retry_after: str,
                 batch_polls: int = 2, lose_create: int = 0, huge_bytes: int = 64 << 20,
                 refuse: int | None = None, quota: int | None = None,
                 quota_seconds: float = 60.0, position_bias: float = 0.0,
                 length_bias: float = 0.0, ignore_n: bool = False, first_429: float = 0.0,
                 first_500: float = 0.0) -> None:
        from tests.judge.fake_batches import Batches

        self.position_bias, self.length_bias = position_bias, length_bias
        self.latency = latency
        self.slow = slow
        self.key = key
        self.retry_after = retry_after
        self.stats = Stats()
        self.attempts: Counter[str] = Counter()
        self.batches = Batches(batch_polls, lose_create)
        self.huge_bytes = huge_bytes
        self.refuse = refuse
        self.ignore_n = ignore_n
        self.asked: Counter[str] = Counter()  # requests of each body with a juror's marker
        self.quota = None if quota is None else Quota(quota, quota_seconds)
        self.first_429, self.first_500 = first_429, first_500
        self.port = 0
        self.foreign_port = 0  # another origin: a redirect's target

    async def foreign(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The other origin: counts each request, and those that carry a credential."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            names = {line.partition(b":")[0].strip().lower() for line in head.split(b"\r\n")}
            self.stats.foreign["requests"] += 1
            if names & {b"authorization", b"x-api-key", b"api-key"}:
                self.stats.foreign["credentials"] += 1
            writer.write(_head(200, 2, {}) + b"{}")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in
                           (line.partition(":") for line in lines[1:] if line)}
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    body = await _chunked(reader)
                else:
                    body = await reader.readexactly(int(headers.get("content-length", "0")))
                if not await self.route(method, path, headers, body, writer):
                    break
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def route(self, method: str, path: str, headers: dict[str, str], body: bytes,
                    writer: asyncio.StreamWriter) -> bool:
        if method == "GET" and path == "/stats":
            stats = {**json.loads(self.stats.json()), **self.batches.stats()}
            return await self.send(writer, 200, json.dumps(stats).encode())
        if method == "POST" and path == "/reset":
            self.stats = Stats()
            self.attempts.clear()
            self.asked.clear()
            self.batches.reset()
            return await self.send(writer, 200, b"{}")
        if self.batches.handles(method, path):
            if self.latency:
                await asyncio.sleep(self.latency)
            code, data, cut = self.batches.route(method, path, headers, body, self.key,
                                                 self.port)
            if code in (301, 302, 303, 307, 308):  # to the same path on the other origin
                return await self.send(writer, code, data, {
                    "location": f"http://127.0.0.1:{self.foreign_port}{path}"})
            if cut:
                return False  # the caller closes the connection: no answer
            return await self.send(writer, code, data)
        dialect = _dialect(path.split("?", 1)[0])
        if method != "POST" or dialect is None:
            return await self.send(writer, 404, b'{"error": {"message": "no such route"}}')
        digest = hashlib.sha256(body).hexdigest()
        stats = self.stats
        stats.requests += 1
        stats.by_body[digest] += 1
        if len(stats.order) < ORDER_KEPT:
            stats.order.append(digest)
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            return await self.answer(dialect, headers, body, digest, writer, path)
        finally:
            stats.in_flight -= 1

    async def answer(self, dialect: str, headers: dict[str, str], body: bytes, digest: str,
                     writer: asyncio.StreamWriter, path: str) -> bool:
        anthropic = dialect == "anthropic"
        if self.latency:
            await asyncio.sleep(self.latency)
        sent_key = _sent_key(dialect, headers)
        if self.key is not None and sent_key != self.key:
            return await self.send(writer, 401, _error("invalid api key", "authentication_error"))
        if self.refuse is not None:
            return await self.send(writer, self.refuse, _error(
                "litellm.BadRequestError: Invalid model name passed in model=fake-judge-1",
                "invalid_request_error"))
        quota: dict[str, str] = {}
        if self.quota is not None:
            wait, quota = self.quota.admit()
            if wait:
                return await self.send(writer, 429, _error("rate limit reached", "rate_limit"),
                                       {**quota, "retry-after": f"{wait:.3f}"})
        fault = "pass"
        found = _MARK.search(body)
        if found:
            self.attempts[digest] += 1
            times = int(found[2]) if found[2] else None
            if times is None or self.attempts[digest] <= times:
                fault = found[1].decode()
        elif self.first_429 or self.first_500:
            self.attempts[digest] += 1
            place = int(digest[:8], 16) / 16**8  # where this body falls, in [0, 1)
            if self.attempts[digest] == 1 and place < self.first_429:
                fault = "429"
            elif self.attempts[digest] == 1 and place < self.first_429 + self.first_500:
                fault = "500"
        model = _model_of(body, path)
        self.stats.by_model[model] += 1
        n = _samples_asked(body) if dialect == "openai" and not self.ignore_n else 1
        # A juror's marker (FAKE@MODEL:...) wins over the generic one for that model.
        faults = _juror_faults(body, model)
        if faults is not None:
            self.asked[digest] += 1
            # The i-th request of this body (or choice i of one asking for n) gets the i-th.
            first = 0 if n > 1 else self.asked[digest] - 1
            faults = [faults[(first + i) % len(faults)] for i in range(n)]
            fault = faults[0]
        else:
            faults = [fault] * n
        rid = "req_" + digest[:20]
        extra = {name: rid for name in ID_HEADERS[dialect]}
        extra.update(quota)
        if fault in ("429", "500", "503", "400", "401", "429zone"):
            code = int(fault[:3])
            if code == 429:
                extra["retry-after"] = ABSURD_DATE if fault == "429zone" else self.retry_after
            return await self.send(writer, code, _error(f"fake {code}", "fake_error"), extra)
        if fault == "redirect":
            extra["location"] = f"http://127.0.0.1:{self.foreign_port}{path.split('?')[0]}"
            return await self.send(writer, 307, b"", extra)
        if fault == "garbled":
            page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
            return await self.send(writer, 200, page, extra)
        if fault in ("deep", "deeperror"):
            data = b'{"x":' + b"[" * DEEP + b"]" * DEEP + b"}"
            return await self.send(writer, 200 if fault == "deep" else 500, data, extra)
        if fault == "huge":
            return await self.huge(writer, extra)
        if fault == "hugeheader":
            extra["x-absurd"] = "a" * 100_000
        elif fault == "manyheaders":
            extra.update({f"x-absurd-{i}": "a" for i in range(100_000)})
        if fault == "echokey":
            return await self.send(writer, 400, _error(f"bad request from key {sent_key}",
                                                       "invalid_request_error"), extra)
        if fault == "slow":
            await asyncio.sleep(self.slow)
            fault = "pass"
        if fault == "latin1id":
            for name in extra:  # the request id: b"caf\xe9" on the wire (surrogateescape)
                extra[name] = "caf\udce9"
        request = json.loads(body)
        text, finish = _content(fault, digest, sent_key)
        if _pairwise(request) and fault in _ANSWERS:
            text = json.dumps(preference(request, digest, self.position_bias, self.length_bias))
            if fault == "fenced":
                text = f"```json\n{text}\n```"
        usage_in, usage_out = len(body) // 4, max(1, len(text or "") // 4)
        if fault == "negusage":
            usage_in, usage_out = -1_000_000, -1_000_000
        if fault == "bigusage":
            usage_in = 2**63  # one past SQLite's INTEGER
        if dialect == "gemini":
            payload = _gemini(fault, text, rid, usage_in, usage_out)
        elif dialect == "bedrock":
            payload = _bedrock(fault, text, rid, usage_in, usage_out)
        elif anthropic:
            payload = _anthropic(request, fault, text, rid, usage_in, usage_out)
        else:
            payload = _openai(request, fault, text, finish, rid, usage_in, usage_out)
            if n > 1:  # n choices: the prompt billed once
                _more_choices(payload, faults, digest)
        usage = payload.get("usage") or {}
        self.stats.billed["input"] += usage.get("prompt_tokens", 0) or 0
        self.stats.billed["output"] += usage.get("completion_tokens", 0) or 0
        data = json.dumps(payload).encode()
        if fault == "echoheader":
            extra = {name: sent_key or "" for name in extra}
        elif fault == "echoescaped":
            extra = {}
            # Escaped once in the body: the id (and Anthropic's tool input, which the body
            # holds as JSON itself) read back as the key.
            once = escaped(sent_key or "").encode()
            data = data.replace(b"ECHOED-ID", once).replace((sent_key or "").encode(), once)
        if fault == "cut":
            head = _head(200, len(data), extra)
            writer.write(head + data[: len(data) // 2])
            await writer.drain()
            return False  # the caller closes the connection mid-answer
        return await self.send(writer, 200, data, extra)

    async def huge(self, writer: asyncio.StreamWriter, extra: dict[str, str]) -> bool:
        """A 200 of ``huge_bytes``: the start of a completion, then spaces, 1 MiB at a time,
        until it is all written or the client hangs up."""
        start = b'{"id": "chatcmpl-huge", "choices": [{"message": {"content": "'
        writer.write(_head(200, self.huge_bytes, extra) + start)
        left = self.huge_bytes - len(start)
        block = b" " * (1 << 20)
        try:
            while left > 0:
                part = block[:left]
                writer.write(part)
                await writer.drain()
                self.stats.huge_sent += len(part)
                left -= len(part)
        except ConnectionError:
            return False
        return True

    async def send(self, writer: asyncio.StreamWriter, code: int, data: bytes,
                   extra: dict[str, str] | None = None) -> bool:
        self.stats.by_status[code] += 1
        writer.write(_head(code, len(data), extra or {}) + data)
        await writer.drain()
        return True


class Quota:
    """N requests every S seconds, refilled continuously, N at most at once (as LLMock's
    ``--rpm`` and the providers' quotas)."""

    def __init__(self, limit: int, seconds: float) -> None:
        self.limit, self.rate = limit, limit / seconds
        self.level, self.stamp = float(limit), time.monotonic()

    def admit(self) -> tuple[float, dict[str, str]]:
        """(seconds to wait, 0 when admitted; the rate-limit headers of the answer)."""
        now = time.monotonic()
        self.level = min(self.limit, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        wait = 0.0 if self.level >= 1 else (1 - self.level) / self.rate
        if not wait:
            self.level -= 1
        reset = (self.limit - self.level) / self.rate
        stamp = datetime.fromtimestamp(time.time() + reset, timezone.utc)
        return wait, {"x-ratelimit-limit-requests": str(self.limit),
                      "x-ratelimit-remaining-requests": str(int(self.level)),
                      "x-ratelimit-reset-requests": f"{reset * 1000:.0f}ms",
                      "anthropic-ratelimit-requests-limit": str(self.limit),
                      "anthropic-ratelimit-requests-remaining": str(int(self.level)),
                      "anthropic-ratelimit-requests-reset": stamp.isoformat(
                          timespec="milliseconds").replace("+00:00", "Z")}


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    """A request body sent with ``Transfer-Encoding: chunked``."""
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        data = await reader.readexactly(size + 2)
        if size == 0:
            return b"".join(parts)
        parts.append(data[:-2])


def _head(code: int, length: int, extra: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Error')}", "content-type: application/json",
             f"content-length: {length}", *(f"{k}: {v}" for k, v in extra.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


_ANSWERS = ("pass", "fail", "na", "cut", "echoheader", "negusage", "hugeheader", "manyheaders",
            "bigusage", "latin1id", "think", "fenced")  # the faults answered with a status


def _pairwise(request: dict[str, Any]) -> bool:
    """Whether a request asks for a pairwise answer ({reason, better}): its schema (OpenAI's
    json_schema or json_object, Anthropic's tool, Gemini's responseSchema, Bedrock's
    toolSpec), or, asked without one (--response-format none), its system text."""
    rf = request.get("response_format") or {}
    tool = (request.get("tools") or [{}])[0]
    spec = (((request.get("toolConfig") or {}).get("tools") or [{}])[0].get("toolSpec") or {})
    schemas = [(rf.get("json_schema") or {}).get("schema"), rf.get("schema"),
               tool.get("input_schema"), (request.get("generationConfig") or {}).get(
                   "responseSchema"), (spec.get("inputSchema") or {}).get("json")]
    if any("better" in ((s or {}).get("properties") or {}) for s in schemas):
        return True
    return PAIR_INSTRUCTION in _system_text(request)


PAIR_INSTRUCTION = '"better": "response_1" | "response_2" | "tie"'


def _system_text(request: dict[str, Any]) -> str:
    """The system text of a request, in any of the dialects served."""
    system = request.get("system") or (request.get("systemInstruction") or {}).get("parts")
    if isinstance(system, str):
        return system
    if isinstance(system, list):  # Bedrock's [{text}], Gemini's parts
        return "".join(part.get("text", "") for part in system)
    return "".join(m.get("content", "") for m in request.get("messages") or []
                   if m.get("role") == "system" and isinstance(m.get("content"), str))


def _user_text(request: dict[str, Any]) -> str:
    """The user message (the judge state) of a request, in any of the dialects served."""
    for m in reversed(request.get("messages") or request.get("contents") or []):
        if m.get("role") == "user":
            content = m.get("content", m.get("parts"))
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content)
    raise ValueError("no user message")


def preference(request: dict[str, Any], digest: str, position_bias: float = 0.0,
               length_bias: float = 0.0) -> dict[str, str]:
    """The pairwise answer to a request: the better response, unless a bias takes the pair
    (see the module's docstring)."""
    state = json.loads(_user_text(request))
    first, second = state.get("response_1", ""), state.get("response_2", "")
    if share(first, second, "position") < position_bias:
        return {"reason": f"fake: the first is better {digest[:8]}", "better": "response_1"}
    if share(first, second, "length") < length_bias and len(first) != len(second):
        longer = "response_1" if len(first) > len(second) else "response_2"
        return {"reason": f"fake: the longer is better {digest[:8]}", "better": longer}
    marked = ["[better]" in first, "[better]" in second]
    better = "tie" if marked[0] == marked[1] else "response_1" if marked[0] else "response_2"
    return {"reason": f"fake: {better} {digest[:8]}", "better": better}


def share(first: str, second: str, salt: str) -> float:
    """A number in [0, 1) that is a function of a pair's two responses, whatever their order."""
    texts = "\x00".join(sorted((first, second)))
    return int(hashlib.sha256(f"{salt}\x00{texts}".encode()).hexdigest()[:12], 16) / 16**12


def escaped(text: str) -> str:
    """``text`` with every character written as a JSON ``\\u`` escape."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def _content(fault: str, digest: str, key: str | None = None) -> tuple[str | None, str]:
    """The answer text and OpenAI finish reason for a fault (or a status); ``key``: what
    ``echoescaped`` echoes."""
    if fault in _ANSWERS or fault in LOGPROB_FAULTS:
        status = fault if fault in ("fail", "na") else "fail" if fault == "lptrap" else "pass"
        # The reason first, as the request's schema asks (issue 26); answers are read in
        # either order.
        reason = 'the reply says "pass", pass' if fault == "lptrap" else \
            f"fake {status} {digest[:8]}"
        text = json.dumps({"reason": reason, "status": status})
        if fault == "fenced":
            text = f"```json\n{text}\n```"
        if fault == "lpescaped":
            text = text.replace('"status": "pass"', '"status": "\\u0070ass"')
        return text, "stop"
    if fault == "echoescaped":
        # The key escaped inside the answer's JSON: escaped once more in the response body.
        reason = json.dumps(f"fake pass {digest[:8]}, key ")[:-1] + escaped(key or "") + '"'
        return '{"status": "pass", "reason": ' + reason + "}", "stop"
    if fault == "toolcall":  # the text after the tool's result (the call: _openai)
        return "Done.", "stop"
    if fault in ("pfpass", "pffail"):  # promptfoo's llm-rubric answer: {reason, pass, score}
        passed = fault == "pfpass"
        return json.dumps({"reason": f"fake {fault[2:]} {digest[:8]}", "pass": passed,
                           "score": 1.0 if passed else 0.0}), "stop"
    if fault == "pfnopass":  # the same without `pass`, which promptfoo reads as a pass
        return json.dumps({"reason": f"fake, no pass {digest[:8]}", "score": 0.0}), "stop"
    if fault == "notjson":
        return "I think the assistant did fine, so: pass.", "stop"
    if fault == "wrongshape":
        return json.dumps({"verdict": "pass", "why": "fake"}), "stop"
    if fault == "refusal":
        return None, "stop"
    if fault == "length":
        return '{"status": "fail", "reason": "The response claims a booking th', "length"
    raise ValueError(f"unknown fault {fault!r}")


# Log probabilities (issue 29), asked with `logprobs: true`: every answer's tokens (the text
# cut at word and punctuation bounds), the status token's alternatives the three statuses;
# the status's own probability is a function of the body (0.55 + 0.4 * digest[:2] / 255: the
# request id tells it), the other two share the rest 3:1 in the order pass, fail, na. Faults:
# `lpsplit` (the status over two tokens), `lpquote` (the opening quote and the status one
# token), `lpabsent` (the status token not among its top alternatives: its probability 0.1,
# the others 0.6 and 0.3), `lponly` (only the status token among them), `lpnone` (no
# log probabilities), `lpescaped` (the status written `\u0070ass`), `lptrap` (a `fail` whose
# reason says "pass", that token 0.99 sure).
LOGPROB_FAULTS = ("lpsplit", "lpquote", "lpabsent", "lponly", "lpnone", "lpescaped", "lptrap")
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def status_probability(rid: str) -> float:
    """The probability the fake gives the status token of the answer with this request id."""
    return 0.55 + 0.4 * int(rid.split("_", 1)[1][:2], 16) / 255  # req_ or breq_ (batches)


def _token(text: str, logprob: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())}
                             for t, lp in top]}


def _plain_tokens(text: str) -> list[dict[str, Any]]:
    return [_token(t, -0.01, [(t, -0.01)]) for t in _TOKEN.findall(text)]


def _logprobs(content: str, fault: str, rid: str) -> dict[str, Any]:
    """``logprobs.content`` of an answer, the status token placed where the fake wrote it."""
    import math

    mark = '"status": "'
    at = content.rfind(mark) + len(mark)
    statuses = ("pass", "fail", "na")
    status = next((s for s in statuses if content.startswith(s, at)), None)
    if status is None or content.rfind(mark) < 0:  # escaped: the tokens alone
        return {"content": _plain_tokens(content)}
    p = status_probability(rid)
    others = [s for s in statuses if s != status]
    probs = {status: p, others[0]: (1 - p) * 0.75, others[1]: (1 - p) * 0.25}
    before, after = content[:at], content[at + len(status):]

    def first(s: str) -> str:  # the first token of status s, as this fault cuts it
        if fault == "lpquote":
            return '"' + s
        if fault == "lpsplit":
            return s[:max(1, len(s) // 2)]
        return s

    if fault == "lpquote":
        before = before[:-1]
    if fault == "lpabsent":
        probs = {status: 0.1, others[0]: 0.6, others[1]: 0.3}
    top = sorted(((first(s), math.log(q)) for s, q in probs.items()), key=lambda x: -x[1])
    top.append((" ", -9.0))  # not a status: never counted
    if fault == "lpabsent":
        top = [t for t in top if t[0] != first(status)]
    if fault == "lponly":
        top = [(first(status), math.log(p))]
    tokens = _plain_tokens(before)
    if fault == "lptrap":  # the reason's "pass": sure of it, where a text search would look
        for t in tokens:
            if t["token"] == "pass":
                t.update(_token("pass", math.log(0.99), [("pass", math.log(0.99)),
                                                         ("fail", math.log(0.01))]))
    tokens.append(_token(first(status), math.log(probs[status]), top))
    rest = status[len(first(status)) - (1 if fault == "lpquote" else 0):]
    return {"content": tokens + _plain_tokens(rest + after)}


def _openai(request: dict[str, Any], fault: str, text: str | None, finish: str, rid: str,
            usage_in: int, usage_out: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    details = None
    if fault == "refusal":
        message["refusal"] = "I'm sorry, I can't help with that."
    messages = request.get("messages") or [{}]
    if fault == "toolcall" and messages[-1].get("role") == "tool":
        # After the tool's result: an answer that quotes it.
        message["content"] = f"From the tool: {messages[-1].get('content')}"
    elif fault == "toolcall":  # a call of the request's first tool, asked with the user's text
        tools = request.get("tools") or [{"function": {"name": "lookup"}}]
        question = next((m.get("content") for m in reversed(messages)
                         if m.get("role") == "user"), "")
        message["content"] = None
        message["tool_calls"] = [{"id": "call_" + rid[4:16], "type": "function", "function": {
            "name": tools[0]["function"]["name"],
            "arguments": json.dumps({"query": _MARK.sub(b"", str(question).encode())
                                     .decode().strip()})}}]
        finish = "tool_calls"
    if fault == "think":
        message["content"] = f"<think>{THOUGHT}</think>\n{text}"
        message["reasoning_content"] = THOUGHT
        usage_out += 40
        details = {"reasoning_tokens": 40}
    return {"id": "ECHOED-ID" if fault == "echoescaped" else "chatcmpl-" + rid[4:],
            "object": "chat.completion", "created": 0,
            "model": request.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": _logprobs(message["content"], fault, rid)
                         if request.get("logprobs") and isinstance(message["content"], str)
                         and fault != "lpnone" else None}],
            "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                      "total_tokens": usage_in + usage_out,
                      **({"completion_tokens_details": details} if details else {})}}


def _anthropic(request: dict[str, Any], fault: str, text: str | None, rid: str, usage_in: int,
               usage_out: int) -> dict[str, Any]:
    content: list[dict[str, Any]]
    stop = "tool_use"
    tool = (request.get("tool_choice") or {}).get("name", "record_verdict")
    if fault == "refusal":
        content, stop = [], "refusal"
    elif fault == "length":
        content, stop = [{"type": "text", "text": text}], "max_tokens"
    elif fault == "notjson":
        content, stop = [{"type": "text", "text": text}], "end_turn"
    elif fault == "fenced":
        content, stop = [{"type": "text", "text": text}], "end_turn"
    else:
        assert text is not None
        content = [{"type": "tool_use", "id": "toolu_" + rid[4:], "name": tool,
                    "input": json.loads(text)}]
        if fault == "think":
            content.insert(0, {"type": "thinking", "thinking": THOUGHT, "signature": "sig"})
    return {"id": "ECHOED-ID" if fault == "echoescaped" else "msg_" + rid[4:],
            "type": "message", "role": "assistant",
            "model": request.get("model"), "content": content, "stop_reason": stop,
            "stop_sequence": None, "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}


def _model_of(body: bytes, path: str) -> str:
    """The model a request names: its body's `model`, else its path's (Gemini, Bedrock)."""
    try:
        model = json.loads(body).get("model")
    except (ValueError, AttributeError, RecursionError):
        model = None
    if isinstance(model, str):
        return model
    found = re.search(r"/models?/([^/:]+)", path)
    return found[1] if found else ""


def _juror_faults(body: bytes, model: str) -> list[str] | None:
    """The faults of the first juror's marker for this model (or for `*`), or None."""
    for found in _JUROR_MARK.finditer(body):
        if found[1].decode() in (model, "*"):
            return found[2].decode().split("/")
    return None


def _samples_asked(body: bytes) -> int:
    """The `n` of an OpenAI request (1 when absent)."""
    try:
        n = json.loads(body).get("n", 1)
    except (ValueError, AttributeError, RecursionError):
        return 1
    return n if isinstance(n, int) and n > 0 else 1


def _more_choices(payload: dict[str, Any], faults: list[str], digest: str) -> None:
    """Choices 1.. of an answer to a request for n samples (choice 0 is there), each with its
    fault's text; their output tokens added to the usage (the prompt's are counted once)."""
    for i, fault in enumerate(faults[1:], 1):
        text, finish = _content(fault, f"{digest[:6]}#{i}")  # each choice its own reason
        payload["choices"].append({"index": i, "message": {"role": "assistant",
                                                             "content": text, "refusal": None},
                                   "finish_reason": finish, "logprobs": None})
        out = max(1, len(text or "") // 4)
        payload["usage"]["completion_tokens"] += out
        payload["usage"]["total_tokens"] += out


def _dialect(path: str) -> str | None:
    """Which API a request's path speaks: OpenAI's (and Azure's deployments), Anthropic's,
    Gemini's generateContent, Bedrock's Converse; None for no API of the fake."""
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if re.fullmatch(r".*/models/[^/]+:generateContent", path):
        return "gemini"
    if re.fullmatch(r".*/model/[^/]+/converse", path):
        return "bedrock"
    return None


# The request-id headers of each API (OpenAI's answer carries Azure's too).
ID_HEADERS = {"openai": ("x-request-id", "apim-request-id"), "anthropic": ("request-id",),
              "gemini": ("x-goog-request-id",), "bedrock": ("x-amzn-requestid",)}


def _sent_key(dialect: str, headers: dict[str, str]) -> str | None:
    """The credential a request carries in its API's header: ``x-api-key`` (Anthropic),
    ``api-key`` (Azure), ``x-goog-api-key`` (Gemini), a bearer token; for a SigV4-signed
    request its session token (the secret it carries), else ``sigv4:`` and the access key
    id of its credential scope."""
    for name in ("x-api-key", "api-key", "x-goog-api-key"):
        if name in headers:
            return headers[name]
    auth = headers.get("authorization", "")
    if auth.startswith("AWS4-HMAC-SHA256 "):
        if headers.get("x-amz-security-token"):
            return headers["x-amz-security-token"]
        found = re.search(r"Credential=([^/]+)/", auth)
        return "sigv4:" + (found[1] if found else "")
    return auth.removeprefix("Bearer ") if auth else None


def _gemini(fault: str, text: str | None, rid: str, usage_in: int,
            usage_out: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [] if text is None else [{"text": text}]
    finish = {"refusal": "SAFETY", "length": "MAX_TOKENS"}.get(fault, "STOP")
    usage = {"promptTokenCount": usage_in, "candidatesTokenCount": usage_out,
             "totalTokenCount": usage_in + usage_out}
    if fault == "think":
        parts.insert(0, {"text": THOUGHT, "thought": True})
        usage["thoughtsTokenCount"] = 40
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
            "responseId": "ECHOED-ID" if fault == "echoescaped" else "gem-" + rid[4:]}


def _bedrock(fault: str, text: str | None, rid: str, usage_in: int,
             usage_out: int) -> dict[str, Any]:
    content: list[dict[str, Any]]
    stop = "tool_use"
    if fault == "refusal":
        content, stop = [], "content_filtered"
    elif fault in ("length", "notjson", "fenced"):
        content = [{"text": text}]
        stop = "max_tokens" if fault == "length" else "end_turn"
    else:
        assert text is not None
        content = [{"toolUse": {"toolUseId": "tooluse_" + rid[4:], "name": "record_verdict",
                                "input": json.loads(text)}}]
        if fault == "think":
            content.insert(0, {"reasoningContent": {"reasoningText": {"text": THOUGHT}}})
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop, "metrics": {"latencyMs": 1},
            "usage": {"inputTokens": usage_in, "outputTokens": usage_out,
                      "totalTokens": usage_in + usage_out}}


async def serve(args: argparse.Namespace) -> None:
    server = Server(args.latency, args.slow, args.key, args.retry_after, args.batch_polls,
                    args.lose_create, args.huge_bytes, args.refuse, args.quota,
                    args.quota_seconds, args.position_bias, args.length_bias, args.ignore_n,
                    args.first_429, args.first_500)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", args.port, backlog=1024,
                                          limit=1 << 24)
    port = server.port = listener.sockets[0].getsockname()[1]
    foreign = await asyncio.start_server(server.foreign, "127.0.0.1", 0)
    server.foreign_port = foreign.sockets[0].getsockname()[1]
    server.batches.foreign_port = server.foreign_port
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    print(f"PORT {port}", flush=True)
    async with listener:
        await stop.wait()
    os._exit(0)  # without waiting for answers still sleeping (a `slow` one, say)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    p.add_argument("--slow", type=float, default=5.0, help="seconds a `slow` answer takes")
    p.add_argument("--key", help="the API key requests must carry")
    p.add_argument("--retry-after", default="1", help="the Retry-After header of a 429")
    p.add_argument("--batch-polls", type=int, default=2,
                   help="a batch ends when it is asked for this many times")
    p.add_argument("--lose-create", type=int, default=0,
                   help="make the first N batches but cut the connection before answering")
    p.add_argument("--huge-bytes", type=int, default=64 << 20,
                   help="the size of a `huge` answer")
    p.add_argument("--refuse", type=int, help="answer every request with this status")
    p.add_argument("--quota", type=int, help="requests a --quota-seconds window takes")
    p.add_argument("--quota-seconds", type=float, default=60.0)
    p.add_argument("--position-bias", type=float, default=0.0,
                   help="pairwise: the share of pairs on which response_1 is named")
    p.add_argument("--length-bias", type=float, default=0.0,
                   help="pairwise: the share of the other pairs on which the longer is named")
    p.add_argument("--ignore-n", action="store_true",
                   help="answer one choice whatever `n` asks (llama.cpp's server, Ollama)")
    p.add_argument("--first-429", type=float, default=0.0,
                   help="the share of bodies whose first attempt gets a 429 (Retry-After)")
    p.add_argument("--first-500", type=float, default=0.0,
                   help="the share of other bodies whose first attempt gets a 500")
    args = p.parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
