"""The one answer parser: a provider's response -> ``{status, reason}``, or ``unscored`` with a
cause. Fail-closed: anything but a valid answer is ``unscored``, never ``pass``.

Causes (the ``error.cause`` of an unscored verdict):

- ``not_json``: the answer text is not JSON (or is empty).
- ``wrong_shape``: JSON, but not exactly ``{"status": "pass"|"fail"|"na", "reason": string}``.
- ``refusal``: the model refused (OpenAI ``message.refusal`` or ``finish_reason``
  ``content_filter``; Anthropic ``stop_reason`` ``refusal``).
- ``truncated``: the answer was cut at the output limit (``finish_reason`` ``length``;
  Anthropic ``stop_reason`` ``max_tokens``).
- ``bad_response``: a 200 response that is not a chat completion (or message) at all.
- ``ambiguous``: an answer two honest readers could read differently, never resolved by
  picking one reading: a key given twice in the answer object (``{"status": "fail", ...,
  "status": "pass"}``: msgspec, like most readers, keeps the last), two ``record_verdict``
  tool calls, or more than one choice. This is what the model wrote (prompt injection in the
  judged data can ask for it); the envelope around it is the server's serializer's, read as
  msgspec reads it.
- ``http_error``: an HTTP error status (after the last attempt, for retryable ones).
- ``timeout``: no complete answer within the timeout, on every attempt.
- ``connection``: the connection failed or was cut, on every attempt.
- ``errored``, ``expired``, ``canceled``: a batch request the provider did not answer (an error
  result, the batch's window ran out, the batch was canceled before it ran).

The first six come from an answer the provider gave (it is stored); the others from a
request that got none (nothing is stored: the next run asks again).
"""

from __future__ import annotations

import json
import string
from typing import Literal, NamedTuple

import msgspec
from msgspec import Struct

from evalstream._judge.request import TOOL_NAME
from evalstream._verdicts.records import TokenUsage

CAUSES = ("not_json", "wrong_shape", "refusal", "truncated", "bad_response", "ambiguous",
          "http_error", "timeout", "connection", "errored", "expired", "canceled")
DETAIL_CHARS = 200


class JudgeAnswer(Struct, forbid_unknown_fields=True, gc=False):
    """What the judge must answer: nothing more, nothing less."""

    status: Literal["pass", "fail", "na"]
    reason: str


class Parsed(NamedTuple):
    """A read answer: a status (``unscored`` with ``cause`` and ``detail`` when it cannot be
    used), the reason, the provider's token counts and response id."""

    status: str
    reason: str | None
    cause: str | None
    detail: str | None
    usage: TokenUsage | None
    response_id: str | None


# -- provider response shapes (only the fields read; others are ignored) -----------------------
class _OpenAIMessage(Struct, gc=False):
    content: str | None = None
    refusal: str | None = None


class _OpenAIChoice(Struct, gc=False):
    message: _OpenAIMessage | None = None
    finish_reason: str | None = None


class _OpenAIUsage(Struct, gc=False):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _OpenAIResponse(Struct, gc=False):
    id: str | None = None
    choices: list[_OpenAIChoice] = []
    usage: _OpenAIUsage | None = None


class _AnthropicBlock(Struct, gc=False):
    type: str = ""
    text: str | None = None
    name: str | None = None
    input: msgspec.Raw = msgspec.Raw()


class _AnthropicUsage(Struct, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0


class _AnthropicResponse(Struct, gc=False):
    id: str | None = None
    type: str | None = None
    content: list[_AnthropicBlock] = []
    stop_reason: str | None = None
    usage: _AnthropicUsage | None = None


_openai = msgspec.json.Decoder(_OpenAIResponse)
_anthropic = msgspec.json.Decoder(_AnthropicResponse)
_answer = msgspec.json.Decoder(JudgeAnswer)
_FENCE = "```"


def parse(provider: str, body: bytes) -> Parsed:
    """Read a provider's 200 response body."""
    try:
        return (_parse_anthropic if provider == "anthropic" else _parse_openai)(body)
    except RecursionError:  # msgspec, skipping a value nested deeper than it can go
        return unscored("bad_response", f"nested too deeply to read: {excerpt(body)}")


def _usage(input_tokens: int, output_tokens: int) -> TokenUsage | None:
    """The provider's token counts, or None (not known) when they cannot be true: a negative
    count would make spend negative and ``--max-cost`` never stop (issue 23)."""
    if input_tokens < 0 or output_tokens < 0:
        return None
    return TokenUsage(input_tokens, output_tokens)


def _parse_openai(body: bytes) -> Parsed:
    try:
        r = _openai.decode(body)
    except msgspec.DecodeError as exc:
        return unscored("bad_response", f"not an OpenAI chat completion ({exc}): "
                        f"{excerpt(body)}")
    usage = None if r.usage is None else _usage(r.usage.prompt_tokens,
                                                r.usage.completion_tokens)
    if not r.choices or r.choices[0].message is None:
        return unscored("bad_response", f"no choices[0].message: {excerpt(body)}", usage, r.id)
    if len(r.choices) > 1:
        return unscored("ambiguous", f"{len(r.choices)} choices where one answer was asked for: "
                        f"{excerpt(body)}", usage, r.id)
    choice = r.choices[0]
    message = choice.message
    assert message is not None
    if message.refusal:
        return unscored("refusal", excerpt(message.refusal), usage, r.id)
    if choice.finish_reason == "content_filter":
        return unscored("refusal", "finish_reason content_filter: "
                        f"{excerpt(message.content or '')}", usage, r.id)
    if choice.finish_reason == "length":
        return unscored("truncated", "finish_reason length (raise --max-output-tokens): "
                        f"{excerpt(message.content or '')}", usage, r.id)
    return _read_text(message.content, usage, r.id)


def _parse_anthropic(body: bytes) -> Parsed:
    try:
        r = _anthropic.decode(body)
    except msgspec.DecodeError as exc:
        return unscored("bad_response", f"not an Anthropic message ({exc}): {excerpt(body)}")
    usage = None if r.usage is None else _usage(r.usage.input_tokens, r.usage.output_tokens)
    if r.type not in (None, "message"):
        return unscored("bad_response", f"type {r.type!r}: {excerpt(body)}", usage, r.id)
    text = "".join(b.text or "" for b in r.content if b.type == "text")
    if r.stop_reason == "refusal":
        return unscored("refusal", f"stop_reason refusal: {excerpt(text)}", usage, r.id)
    if r.stop_reason == "max_tokens":
        return unscored("truncated", "stop_reason max_tokens (raise --max-output-tokens): "
                        f"{excerpt(text)}", usage, r.id)
    calls = [b for b in r.content if b.type == "tool_use" and b.name == TOOL_NAME]
    if len(calls) > 1:
        return unscored("ambiguous", f"{len(calls)} {TOOL_NAME} tool calls where one verdict was "
                        f"asked for: {excerpt(body)}", usage, r.id)
    if calls:
        return _read_json(bytes(calls[0].input), usage, r.id)
    # A compatible server that ignores forced tools may answer in text.
    return _read_text(text, usage, r.id)


def _read_text(content: str | None, usage: TokenUsage | None, response_id: str | None) -> Parsed:
    text = (content or "").strip()
    if not text:
        return unscored("not_json", "the answer is empty", usage, response_id)
    return _read_json(unfenced(text).encode(), usage, response_id)


def unfenced(text: str) -> str:
    """The inside of one Markdown code fence around the whole of ``text`` (stripped), else
    ``text``: servers without structured output often fence their JSON.

    A fence is what ``^```[A-Za-z]*\\s*\\n(.*)\\n\\s*```$`` (``re.S``) matches, found with
    string operations in linear time: that pattern on Python's ``re`` backtracked cubically on an
    opened fence followed by newlines (5,000 newlines: 327 s, on the event loop's thread)."""
    if len(text) < 8 or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return text
    inside = text[3:-3].lstrip(string.ascii_letters)  # the language tag, e.g. ```json
    content = inside.strip()
    if not content:  # only whitespace: an opening and a closing newline make an empty fence
        return "" if inside.count("\n") >= 2 else text
    before = inside[:len(inside) - len(inside.lstrip())]
    after = inside[len(inside.rstrip()):]
    if "\n" not in before or "\n" not in after:
        return text  # the fence's lines must end before and begin after the content
    return content


def _read_json(data: bytes, usage: TokenUsage | None, response_id: str | None) -> Parsed:
    try:
        answer = _answer.decode(data)
    except msgspec.ValidationError as exc:
        return unscored("wrong_shape", f"{exc}; expected {{\"status\": \"pass\"|\"fail\"|\"na\", "
                        f"\"reason\": string}}: {excerpt(data)}", usage, response_id)
    except msgspec.DecodeError:
        return unscored("not_json", excerpt(data), usage, response_id)
    repeated = _repeated_key(data)
    if repeated is not None:
        return unscored("ambiguous", f"{repeated}: {excerpt(data)}", usage, response_id)
    return Parsed(answer.status, answer.reason, None, None, usage, response_id)


def _repeated_key(data: bytes) -> str | None:
    """Why an answer object msgspec read is ambiguous (a key given twice), or None.

    The standard library's reader keeps every pair (msgspec keeps the last): ~5 us on an
    answer of a few sentences, which is all an answer can be (``--max-output-tokens``)."""
    try:
        keys = [k for k, _ in json.loads(data, object_pairs_hook=list)]
    except ValueError:  # never seen (msgspec is the stricter reader); fail closed all the same
        return "the standard library's JSON reader cannot read the answer msgspec read"
    twice = next((k for k in ("status", "reason") if keys.count(k) > 1), None)
    return None if twice is None else f"`{twice}` is given {keys.count(twice)} times"


def unscored(cause: str, detail: str, usage: TokenUsage | None = None,
             response_id: str | None = None) -> Parsed:
    """An unscored result with its cause and a short detail."""
    assert cause in CAUSES, cause
    return Parsed("unscored", None, cause, detail, usage, response_id)


def http_error_detail(status: int, body: bytes) -> str:
    """``HTTP 400: <the error message, or the body's start>``."""
    try:
        message = msgspec.json.decode(body).get("error", {}).get("message")
    except (msgspec.DecodeError, AttributeError, RecursionError):
        message = None
    return f"HTTP {status}: {excerpt(message if isinstance(message, str) else body)}"


def excerpt(text: str | bytes, limit: int = DETAIL_CHARS) -> str:
    """The first ``limit`` characters, on one line, with an ellipsis when cut."""
    if isinstance(text, bytes):
        text = text[: limit * 4].decode("utf-8", "replace")
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "\u2026"
