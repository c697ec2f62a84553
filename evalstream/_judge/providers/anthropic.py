"""Anthropic messages, and Message Batches.

- Request: ``POST {base_url}/messages`` with ``x-api-key: KEY`` and ``anthropic-version``; the
  system text as ``system``, the state as the one user message, the answer asked for as a
  ``record_verdict`` tool the model is forced to call (``tool_choice`` ``{"type": "tool"}``;
  ``--response-format none``: no tool).
- Extended thinking (``--thinking-budget N``,
  https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking): ``thinking``
  ``{"type": "enabled", "budget_tokens": N}``, no temperature, and the tool offered with
  ``tool_choice`` ``{"type": "auto"}``: a forced tool choice is refused with thinking on.
  The thinking blocks come before the tool call and are never read; ``output_tokens``
  counts them.
- Answer: the tool call's ``input`` (or, from a compatible server that ignores forced tools,
  the text); ``stop_reason`` ``refusal``, ``max_tokens``; ``usage.input_tokens``/
  ``output_tokens``; request id ``request-id``.
- Tokens: the tokenizer is not public; counts are an estimate, and said to be.
- Batch (https://docs.anthropic.com/en/api/creating-message-batches): request lines
  ``{"custom_id", "params"}``, at most 100,000 and 256 MB a batch; a file's lines are sent as
  the ``requests`` array of one create call (``POST /messages/batches``), streamed;
  ``GET /messages/batches/{id}``; results from its ``results_url`` (only on the API's own
  host). A create whose answer was lost cannot be looked up: submit stops and says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec
from msgspec import Struct

from evalstream._judge.answer import (
    ASKED,
    TOOL_DESCRIPTIONS,
    TOOL_NAME,
    Form,
    Parsed,
    asked,
    excerpt,
    read_json,
    read_text,
    token_usage,
    unscored,
)
from evalstream._judge.batch.formats import (
    RESULT_TYPES,
    Limits,
    Outcome,
    ResultLine,
    absent,
    error_text,
    request_line_problem,
)
from evalstream._judge.providers.base import (
    BatchCalls,
    Config,
    Message,
    Provider,
    Submission,
    Unconfirmed,
)
from evalstream.errors import OutputError, UsageError

VERSION = "2023-06-01"  # the anthropic-version header
# The create call of a batch wraps a file's lines: `{"requests":[` + lines joined by commas
# + `]}`, so its body is the file's size plus this many bytes.
WRAP = len(b'{"requests":[]}') - 1  # the file's last newline becomes nothing
STREAM_BLOCK = 1 << 20
# By the form of answer and whether the rubric allows `na` (``answer.asked``): the schema
# without it otherwise; a pairwise state's preference under its own description.
_TOOLS = {key: msgspec.Raw(msgspec.json.encode(
    [{"name": TOOL_NAME, "description": TOOL_DESCRIPTIONS[key[0]], "input_schema": schema}]))
    for key, schema in ASKED.items()}
_TOOL_CHOICE = msgspec.Raw(msgspec.json.encode({"type": "tool", "name": TOOL_NAME}))
# With extended thinking a forced tool choice is refused (HTTP 400: "Thinking may not be
# enabled when tool_choice forces tool use"): the tool is offered, and the model chooses.
_TOOL_AUTO = msgspec.Raw(msgspec.json.encode({"type": "auto"}))
MIN_THINKING_BUDGET = 1024  # budget_tokens' documented minimum


class Thinking(Struct, gc=False):
    """Extended thinking (``{"type": "enabled", "budget_tokens": N}``)."""

    type: str
    budget_tokens: int


class Body(Struct, gc=False, omit_defaults=True, kw_only=True):
    """An Anthropic messages request (``POST {base_url}/messages``)."""

    model: str
    max_tokens: int
    system: str
    messages: list[Message]
    temperature: float | None = None
    thinking: Thinking | None = None
    tools: msgspec.Raw | None = None
    tool_choice: msgspec.Raw | None = None


# -- the response (only the fields read; others are ignored) ------------------------------------
class _Block(Struct, gc=False):
    type: str = ""
    text: str | None = None
    name: str | None = None
    input: msgspec.Raw = msgspec.Raw()


class _Usage(Struct, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0


class _Response(Struct, gc=False):
    id: str | None = None
    type: str | None = None
    content: list[_Block] = []
    stop_reason: str | None = None
    usage: _Usage | None = None


_decode = msgspec.json.Decoder(_Response).decode


def check_thinking_budget(config: Config) -> None:
    """UsageError unless --thinking-budget (if given) is Claude's minimum or more and leaves
    room for the answer within --max-output-tokens (Anthropic, and Claude on Bedrock)."""
    budget = config.thinking_budget
    if budget is None:
        return
    if budget < MIN_THINKING_BUDGET:
        raise UsageError(f"--thinking-budget must be at least {MIN_THINKING_BUDGET:,} "
                         f"tokens (Anthropic's minimum), not {budget:,}.")
    if config.max_output_tokens <= budget:
        raise UsageError(f"--max-output-tokens ({config.max_output_tokens:,}) must be more "
                         f"than --thinking-budget ({budget:,}): the thinking is part of "
                         "the output, and the answer comes after it.")


class Anthropic(Provider):
    """Anthropic messages and Message Batches."""

    name = "anthropic"
    title = "Anthropic"
    speaks = "Anthropic messages"
    base_url = "https://api.anthropic.com/v1"
    path = "/messages"
    key_env = "ANTHROPIC_API_KEY"
    credential_headers = ("x-api-key",)
    request_id_header = "request-id"
    batch_speaks = "Message Batches"
    # 100,000 requests and 256 MB a batch (its create call: the file and the wrap); MB read
    # as 10^6 bytes, the smaller reading.
    batch_limits = Limits(100_000, 256_000_000 - WRAP)

    settings = ("thinking_budget",)

    def check(self, config: Config) -> None:
        check_thinking_budget(config)

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def reasons(self, config: Config) -> bool:
        return config.thinking_budget is not None

    def sent_temperature(self, config: Config) -> float | None:
        # Extended thinking takes no temperature but its default (1).
        return None if config.thinking_budget is not None else config.temperature

    def body(self, config: Config, system: str, state: str) -> bytes:
        thinking = config.thinking_budget
        tools = config.response_format != "none"
        return config.encoder.encode(Body(
            model=config.model, max_tokens=config.max_output_tokens, system=system,
            messages=[Message("user", state)], temperature=self.sent_temperature(config),
            thinking=None if thinking is None else Thinking("enabled", thinking),
            tools=_TOOLS[asked(config)] if tools else None,
            tool_choice=(_TOOL_AUTO if thinking is not None else _TOOL_CHOICE) if tools
            else None))

    def read(self, body: bytes, form: Form) -> Parsed:
        try:
            r = _decode(body)
        except msgspec.DecodeError as exc:
            return unscored("bad_response", f"not an Anthropic message ({exc}): {excerpt(body)}")
        usage = None if r.usage is None else token_usage(r.usage.input_tokens,
                                                         r.usage.output_tokens)
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
            return unscored("ambiguous", f"{len(calls)} {TOOL_NAME} tool calls where one verdict "
                            f"was asked for: {excerpt(body)}", usage, r.id)
        if calls:
            return read_json(bytes(calls[0].input), usage, r.id, form)
        # A compatible server that ignores forced tools may answer in text, and so may a
        # model thinking, whose tool is offered, not forced. Thinking blocks (`thinking`,
        # `redacted_thinking`) are never read.
        return read_text(text, usage, r.id, form, shaped=False)

    def tokenizer_unknown(self, model: str) -> str:
        return "Anthropic's tokenizer is not public"

    # -- batch files -----------------------------------------------------------------------------
    def request_line(self, custom_id: str, body: bytes) -> bytes:
        return b'{"custom_id":"' + custom_id.encode() + b'","params":' + body + b"}\n"

    def result_problem(self, line: ResultLine) -> tuple[str, str] | None:
        given = request_line_problem(line)
        if given is not None:
            return given
        if line.result is None:
            openai = not absent(line.response) or not absent(line.error)
            return "$.result", ("Required field `result` is missing; an Anthropic Message Batches "
                                "result line is `{\"custom_id\", \"result\": {\"type\", ...}}`"
                                + (" (this line looks like an OpenAI batch result, but the batch "
                                   "was prepared for anthropic)." if openai else "."))
        if line.result.type not in RESULT_TYPES:
            return "$.result.type", (f"`$.result.type` is {line.result.type!r}; allowed values "
                                     f"are: {', '.join(RESULT_TYPES)}.")
        if line.result.type == "succeeded" and absent(line.result.message):
            return "$.result.message", ("A succeeded result needs `$.result.message`, the "
                                        "message the model wrote.")
        return None

    def outcome(self, line: ResultLine) -> Outcome:
        result = line.result
        assert result is not None
        if result.type == "succeeded":
            return Outcome("succeeded", bytes(result.message), None, None)
        if result.type == "errored":
            code, message = error_text(result.error)
            return Outcome("errored", None, None, f"{code}: {message}" if code else message)
        return Outcome(result.type, None, None, f"the batch request was {result.type} before "
                       "it ran")

    # -- batch endpoints -------------------------------------------------------------------------
    def batch_path(self, batch_id: str) -> str:
        return f"/messages/batches/{batch_id}"

    def batch_status(self, batch: Mapping[str, Any]) -> str:
        return str(batch.get("processing_status") or "")  # none: not a batch (remote says)

    def batch_ended(self, status: str) -> bool:
        return status == "ended"

    async def submit(self, client: BatchCalls, job: Submission) -> dict[str, Any]:
        if job.saved.get("creating") and not job.resubmit_unconfirmed:
            raise OutputError(
                f"the create call for {job.name} (at {time.ctime(job.saved['creating'])}) ended "
                "without an answer, so a batch of it may exist. Look for it under Message "
                "Batches in the Anthropic console: if it is there, its results can be collected "
                "by custom_id whatever batch they came from; run submit with "
                "--resubmit-unconfirmed to create it (again).")
        job.save(creating=time.time())
        size = os.path.getsize(job.path)
        try:
            return await client.json(
                "POST", "/messages/batches", body=lambda: _wrapped(job.path, size),
                creates=True, headers={"content-type": "application/json",
                                       "content-length": str(size + WRAP)})
        except Unconfirmed as exc:
            raise OutputError(f"the create call for {job.name} ended without an answer ({exc}), "
                              "so a batch may have been made; see `evalstream batch status` and "
                              "--resubmit-unconfirmed.") from exc

    async def download(self, client: BatchCalls, batch: Mapping[str, Any], folder: str,
                       stem: str) -> list[str]:
        # The results_url is followed only on the API's own host: the key is never sent
        # anywhere else.
        name = f"{stem}.results.jsonl"
        url = batch.get("results_url")
        if not isinstance(url, str) or _origin(url) != _origin(client.base):
            url = client.url(f"/messages/batches/{batch['id']}/results")
        await client.save(url, os.path.join(folder, name))
        return [name]


async def _wrapped(path: str, size: int) -> AsyncIterator[bytes]:
    """A request file as the body of a create call: ``{"requests":[`` + its lines joined by
    commas + ``]}`` (JSON lines hold no raw newline, so each newline is a seam)."""
    yield b'{"requests":['
    left = size
    with open(path, "rb") as f:
        while left:
            block = f.read(min(STREAM_BLOCK, left))
            if not block:
                break
            left -= len(block)
            if not left:
                block = block.removesuffix(b"\n")
            yield block.replace(b"\n", b",")
    yield b"]}"


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port
