"""OpenAI chat completions, and every server that speaks them (vLLM, llama.cpp, Ollama,
LiteLLM...); the OpenAI Batch API (also ``vllm run-batch``).

- Request: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer KEY``; the system
  text and the state as two messages, the answer asked for with ``response_format``, a JSON
  schema in strict mode (``--response-format json_object``: llama.cpp's dialect, the
  schema beside ``{"type": "json_object"}``; ``none``: not asked). api.openai.com reads the
  limit as ``max_completion_tokens`` (reasoning models refuse ``max_tokens``); every other
  compatible server reads ``max_tokens``.
- Reasoning models (o1, o3, o4, GPT-5 but ``gpt-5-chat``, or any model given
  ``--reasoning-effort``): ``max_completion_tokens`` on every server, no temperature,
  ``reasoning_effort`` when given
  (https://platform.openai.com/docs/guides/reasoning). The reasoning is billed as output:
  ``completion_tokens`` includes it, ``completion_tokens_details.reasoning_tokens`` says
  how much. A DeepSeek- or Qwen-style server's ``reasoning_content`` is never read, and a
  ``<think>`` block before the JSON is taken off (``answer.read_text``).
- Answer: ``choices[0].message.content`` (``refusal``; ``finish_reason`` ``content_filter``,
  ``length``), ``usage.prompt_tokens``/``completion_tokens``; request id ``x-request-id``.
- Tokens: the model family's encoding, as tiktoken's model table has it.
- Batch (https://platform.openai.com/docs/api-reference/batch): request lines
  ``{"custom_id", "method", "url", "body"}``, at most 50,000 and 200 MB a file; the file is
  uploaded (``POST /files``, ``purpose=batch``) and a batch made of it (``POST /batches``);
  ``GET /batches/{id}``; a create whose answer was lost is looked up among the batches made
  from the same file (``GET /batches``) before it is sent again; results in an output file
  and an error file (``GET /files/{id}/content``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar
from urllib.parse import urlsplit

import msgspec
from msgspec import Struct

from evalstream._judge.answer import (
    ASKED,
    Form,
    Parsed,
    asked,
    excerpt,
    read_text,
    token_usage,
    unscored,
)
from evalstream._judge.batch.formats import (
    Limits,
    Outcome,
    ResultLine,
    absent,
    error_text,
    request_line_problem,
)
from evalstream._judge.logprobs import TOP_LOGPROBS, Token
from evalstream._judge.logprobs import read as read_logprobs
from evalstream._judge.providers.base import (
    BatchCalls,
    Config,
    Message,
    Provider,
    Submission,
    Unconfirmed,
)
from evalstream.errors import OutputError, UsageError

OFFICIAL_HOST = "api.openai.com"
BATCH_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
ENDED = ("completed", "expired", "cancelled", "failed")
# Model name prefix -> encoding, first match wins (OpenAI's own table in tiktoken/model.py;
# gpt-oss's o200k_harmony has o200k_base's ranks and pattern: the same counts of text).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"), ("chatgpt-4o", "o200k_base"), ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"), ("gpt-5", "o200k_base"), ("gpt-oss", "o200k_base"),
    ("o1", "o200k_base"), ("o3", "o200k_base"), ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("gpt-3.5", "cl100k_base"), ("gpt-35", "cl100k_base"),
)


def _response_formats(answer: str, schema: dict[str, Any]) -> dict[str, msgspec.Raw | None]:
    """--response-format: OpenAI's strict JSON schema (the default), named as its form of
    answer (``verdict``, or a pairwise state's ``preference``); llama.cpp's and vLLM's
    ``json_object`` with the schema beside it (llama-cpp-python's server 0.3.36 answers
    ``json_schema`` with HTTP 500 and constrains its grammar to this one); or none."""
    return {
        "json_schema": msgspec.Raw(msgspec.json.encode(
            {"type": "json_schema",
             "json_schema": {"name": answer, "strict": True, "schema": schema}})),
        "json_object": msgspec.Raw(msgspec.json.encode(
            {"type": "json_object", "schema": schema})),
        "none": None,
    }


# By the form of answer and whether the rubric allows `na` (``answer.asked``): the schema
# without it otherwise, a pairwise state's preference, in every format that carries one.
RESPONSE_FORMATS = {key: _response_formats(key[0], schema) for key, schema in ASKED.items()}
# Reasoning models: the limit is max_completion_tokens (they refuse max_tokens), and they
# take no temperature (o1, o3, o4-mini and GPT-5 answer 400 to any but their default).
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")


class Body(Struct, gc=False, omit_defaults=True, kw_only=True):
    """An OpenAI chat completions request (``POST {base_url}/chat/completions``)."""

    model: str
    messages: list[Message]
    temperature: float | None = None
    max_completion_tokens: int | None = None  # api.openai.com: the current name
    max_tokens: int | None = None  # other OpenAI-compatible servers all read this one
    reasoning_effort: str | None = None
    response_format: msgspec.Raw | None = None
    logprobs: bool | None = None  # --confidence (issue 29), with top_logprobs
    top_logprobs: int | None = None


# -- the response (only the fields read; others are ignored) ------------------------------------
class _Message(Struct, gc=False):
    # `reasoning_content` (DeepSeek, Qwen, vLLM's reasoning parsers) is never read: the
    # reasoning is never the answer.
    content: str | None = None
    refusal: str | None = None


class _Logprobs(Struct, gc=False):
    content: list[Token] | None = None


class _Choice(Struct, gc=False):
    message: _Message | None = None
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Details(Struct, gc=False):
    reasoning_tokens: int | None = None


class _Usage(Struct, gc=False):
    prompt_tokens: int = 0
    completion_tokens: int = 0  # the reasoning included, as it is billed
    completion_tokens_details: _Details | None = None


class _Response(Struct, gc=False):
    id: str | None = None
    choices: list[_Choice] = []
    usage: _Usage | None = None


class _BatchResponse(Struct, gc=False):
    status_code: int | None = None
    request_id: str | None = None
    body: msgspec.Raw = msgspec.Raw()


_decode = msgspec.json.Decoder(_Response).decode
_decode_batch_response = msgspec.json.Decoder(_BatchResponse).decode


@lru_cache(maxsize=64)
def official(base_url: str) -> bool:
    """Whether requests go to api.openai.com (which reads ``max_completion_tokens``); once a
    URL (urlsplit on every request cost ~5 us of a batch prepare's ~60 us a state)."""
    return urlsplit(base_url).hostname == OFFICIAL_HOST


def reasoning_model(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning models (o-series, GPT-5 but its chat
    variant), as its name says: they take ``reasoning_effort`` and no temperature."""
    name = model.rsplit("/", 1)[-1].lower()
    return name.startswith(REASONING_PREFIXES) and "-chat" not in name


class OpenAI(Provider):
    """OpenAI chat completions and the OpenAI Batch API."""

    name = "openai"
    title = "OpenAI"
    speaks = "OpenAI chat completions (also every OpenAI-compatible server)"
    base_url = "https://api.openai.com/v1"
    path = "/chat/completions"
    key_env = "OPENAI_API_KEY"
    credential_headers = ("authorization",)
    request_id_header = "x-request-id"
    batch_speaks = "the OpenAI Batch API format (also vllm run-batch and OpenAI-compatible hosts)"
    # 50,000 requests and 200 MB an input file; MB read as 10^6 bytes, the smaller reading.
    batch_limits = Limits(50_000, 200_000_000)
    response_formats = tuple(RESPONSE_FORMATS["verdict", True])
    settings: ClassVar[tuple[str, ...]] = ("reasoning_effort",)
    batch_endpoint = BATCH_ENDPOINT  # a request line's url, and the batch's endpoint
    logprobs = True  # `logprobs`, `top_logprobs` (vLLM and llama.cpp's server take them too)

    def body_model(self, config: Config) -> str:
        """What the body's ``model`` says (Azure: the deployment)."""
        return config.model

    def check(self, config: Config) -> None:
        effort = config.reasoning_effort
        if effort is not None and effort not in REASONING_EFFORTS:
            raise UsageError(f"--reasoning-effort must be one of {', '.join(REASONING_EFFORTS)}"
                             f", not {effort!r}.")

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def reasoning(self, config: Config) -> bool:
        """Whether the judge is a reasoning model (by its name, or asked for an effort)."""
        return config.reasoning_effort is not None or reasoning_model(config.model)

    def reasons(self, config: Config) -> bool:
        return self.reasoning(config)

    def completion_limit(self, config: Config) -> bool:
        """Whether the limit is sent as ``max_completion_tokens``: to api.openai.com, and to
        any server for a reasoning model (which refuses ``max_tokens``); every other
        compatible server reads ``max_tokens``."""
        return official(config.base_url) or self.reasoning(config)

    def sent_temperature(self, config: Config) -> float | None:
        return None if self.reasoning(config) else config.temperature

    def body(self, config: Config, system: str, state: str) -> bytes:
        completion = self.completion_limit(config)
        return config.encoder.encode(Body(
            model=self.body_model(config),
            messages=[Message("system", system), Message("user", state)],
            temperature=self.sent_temperature(config),
            max_completion_tokens=config.max_output_tokens if completion else None,
            max_tokens=None if completion else config.max_output_tokens,
            reasoning_effort=config.reasoning_effort,
            response_format=RESPONSE_FORMATS[asked(config)][config.response_format],
            logprobs=True if config.confidence else None,
            top_logprobs=TOP_LOGPROBS if config.confidence else None))

    def samples_body(self, config: Config, body: bytes, n: int) -> bytes | None:
        # `n` choices of one request: the prompt is billed once (OpenAI, Azure, vLLM take
        # it; a server that ignores it answers one choice, and the rest are asked alone).
        # Joined onto the body's bytes, which end with the object's `}`: never encoded again.
        return body[:-1] + b',"n":' + str(n).encode() + b"}"

    def split_samples(self, body: bytes) -> list[bytes]:
        """Each choice of a response to an ``n`` request as the response of its own sample:
        the response with that one choice, and its share of the usage. The prompt was billed
        once, so ``prompt_tokens`` go to the first sample; ``completion_tokens`` (and
        reasoning tokens) are split evenly, the remainder to the first, so that the samples'
        counts add up to the response's."""
        try:
            response = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            return [body]
        choices = response.get("choices") if isinstance(response, dict) else None
        if not isinstance(choices, list) or len(choices) < 2:
            return [body]
        usage = response.get("usage")
        shares = _usage_shares(usage, len(choices))
        out = []
        for i, choice in enumerate(choices):
            one = dict(response)
            one["choices"] = [choice]
            if shares is not None:
                one["usage"] = shares[i]
            elif i:
                one.pop("usage", None)  # counts that cannot be split: told once, on the first
            out.append(msgspec.json.encode(one))
        return out

    def read(self, body: bytes, form: Form) -> Parsed:
        try:
            r = _decode(body)
        except msgspec.DecodeError as exc:
            return unscored("bad_response", f"not an OpenAI chat completion ({exc}): "
                            f"{excerpt(body)}")
        usage = None if r.usage is None else token_usage(
            r.usage.prompt_tokens, r.usage.completion_tokens,
            r.usage.completion_tokens_details.reasoning_tokens
            if r.usage.completion_tokens_details else None)
        if not r.choices or r.choices[0].message is None:
            return unscored("bad_response", f"no choices[0].message: {excerpt(body)}", usage,
                            r.id)
        if len(r.choices) > 1:
            return unscored("ambiguous", f"{len(r.choices)} choices where one answer was asked "
                            f"for: {excerpt(body)}", usage, r.id)
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
        parsed = read_text(message.content, usage, r.id, form)
        if choice.logprobs is not None and choice.logprobs.content is not None \
                and parsed.cause is None and message.content is not None:
            return read_logprobs(parsed, message.content, choice.logprobs.content)
        return parsed

    def encoding(self, model: str) -> str | None:
        name = model.rsplit("/", 1)[-1].lower()
        for prefix, encoding in FAMILIES:
            if name.startswith(prefix):
                return encoding
        return None

    # -- batch files -----------------------------------------------------------------------------
    def request_line(self, custom_id: str, body: bytes) -> bytes:
        return (b'{"custom_id":"' + custom_id.encode() + b'","method":"POST","url":"'
                + self.batch_endpoint.encode() + b'","body":' + body + b"}\n")

    def result_problem(self, line: ResultLine) -> tuple[str, str] | None:
        given = request_line_problem(line)
        if given is not None:
            return given
        ours = not absent(line.response) or not absent(line.error)
        if line.result is not None and not ours:
            return "$.result", ("This line is an Anthropic Message Batches result (`result`), "
                                "but the batch was prepared for openai; its results have "
                                "`response` and `error`.")
        if not ours:
            return "$.response", ("An OpenAI batch result needs `response` (the HTTP status and "
                                  "body) or `error`; this line has neither.")
        if not absent(line.response):
            try:
                _decode_batch_response(line.response)
            except msgspec.DecodeError as exc:
                return "$.response", (f"`$.response` must be an object with `status_code`, "
                                      f"`request_id` and `body` ({str(exc).split(' - at')[0]}).")
        return None

    def outcome(self, line: ResultLine) -> Outcome:
        # Failures are in the error file: `response.status_code` other than 200, or
        # `error.code` batch_expired / batch_cancelled; vLLM writes them inline.
        response = None if absent(line.response) else _batch_response(line.response)
        request_id = response.request_id if response is not None else None
        if not absent(line.error):
            code, message = error_text(line.error)
            kind = {"batch_expired": "expired", "batch_cancelled": "canceled"}.get(code or "",
                                                                                 "errored")
            status = f"HTTP {response.status_code}: " if response is not None and \
                response.status_code not in (None, 200) else ""
            return Outcome(kind, None, request_id,
                           f"{status}{code}: {message}" if code else f"{status}{message}")
        assert response is not None
        if response.status_code == 200 and not absent(response.body):
            return Outcome("succeeded", bytes(response.body), request_id, None)
        if response.status_code == 200:
            return Outcome("errored", None, request_id, "HTTP 200 without a response body")
        return Outcome("errored", None, request_id,
                       self.error_detail(response.status_code or 0, bytes(response.body)))

    # -- batch endpoints -------------------------------------------------------------------------
    def batch_path(self, batch_id: str) -> str:
        return f"/batches/{batch_id}"

    def batch_status(self, batch: Mapping[str, Any]) -> str:
        return str(batch.get("status") or "")

    def batch_ended(self, status: str) -> bool:
        return status in ENDED

    async def submit(self, client: BatchCalls, job: Submission) -> dict[str, Any]:
        import asyncio  # here: the registry is read to build the command line (start-up)

        file_id = job.saved.get("input_file_id")
        if not isinstance(file_id, str):
            file_id = await _upload(client, job.path, job.name)
            job.save(input_file_id=file_id)
        if job.saved.get("creating"):
            found = await _find(client, file_id)
            if found is not None:
                return found
        metadata = {"evalstream_file": job.name, "evalstream_config": job.config_hash}
        attempt = 0
        while True:
            attempt += 1
            job.save(creating=time.time())
            try:
                return await _create(client, file_id, metadata, self.batch_endpoint)
            except Unconfirmed as exc:
                # The batch may exist: it would be listed with this file as its input.
                await asyncio.sleep(min(2.0 ** attempt, 30.0) / 4)
                found = await _find(client, file_id)
                if found is not None:
                    return found
                if attempt >= client.max_attempts:
                    raise OutputError(f"creating the batch of {job.name} failed {attempt} times "
                                      f"({exc}); run submit again to continue.") from exc

    async def download(self, client: BatchCalls, batch: Mapping[str, Any], folder: str,
                       stem: str) -> list[str]:
        saved = []
        for kind, file_id in (("output", batch.get("output_file_id")),
                              ("errors", batch.get("error_file_id"))):
            if isinstance(file_id, str) and file_id:
                name = f"{stem}.{kind}.jsonl"
                await client.save(client.url(f"/files/{file_id}/content"),
                                  os.path.join(folder, name))
                saved.append(name)
        return saved


def _usage_shares(usage: Any, n: int) -> list[dict[str, Any]] | None:
    """A response's ``usage`` split over its ``n`` choices (see ``OpenAI.split_samples``), or
    None when its counts are not whole numbers of 0 or more."""
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    details = usage.get("completion_tokens_details")
    details = details if isinstance(details, dict) else {}
    reasoning = details.get("reasoning_tokens")
    counts = [prompt, completion] + ([reasoning] if reasoning is not None else [])
    if not all(type(c) is int and c >= 0 for c in counts):
        return None
    assert isinstance(prompt, int) and isinstance(completion, int)

    def share(total: int, i: int) -> int:
        return total // n + (total % n if i == 0 else 0)

    shares = []
    for i in range(n):
        part = dict(usage)
        part["prompt_tokens"] = prompt if i == 0 else 0
        part["completion_tokens"] = share(completion, i)
        part["total_tokens"] = part["prompt_tokens"] + part["completion_tokens"]
        if isinstance(reasoning, int):
            part["completion_tokens_details"] = {**details,
                                                 "reasoning_tokens": share(reasoning, i)}
        shares.append(part)
    return shares


def _batch_response(raw: msgspec.Raw) -> _BatchResponse:
    """The ``response`` of a result line; vLLM before 0.5 wrote the chat completion itself
    there (no ``status_code``, no ``body``): read as a 200 with that body."""
    response = _decode_batch_response(raw)  # its shape was checked by `result_problem`
    if response.status_code is None and absent(response.body):
        return _BatchResponse(200, None, raw)
    return response


async def _upload(client: BatchCalls, path: str, name: str) -> str:
    """Upload a request file (``purpose=batch``); its file id."""
    import aiohttp

    def form() -> Any:
        data = aiohttp.FormData()
        data.add_field("purpose", "batch")
        data.add_field("file", open(path, "rb"), filename=name, content_type="application/jsonl")
        return data

    found = await client.json("POST", "/files", body=form)
    file_id = found.get("id")
    if not isinstance(file_id, str) or not file_id:
        raise OutputError(f"/files answered without `id`: {excerpt(str(found))}")
    return file_id


async def _create(client: BatchCalls, file_id: str, metadata: dict[str, str],
                  endpoint: str) -> dict[str, Any]:
    """Create a batch of an uploaded file."""
    payload = msgspec.json.encode({"input_file_id": file_id, "endpoint": endpoint,
                                   "completion_window": COMPLETION_WINDOW,
                                   "metadata": metadata})
    return await client.json("POST", "/batches", body=lambda: payload, creates=True,
                             headers={"content-type": "application/json"})


async def _find(client: BatchCalls, file_id: str, pages: int = 10) -> dict[str, Any] | None:
    """A batch made from ``file_id``, if one was (newest first, the first ``pages``)."""
    after = None
    for _ in range(pages):
        query = "/batches?limit=100" + (f"&after={after}" if after else "")
        page = await client.json("GET", query)
        data = page.get("data") or []
        for batch in data:
            if isinstance(batch, dict) and batch.get("input_file_id") == file_id:
                return batch
        if not page.get("has_more") or not data:
            return None
        after = page.get("last_id") or data[-1].get("id")
    return None
