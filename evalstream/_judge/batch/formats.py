"""Batch files, as every provider's are read: the result-line envelope, what a result says
(``Outcome``), the limits of a request file. Each provider's own request and result lines
are in its module (``evalstream._judge.providers``); the formats today:

- OpenAI Batch API (also ``vllm run-batch`` and most OpenAI-compatible hosts): request lines
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``; results in an
  output file and an error file (``response`` ``{status_code, request_id, body}``, ``error``),
  vLLM writing errors inline, its ``error`` sometimes a plain string.
- Anthropic Message Batches: request lines ``{"custom_id", "params"}`` (``submit`` sends a
  file's lines as the ``requests`` array of one create call); results ``{"custom_id",
  "result": {"type", "message" | "error"}}``.

Request lines wrap the body of ``request.build`` (the bytes a live run sends, unchanged).
Result lines are read into an ``Outcome``: ``succeeded`` with the response body (what the
provider's ``parse`` reads, as for a live answer), or ``errored``, ``canceled`` or
``expired`` with a detail.

A result line is decoded as one envelope holding the fields of every provider's results, so
that a line of another provider's format (or a request line) is told apart and named in its
reject, not misread. A provider whose result lines have fields of their own adds them here.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec
from msgspec import Struct

from evalstream._judge.answer import excerpt

RESULT_TYPES = ("succeeded", "errored", "canceled", "expired")
CUSTOM_ID_CHARS = 64


class Limits(NamedTuple):
    """What one request file may hold."""

    requests: int
    bytes: int


# -- result lines (only the fields read; the providers' other fields are ignored) ------------
class _AnthropicResult(Struct, gc=False):
    type: str
    message: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


class ResultLine(Struct, gc=False):
    """One line of a result file, of any provider (or a request line given by mistake)."""

    custom_id: str
    # OpenAI: {status_code, request_id, body}; in vLLM before 0.5 the chat completion itself
    response: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()  # OpenAI: an object, a string (vLLM) or null
    result: _AnthropicResult | None = None  # Anthropic
    # Request-line fields: a request file given as results is told apart, not misread.
    body: msgspec.Raw = msgspec.Raw()
    params: msgspec.Raw = msgspec.Raw()


class Outcome(NamedTuple):
    """What a result line says about its request."""

    type: str  # succeeded, errored, canceled, expired
    body: bytes | None  # the response body of a succeeded request
    request_id: str | None
    detail: str | None  # why a request was not answered


def absent(raw: msgspec.Raw) -> bool:
    """Whether a field of a result line is missing or null."""
    return bytes(raw) in (b"", b"null")


def error_text(raw: msgspec.Raw) -> tuple[str | None, str]:
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


def request_line_problem(line: ResultLine) -> tuple[str, str] | None:
    """A request line given as a result (a request's ``body`` or ``params``, and no field of
    any provider's results): (JSON path, sentence), else None."""
    if line.result is None and absent(line.response) and absent(line.error) and (
            line.body or line.params):
        field = "body" if line.body else "params"
        return f"$.{field}", (f"This is a request line (it has `{field}`), not a result; give "
                              "the provider's output file (and error file), not a request file.")
    return None
