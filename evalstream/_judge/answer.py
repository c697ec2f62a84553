"""The one answer parser: the answer a provider's response carries -> ``{status, reason}``, or
``unscored`` with a cause. Fail-closed: anything but a valid answer is ``unscored``, never
``pass``. Each provider's module (``evalstream._judge.providers``) reads its response's
shape (where the text or tool input, the usage, the refusal and truncation signals are) and
hands the answer to ``read_text`` or ``read_json`` here, which hold every check of the
answer itself; ``Provider.parse`` is the entry point.

Causes (the ``error.cause`` of an unscored verdict):

- ``not_json``: the answer text is not JSON (or is empty).
- ``wrong_shape``: JSON, but not exactly ``{"reason": string, "status": "pass"|"fail"|"na"}``
  (its keys in either order).
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
- ``garbled``: a 200 whose body is not JSON at all (a proxy's error page, a body cut short),
  on every attempt: a fault on the way, not an answer (issue 27; before, it was stored as
  ``bad_response`` and never asked again).
- ``errored``, ``expired``, ``canceled``: a batch request the provider did not answer (an error
  result, the batch's window ran out, the batch was canceled before it ran).

The first six come from an answer the provider gave (it is stored); the others from a
request that got none (nothing is stored: the next run asks again).
"""

from __future__ import annotations

import json
import string
from typing import TYPE_CHECKING, Literal, NamedTuple

import msgspec
from msgspec import Struct

if TYPE_CHECKING:
    from evalstream._verdicts.records import Confidence, TokenUsage

CAUSES = ("not_json", "wrong_shape", "refusal", "truncated", "bad_response", "ambiguous",
          "http_error", "timeout", "connection", "garbled", "errored", "expired", "canceled")
DETAIL_CHARS = 200
TOOL_NAME = "record_verdict"  # the tool a provider without JSON-schema answers is made to call

# The answer's JSON schema, as OpenAI's strict mode requires it: every property required,
# no other property allowed. The reason comes first (issue 26): structured output generates
# properties in schema order, and a judge that writes its grounds before its status agrees
# with people more than one that decides first (evidence-first prompting; G-Eval). Answers
# are read in either order: a store written before keeps its `{status, reason}` answers.
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "status": {"type": "string", "enum": ["pass", "fail", "na"]},
    },
    "required": ["reason", "status"],
    "additionalProperties": False,
}


class JudgeAnswer(Struct, forbid_unknown_fields=True, gc=False):
    """What the judge must answer: nothing more, nothing less."""

    status: Literal["pass", "fail", "na"]
    reason: str


class Parsed(NamedTuple):
    """A read answer: a status (``unscored`` with ``cause`` and ``detail`` when it cannot be
    used), the reason, the provider's token counts and response id, and whether the answer
    came in text that structured output did not shape (``unstructured``: a fence around it,
    reasoning before it, text where a tool call was asked for)."""

    status: str
    reason: str | None
    cause: str | None
    detail: str | None
    usage: TokenUsage | None
    response_id: str | None
    unstructured: bool = False
    # Where the answer's JSON begins in the text it came in (``read_text``: after any
    # reasoning and fence), for the status token's log probabilities (``_judge.logprobs``).
    at: int | None = None
    # The status's probabilities where the response carried log probabilities (issue 29),
    # and how reading them went (``logprobs.READINGS``; None: the response had none).
    confidence: Confidence | None = None
    confidence_read: str | None = None


_answer = msgspec.json.Decoder(JudgeAnswer)
_FENCE = "```"


def token_usage(input_tokens: int, output_tokens: int,
                reasoning_tokens: int | None = None) -> TokenUsage | None:
    """The provider's token counts, or None (not known) when they cannot be true: a negative
    count would make spend negative and ``--max-cost`` never stop (issue 23).
    ``output_tokens`` includes the reasoning (as every provider bills it);
    ``reasoning_tokens`` says how many of them it was, where the provider says."""
    # Imported here, not above: the CLI reads the providers' registry (this module's
    # importers) to build --provider's choices, and the verdict records cost 60 ms to import.
    from evalstream._verdicts.records import TokenUsage

    if input_tokens < 0 or output_tokens < 0:
        return None
    if reasoning_tokens is not None and not 0 <= reasoning_tokens <= output_tokens:
        reasoning_tokens = None  # not a count of part of the output: not known
    return TokenUsage(input_tokens, output_tokens, reasoning_tokens or None)


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def read_text(content: str | None, usage: TokenUsage | None, response_id: str | None,
              shaped: bool = True) -> Parsed:
    """The answer given as text (a message's content): JSON, once the reasoning before it
    (a ``<think>...</think>`` block, as DeepSeek-R1 and Qwen3 write it where a server does
    not split it into ``reasoning_content``) and any Markdown fence around the whole of it
    are taken off. The reasoning is never read as the answer. ``shaped`` False: the text
    came where structured output was asked for and not given (Anthropic's text instead of
    the tool call)."""
    text = content or ""
    at = _leading(text)  # where `text` begins in `content`, kept for the status token
    text = text.strip()
    if text.startswith(THINK_OPEN):
        end = text.find(THINK_CLOSE)
        if end < 0:
            return unscored("not_json", "the answer is reasoning that never closed its "
                            f"{THINK_CLOSE}: {excerpt(text)}", usage, response_id)
        rest = text[end + len(THINK_CLOSE):]
        at += end + len(THINK_CLOSE) + _leading(rest)
        text = rest.strip()
        shaped = False
    if not text:
        return unscored("not_json", "the answer is empty", usage, response_id)
    inside, skipped = _unfence(text)
    parsed = read_json(inside.encode(), usage, response_id)._replace(at=at + skipped)
    if not shaped or inside is not text:
        return parsed._replace(unstructured=True)
    return parsed


def _leading(text: str) -> int:
    """How many characters ``str.strip`` takes off the start of ``text``."""
    return len(text) - len(text.lstrip())


def status_at(answer: str) -> int | None:
    """Where the status value's characters begin in ``answer`` (an answer object that
    ``read_json`` read: just after the opening quote of the value of its ``status`` key),
    found by walking the object's structure as a JSON reader does, key by key, never by
    searching the text (a reason may say "pass" anywhere); None where it is not a plain
    string there."""
    decoder = json.JSONDecoder()
    try:
        i = _leading(answer)
        if answer[i] != "{":
            return None
        i += 1 + _leading(answer[i + 1:])
        while answer[i] == '"':
            key, i = json.decoder.scanstring(answer, i + 1)  # type: ignore[attr-defined]
            i += _leading(answer[i:])
            if answer[i] != ":":
                return None
            i += 1 + _leading(answer[i + 1:])
            if key == "status":
                return i + 1 if answer[i] == '"' else None
            _, i = decoder.raw_decode(answer, i)
            i += _leading(answer[i:])
            if answer[i] != ",":
                return None
            i += 1 + _leading(answer[i + 1:])
    except (IndexError, ValueError):
        return None
    return None


def unfenced(text: str) -> str:
    """The inside of one Markdown code fence around the whole of ``text`` (stripped), else
    ``text``: servers without structured output often fence their JSON.

    A fence is what ``^```[A-Za-z]*\\s*\\n(.*)\\n\\s*```$`` (``re.S``) matches, found with
    string operations in linear time: that pattern on Python's ``re`` backtracked cubically on an
    opened fence followed by newlines (5,000 newlines: 327 s, on the event loop's thread)."""
    return _unfence(text)[0]


def _unfence(text: str) -> tuple[str, int]:
    """``unfenced``'s text, and where it begins in ``text``."""
    if len(text) < 8 or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return text, 0
    inside = text[3:-3].lstrip(string.ascii_letters)  # the language tag, e.g. ```json
    tag = len(text) - 6 - len(inside)
    content = inside.strip()
    if not content:  # only whitespace: an opening and a closing newline make an empty fence
        return ("", 0) if inside.count("\n") >= 2 else (text, 0)
    before = inside[:len(inside) - len(inside.lstrip())]
    after = inside[len(inside.rstrip()):]
    if "\n" not in before or "\n" not in after:
        return text, 0  # the fence's lines must end before and begin after the content
    return content, 3 + tag + len(before)


def read_json(data: bytes, usage: TokenUsage | None, response_id: str | None) -> Parsed:
    """The answer given as JSON (a tool call's input): exactly ``{reason, status}`` (in
    either order), each key once, or unscored with the cause."""
    try:
        answer = _answer.decode(data)
    except msgspec.ValidationError as exc:
        return unscored("wrong_shape", f"{exc}; expected {{\"reason\": string, \"status\": "
                        f"\"pass\"|\"fail\"|\"na\"}}: {excerpt(data)}", usage, response_id)
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
