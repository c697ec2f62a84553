"""The providers' batch file formats: request lines out, result lines in.

Request lines wrap the body of ``request.build`` (the bytes a live run sends, unchanged):

- OpenAI Batch API (also ``vllm run-batch`` and most OpenAI-compatible hosts):
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``.
- Anthropic Message Batches: ``{"custom_id", "params"}``; ``submit`` sends a file's lines as
  the ``requests`` array of one create call.

Result lines are read into an ``Outcome``: ``succeeded`` with the response body (what
``answer.parse`` reads, as for a live answer), or ``errored``, ``canceled`` or ``expired``
with a detail. OpenAI writes failures to a separate error file (``response.status_code``
other than 200, or ``error.code`` ``batch_expired`` / ``batch_cancelled``); vLLM writes them
inline, its ``error`` sometimes a plain string; Anthropic's ``result.type`` says which.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec
from msgspec import Struct

from evalstream._judge.answer import excerpt, http_error_detail

OPENAI_ENDPOINT = "/v1/chat/completions"
# The create call of an Anthropic batch wraps a file's lines: `{"requests":[` + lines joined
# by commas + `]}`, so its body is the file's size plus this many bytes.
ANTHROPIC_WRAP = len(b'{"requests":[]}') - 1  # the file's last newline becomes nothing
RESULT_TYPES = ("succeeded", "errored", "canceled", "expired")
CUSTOM_ID_CHARS = 64


class Limits(NamedTuple):
    """What one request file may hold."""

    requests: int
    bytes: int


# OpenAI: 50,000 requests and 200 MB an input file; Anthropic: 100,000 requests and 256 MB a
# batch (its create call). MB read as 10^6 bytes, the smaller reading.
LIMITS = {"openai": Limits(50_000, 200_000_000),
          "anthropic": Limits(100_000, 256_000_000 - ANTHROPIC_WRAP)}


def request_line(provider: str, custom_id: str, body: bytes) -> bytes:
    """One request line (with its newline). ``custom_id`` is hex (nothing to escape) and
    ``body`` is already JSON, so the line is joined from bytes, not encoded again."""
    if provider == "anthropic":
        return b'{"custom_id":"' + custom_id.encode() + b'","params":' + body + b"}\n"
    return (b'{"custom_id":"' + custom_id.encode() + b'","method":"POST","url":"'
            + OPENAI_ENDPOINT.encode() + b'","body":' + body + b"}\n")


# -- result lines (only the fields read; the providers' other fields are ignored) ------------
class _Response(Struct, gc=False):
    status_code: int | None = None
    request_id: str | None = None
    body: msgspec.Raw = msgspec.Raw()


class _AnthropicResult(Struct, gc=False):
    type: str
    message: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


class ResultLine(Struct, gc=False):
    """One line of a result file, of either provider (or a request line given by mistake)."""

    custom_id: str
    # {status_code, request_id, body}; in vLLM before 0.5 the chat completion itself
    response: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()  # an object, a string (vLLM) or null
    result: _AnthropicResult | None = None
    # Request-line fields: a request file given as results is told apart, not misread.
    body: msgspec.Raw = msgspec.Raw()
    params: msgspec.Raw = msgspec.Raw()


class Outcome(NamedTuple):
    """What a result line says about its request."""

    type: str  # succeeded, errored, canceled, expired
    body: bytes | None  # the response body of a succeeded request
    request_id: str | None
    detail: str | None  # why a request was not answered


def _absent(raw: msgspec.Raw) -> bool:
    return bytes(raw) in (b"", b"null")


def _error_text(raw: msgspec.Raw) -> tuple[str | None, str]:
    """The code and message of an error value: a string (vLLM), ``{code, message}`` (OpenAI),
    ``{"error": {type, message}}`` (Anthropic, newer vLLM) or ``{object, message, type, code}``
    (older vLLM)."""
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None, excerpt(bytes(raw))
    if isinstance(value, str):
        return None, excerpt(value)
    if isinstance(value, dict):
        inner = value.get("error")
        if isinstance(inner, dict):
            value = inner
        # OpenAI's code is a name (batch_expired); vLLM's is the HTTP status: take its type.
        code = value.get("code") if isinstance(value.get("code"), str) else value.get("type")
        message = value.get("message")
        return (str(code) if code is not None else None,
                excerpt(message if isinstance(message, str) else msgspec.json.encode(value)))
    return None, excerpt(bytes(raw))


_decode_response = msgspec.json.Decoder(_Response).decode


def _response(raw: msgspec.Raw) -> _Response:
    """The ``response`` of an OpenAI-format result; vLLM before 0.5 wrote the chat completion
    itself there (no ``status_code``, no ``body``): read as a 200 with that body."""
    response = _decode_response(raw)  # its shape was checked by `problem`
    if response.status_code is None and _absent(response.body):
        return _Response(200, None, raw)
    return response


def problem(provider: str, line: ResultLine) -> tuple[str, str] | None:
    """Why a decoded line is not a result of ``provider``'s format: (JSON path, sentence)."""
    has_openai = not _absent(line.response) or not _absent(line.error)
    if line.result is None and not has_openai and (line.body or line.params):
        field = "body" if line.body else "params"
        return f"$.{field}", (f"This is a request line (it has `{field}`), not a result; give "
                              "the provider's output file (and error file), not a request file.")
    if provider == "anthropic":
        if line.result is None:
            return "$.result", ("Required field `result` is missing; an Anthropic Message Batches "
                                "result line is `{\"custom_id\", \"result\": {\"type\", ...}}`"
                                + (" (this line looks like an OpenAI batch result, but the batch "
                                   "was prepared for anthropic)." if has_openai else "."))
        if line.result.type not in RESULT_TYPES:
            return "$.result.type", (f"`$.result.type` is {line.result.type!r}; allowed values "
                                     f"are: {', '.join(RESULT_TYPES)}.")
        if line.result.type == "succeeded" and _absent(line.result.message):
            return "$.result.message", ("A succeeded result needs `$.result.message`, the "
                                        "message the model wrote.")
        return None
    if line.result is not None and not has_openai:
        return "$.result", ("This line is an Anthropic Message Batches result (`result`), but the "
                            "batch was prepared for openai; its results have `response` and "
                            "`error`.")
    if not has_openai:
        return "$.response", ("An OpenAI batch result needs `response` (the HTTP status and body) "
                              "or `error`; this line has neither.")
    if not _absent(line.response):
        try:
            _decode_response(line.response)
        except msgspec.DecodeError as exc:
            return "$.response", (f"`$.response` must be an object with `status_code`, "
                                  f"`request_id` and `body` ({str(exc).split(' - at')[0]}).")
    return None


def outcome(provider: str, line: ResultLine) -> Outcome:
    """What a result line (already passed by ``problem``) says about its request."""
    if provider == "anthropic":
        result = line.result
        assert result is not None
        if result.type == "succeeded":
            return Outcome("succeeded", bytes(result.message), None, None)
        if result.type == "errored":
            code, message = _error_text(result.error)
            return Outcome("errored", None, None, f"{code}: {message}" if code else message)
        return Outcome(result.type, None, None, f"the batch request was {result.type} before "
                       "it ran")
    response = None if _absent(line.response) else _response(line.response)
    request_id = response.request_id if response is not None else None
    if not _absent(line.error):
        code, message = _error_text(line.error)
        kind = {"batch_expired": "expired", "batch_cancelled": "canceled"}.get(code or "",
                                                                             "errored")
        status = f"HTTP {response.status_code}: " if response is not None and \
            response.status_code not in (None, 200) else ""
        return Outcome(kind, None, request_id,
                       f"{status}{code}: {message}" if code else f"{status}{message}")
    assert response is not None
    if response.status_code == 200 and not _absent(response.body):
        return Outcome("succeeded", bytes(response.body), request_id, None)
    if response.status_code == 200:
        return Outcome("errored", None, request_id, "HTTP 200 without a response body")
    return Outcome("errored", None, request_id,
                   http_error_detail(response.status_code or 0, bytes(response.body)))
