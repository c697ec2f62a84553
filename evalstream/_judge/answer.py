"""The one answer parser: the answer a provider's response carries -> ``{reason, status}``, or
``unscored`` with a cause. Fail-closed: anything but a valid answer is ``unscored``, never
``pass``. A pairwise state (issue 28) is answered in another form, ``PREFERENCE``:
``{reason, better}`` (the reason first, so that a judge writes its grounds before its
choice), ``better`` one of ``response_1``, ``response_2``, ``tie``; ``Parsed.status`` then
holds that choice. Each form is read only as itself: a verdict where a preference was asked
for is ``wrong_shape``. Each provider's module (``evalstream._judge.providers``) reads its
response's shape (where the text or tool input, the usage, the refusal and truncation
signals are) and hands the answer to ``read_text`` or ``read_json`` here, which hold every
check of the answer itself; ``Provider.parse`` is the entry point.

Causes (the ``error.cause`` of an unscored verdict):

- ``not_json``: the answer text is not JSON (or is empty).
- ``wrong_shape``: JSON, but not exactly ``{"reason": string, "status": "pass"|"fail"|"na"}``
  (its keys in either order; for a pairwise state: ``{"reason": string, "better":
  "response_1"|"response_2"|"tie"}``).
- ``refusal``: the model refused (OpenAI ``message.refusal`` or ``finish_reason``
  ``content_filter``; Anthropic ``stop_reason`` ``refusal``).
- ``truncated``: the answer was cut at the output limit (``finish_reason`` ``length``;
  Anthropic ``stop_reason`` ``max_tokens``).
- ``bad_response``: a 200 response that is not a chat completion (or message) at all.
- ``na_not_allowed``: the judge answered ``na`` for a rubric that does not allow it
  (``allows_na = false``: the instruction and the schema asked for pass or fail only); read
  where the verdict is made (``verdict.answered``), from any provider and any
  ``--response-format``.
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

The first seven come from an answer the provider gave (it is stored); the others from a
request that got none (nothing is stored: the next run asks again).
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import msgspec
from msgspec import Struct

# The answer's JSON schema (``answer_schema(False)`` for a rubric that does not allow `na`),
# as OpenAI's strict mode requires it, is written beside the answer instruction, in _checks;
# the providers read it from here.
from evalstream._checks.state import ANSWER_SCHEMA as ANSWER_SCHEMA

# A pairwise answer's schema and choices (issue 28), there too: build's budget counts it.
from evalstream._checks.state import PAIRWISE_SCHEMA as PAIRWISE_SCHEMA
from evalstream._checks.state import PREFERENCES as PREFERENCES
from evalstream._checks.state import answer_schema as answer_schema
from evalstream._checks.state import answer_statuses as answer_statuses

if TYPE_CHECKING:
    from evalstream._verdicts.records import Confidence, TokenUsage

CAUSES = ("not_json", "wrong_shape", "refusal", "truncated", "bad_response", "ambiguous",
          "http_error", "timeout", "connection", "garbled", "errored", "expired", "canceled")
NA_NOT_ALLOWED = "na_not_allowed"  # an answer's cause, found where the verdict is made
DETAIL_CHARS = 200
TOOL_NAME = "record_verdict"  # the tool a provider without JSON-schema answers is made to call
# The tool's description by the form of answer (the verdict's as it always was).
TOOL_DESCRIPTIONS = {"verdict": "Record the verdict on the judge state.",
                     "preference": "Record which response better meets the rubric, after the "
                                   "reason."}
# Every schema asks for the reason first (issue 26: ``_checks.state.answer_schema``):
# structured output generates properties in schema order, and a judge that writes its grounds
# before its status agrees with people more than one that decides first (evidence-first
# prompting; G-Eval). Answers are read in either order: a store written before keeps its
# `{status, reason}` answers.


class JudgeAnswer(Struct, forbid_unknown_fields=True, gc=False):
    """What the judge must answer: nothing more, nothing less."""

    status: Literal["pass", "fail", "na"]
    reason: str


class PairwiseAnswer(Struct, forbid_unknown_fields=True, gc=False):
    """What the judge of a pairwise state must answer: which response better meets the
    rubric, or a tie, after its reason."""

    reason: str
    better: Literal["response_1", "response_2", "tie"]


class Form(NamedTuple):
    """One form of answer: how it is asked for (the schema, named ``name`` where a provider
    names it) and read (the decoder, the keys each given once, the status's key)."""

    name: str
    schema: dict[str, Any]
    decode: Callable[[bytes], Any]
    keys: tuple[str, str]  # (the status's key, the reason's key)
    shape: str  # as a sentence shows it


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
# The form of a judge rubric's answer (its name is the one OpenAI's schema always had: the
# bytes of every request, and so the store keys, stay as they were) and of a pairwise one.
VERDICT = Form("verdict", ANSWER_SCHEMA, _answer.decode, ("status", "reason"),
               '{"reason": string, "status": "pass"|"fail"|"na"}')
PREFERENCE = Form("preference", PAIRWISE_SCHEMA, msgspec.json.Decoder(PairwiseAnswer).decode,
                  ("better", "reason"),
                  '{"reason": string, "better": "response_1"|"response_2"|"tie"}')
FORMS = {form.name: form for form in (VERDICT, PREFERENCE)}


def schema(answer: str, allows_na: bool = True) -> dict[str, Any]:
    """The schema a request asks its answer in: the form ``answer``'s, a verdict's without
    ``na`` where its rubric does not allow it (a preference never has one)."""
    return answer_schema(allows_na) if answer == VERDICT.name else FORMS[answer].schema


# Every (form, allows_na) a request may ask in, with its schema: each provider builds the
# fixed parts of its bodies from these once, and picks one by ``asked(config)``.
ASKED = {(name, allows_na): schema(name, allows_na)
         for name in FORMS for allows_na in (True, False)}


def asked(config: Any) -> tuple[str, bool]:
    """How a judge config asks (its ``answer`` form and ``allows_na``): a key of ``ASKED``."""
    return config.answer, config.allows_na


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
              form: Form = VERDICT, shaped: bool = True) -> Parsed:
    """The answer given as text (a message's content), in ``form``: JSON, once the reasoning
    before it (a ``<think>...</think>`` block, as DeepSeek-R1 and Qwen3 write it where a
    server does not split it into ``reasoning_content``) and any Markdown fence around the
    whole of it are taken off. The reasoning is never read as the answer. ``shaped`` False:
    the text came where structured output was asked for and not given (Anthropic's text
    instead of the tool call)."""
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
    parsed = read_json(inside.encode(), usage, response_id, form)._replace(at=at + skipped)
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


def read_json(data: bytes, usage: TokenUsage | None, response_id: str | None,
              form: Form = VERDICT) -> Parsed:
    """The answer given as JSON (a tool call's input): exactly ``{reason, status}`` (the
    ``form``'s keys, in either order), each key once, or unscored with the cause."""
    try:
        answer = form.decode(data)
    except msgspec.ValidationError as exc:
        return unscored("wrong_shape", f"{exc}; expected {form.shape}: {excerpt(data)}", usage,
                        response_id)
    except msgspec.DecodeError:
        return unscored("not_json", excerpt(data), usage, response_id)
    repeated = _repeated_key(data, form.keys)
    if repeated is not None:
        return unscored("ambiguous", f"{repeated}: {excerpt(data)}", usage, response_id)
    status, reason = (getattr(answer, key) for key in form.keys)
    return Parsed(status, reason, None, None, usage, response_id)


def _repeated_key(data: bytes, names: tuple[str, str] = ("status", "reason")) -> str | None:
    """Why an answer object msgspec read is ambiguous (a key given twice), or None.

    The standard library's reader keeps every pair (msgspec keeps the last): ~5 us on an
    answer of a few sentences, which is all an answer can be (``--max-output-tokens``), and
    5% of a judge run's CPU all the same (a JSON reader made for each call; every answer is
    read twice, as it is stored and for its verdict; issue 31). So it reads only what may
    hold a key twice: a key given twice is written twice as it is (``"status"``, quotes
    included, which a string's text holds only with its first quote escaped: read, to be
    sure), unless a ``\\u`` escape spells it (the only JSON escape that gives a letter)."""
    if b"\\u" not in data and all(data.count(b'"%s"' % name.encode()) < 2 for name in names):
        return None
    try:
        keys = [k for k, _ in json.loads(data, object_pairs_hook=list)]
    except ValueError:  # never seen (msgspec is the stricter reader); fail closed all the same
        return "the standard library's JSON reader cannot read the answer msgspec read"
    twice = next((k for k in names if keys.count(k) > 1), None)
    return None if twice is None else f"`{twice}` is given {keys.count(twice)} times"


def unscored(cause: str, detail: str, usage: TokenUsage | None = None,
             response_id: str | None = None) -> Parsed:
    """An unscored result with its cause and a short detail."""
    assert cause in CAUSES, cause
    return Parsed("unscored", None, cause, detail, usage, response_id)


def allowed(parsed: Parsed, allows_na: bool) -> Parsed:
    """``parsed`` as a verdict of a rubric that allows ``na`` or not (``allows_na`` false)
    takes it: an ``na`` there is unscored (``na_not_allowed``), whatever asked for the answer
    (a server may ignore the schema that left ``na`` out); and a confidence (issue 29) is over
    the two statuses the rubric allows: the ``na`` token's probability is that of an answer
    the rubric would leave unscored, so it is dropped and P(pass), P(fail) renormalised to
    sum to 1 (``na`` 0), as the instruction and the schema asked the judge to choose."""
    if allows_na:
        return parsed
    if parsed.status == "na":
        return parsed._replace(
            status="unscored", reason=None, cause=NA_NOT_ALLOWED, confidence=None,
            detail="the judge answered na, which this rubric does not allow (allows_na = "
                   "false): " + excerpt(parsed.reason or ""))
    sure = parsed.confidence
    if sure is None or not sure.na:
        return parsed
    kept = sure.pass_ + sure.fail
    return parsed._replace(confidence=msgspec.structs.replace(
        sure, pass_=sure.pass_ / kept, fail=sure.fail / kept, na=0.0) if kept > 0 else None)


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
