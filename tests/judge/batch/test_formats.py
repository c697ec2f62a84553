"""Request lines in the providers' documented shapes (the live judge's body, unchanged) and
every result shape read to the right outcome: OpenAI output and error files, vLLM's inline
errors (a plain string, or an error object), Anthropic's four result types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import Meta

from evalstream._judge.batch import prepare
from evalstream._judge.batch.formats import ResultLine
from evalstream._judge.providers import REGISTRY, anthropic, get
from evalstream._judge.request import JudgeConfig, build
from evalstream.errors import UsageError

# The documented shapes, strictly: OpenAI's "request input object" (custom_id, method POST,
# url, body) and Anthropic's Message Batches request (custom_id, params); custom_id 1-64
# characters of [A-Za-z0-9_-] (Anthropic's rule, the stricter one).
CustomId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]

# The providers whose batch form evalstream speaks (the others refuse `batch`).
BATCHED = [name for name, p in REGISTRY.items() if not p.batch_none]


class OpenAIRequestLine(msgspec.Struct, forbid_unknown_fields=True):
    custom_id: CustomId
    method: Literal["POST"]
    url: Literal["/v1/chat/completions"]
    body: msgspec.Raw


class AzureRequestLine(msgspec.Struct, forbid_unknown_fields=True):
    # https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/batch ("url":
    # "/chat/completions", the global-batch deployment as the body's model)
    custom_id: CustomId
    method: Literal["POST"]
    url: Literal["/chat/completions"]
    body: msgspec.Raw


class AnthropicRequestLine(msgspec.Struct, forbid_unknown_fields=True):
    custom_id: CustomId
    params: msgspec.Raw


# Each provider's documented request line, and where it carries the body: a provider added to
# the registry fails here until its documented shape is written down.
REQUEST_LINES: dict[str, tuple[type[msgspec.Struct], str]] = {
    "openai": (OpenAIRequestLine, "body"),
    "anthropic": (AnthropicRequestLine, "params"),
    "azure": (AzureRequestLine, "body"),
}
# Where a provider has no public endpoint, the base URL its documented examples use.
BASE_URLS = {"azure": "https://example-resource.openai.azure.com"}


QUESTION = "You are evaluating... Is assistant_response helpful?"
STATE = '{"user_input":"Hi \\"there\\"\\n","assistant_response":"Hello ✅"}'


@pytest.mark.parametrize("provider", BATCHED)
def test_a_request_line_is_the_documented_shape_around_the_live_body(provider: str) -> None:
    config = JudgeConfig(model="m", provider=provider, base_url=BASE_URLS.get(provider, ""))
    req = build(config, QUESTION, STATE)
    line = get(provider).request_line(req.key, req.body)
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    shape, field = REQUEST_LINES[provider]
    decoded: Any = msgspec.json.decode(line, type=shape)
    assert bytes(getattr(decoded, field)) == req.body  # byte for byte what a live run sends
    assert decoded.custom_id == req.key and len(req.key) == 64
    assert json.loads(line)  # and the stdlib reads it


@given(question=st.text(), state=st.dictionaries(st.text(), st.text()),
       provider=st.sampled_from(BATCHED))
def test_any_text_makes_a_valid_line_carrying_the_exact_body(question: str, state: dict,
                                                             provider: str) -> None:
    state_text = json.dumps(state, ensure_ascii=False)
    req = build(JudgeConfig(model="m", provider=provider,
                            base_url=BASE_URLS.get(provider, "")), question, state_text)
    line = get(provider).request_line(req.key, req.body)
    assert line.count(b"\n") == 1  # one line, whatever the text holds
    shape, field = REQUEST_LINES[provider]
    msgspec.json.decode(line, type=shape)  # the documented shape, strictly
    loaded = json.loads(line)
    assert loaded["custom_id"] == req.key and loaded[field] == json.loads(req.body)


def test_the_anthropic_wrap_is_what_submit_adds() -> None:
    lines = b'{"custom_id":"a","params":{}}\n{"custom_id":"b","params":{}}\n'
    wrapped = b'{"requests":[' + lines[:-1].replace(b"\n", b",") + b"]}"
    assert len(wrapped) == len(lines) + anthropic.WRAP
    assert json.loads(wrapped)["requests"][1]["custom_id"] == "b"


COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": '{"status":"pass","reason":"ok"}'},
     "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
MESSAGE = {"id": "msg_1", "type": "message", "content": [
    {"type": "tool_use", "name": "record_verdict", "input": {"status": "fail", "reason": "x"}}],
    "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 2}}

# (provider, result line, outcome type, request id, words of the detail)
RESULTS: list[tuple[str, dict[str, Any], str, str | None, str | None]] = [
    ("openai", {"id": "batch_req_1", "custom_id": "c", "response": {
        "status_code": 200, "request_id": "req_1", "body": COMPLETION}, "error": None},
     "succeeded", "req_1", None),
    ("openai", {"id": "batch_req_2", "custom_id": "c", "response": {
        "status_code": 400, "request_id": "req_2",
        "body": {"error": {"message": "max_tokens is too large", "type": "invalid_request"}}},
        "error": None}, "errored", "req_2", "HTTP 400: max_tokens is too large"),
    ("openai", {"id": "batch_req_3", "custom_id": "c", "response": None, "error": {
        "code": "batch_expired", "message": "This request could not be executed before the "
        "completion window expired."}}, "expired", None, "batch_expired: This request"),
    ("openai", {"id": "batch_req_4", "custom_id": "c", "response": None, "error": {
        "code": "batch_cancelled", "message": "The batch was cancelled."}},
     "canceled", None, "batch_cancelled"),
    ("openai", {"id": "batch_req_5", "custom_id": "c", "response": None, "error": {
        "code": "request_timeout", "message": "The model timed out."}},
     "errored", None, "request_timeout: The model timed out."),
    # vLLM run-batch: errors inline, as a plain string (with status 400 and no body)...
    ("openai", {"id": "vllm-1", "custom_id": "c", "response": {
        "status_code": 400, "request_id": "vllm-batch-1", "body": None},
        "error": "The model does not support Chat Completions API"},
     "errored", "vllm-batch-1", "HTTP 400: The model does not support Chat Completions API"),
    # ... or an ErrorResponse object (newer vLLM: nested; older: flat, its code the status)
    ("openai", {"id": "vllm-2", "custom_id": "c", "response": {
        "status_code": 400, "request_id": "vllm-batch-2"},
        "error": {"error": {"message": "bad temperature", "type": "BadRequestError",
                            "param": None, "code": 400}}},
     "errored", "vllm-batch-2", "HTTP 400: BadRequestError: bad temperature"),
    ("openai", {"id": "vllm-3", "custom_id": "c", "response": {
        "status_code": 400, "request_id": "vllm-batch-3", "body": None},
        "error": {"object": "error", "message": "context too long", "type": "BadRequestError",
                  "code": 400}}, "errored", "vllm-batch-3", "BadRequestError: context too long"),
    # vLLM before 0.5: the chat completion itself as `response`
    ("openai", {"id": "vllm-4", "custom_id": "c", "response": COMPLETION, "error": None},
     "succeeded", None, None),
    ("openai", {"custom_id": "c", "response": {"status_code": 200, "body": None}},
     "errored", None, "HTTP 200 without a response body"),
    ("anthropic", {"custom_id": "c", "result": {"type": "succeeded", "message": MESSAGE}},
     "succeeded", None, None),
    ("anthropic", {"custom_id": "c", "result": {"type": "errored", "error": {
        "type": "error", "error": {"type": "invalid_request_error",
                                   "message": "max_tokens: too large"}}}},
     "errored", None, "invalid_request_error: max_tokens: too large"),
    ("anthropic", {"custom_id": "c", "result": {"type": "canceled"}}, "canceled", None,
     "canceled before it ran"),
    ("anthropic", {"custom_id": "c", "result": {"type": "expired"}}, "expired", None,
     "expired before it ran"),
]


@pytest.mark.parametrize(("provider", "row", "kind", "request_id", "detail"), RESULTS)
def test_every_result_shape_has_its_outcome(provider: str, row: dict[str, Any], kind: str,
                                            request_id: str | None, detail: str | None) -> None:
    line = msgspec.json.decode(json.dumps(row).encode(), type=ResultLine)
    assert get(provider).result_problem(line) is None
    got = get(provider).outcome(line)
    assert (got.type, got.request_id) == (kind, request_id)
    if kind == "succeeded":
        body = row["result"]["message"] if provider == "anthropic" else \
            row["response"].get("body", row["response"])
        assert json.loads(got.body) == body and got.detail is None  # type: ignore[arg-type]
    else:
        assert got.body is None and detail is not None and detail in (got.detail or "")


@pytest.mark.parametrize(("provider", "row", "path", "words"), [
    ("openai", {"custom_id": "c", "method": "POST", "url": "/v1/chat/completions", "body": {}},
     "$.body", "This is a request line"),
    ("anthropic", {"custom_id": "c", "params": {}}, "$.params", "This is a request line"),
    ("openai", {"custom_id": "c", "result": {"type": "succeeded", "message": MESSAGE}},
     "$.result", "prepared for openai"),
    ("anthropic", {"custom_id": "c", "response": {"status_code": 200, "body": COMPLETION}},
     "$.result", "looks like an OpenAI batch result"),
    ("anthropic", {"custom_id": "c", "result": {"type": "done"}}, "$.result.type",
     "allowed values are: succeeded, errored, canceled, expired"),
    ("anthropic", {"custom_id": "c", "result": {"type": "succeeded"}}, "$.result.message",
     "needs `$.result.message`"),
    ("openai", {"custom_id": "c"}, "$.response", "has neither"),
    ("openai", {"custom_id": "c", "response": "ok"}, "$.response", "must be an object"),
    ("openai", {"custom_id": "c", "response": {"status_code": "200"}}, "$.response",
     "must be an object with `status_code`"),
])
def test_lines_that_are_not_results_say_why(provider: str, row: dict[str, Any], path: str,
                                            words: str) -> None:
    line = msgspec.json.decode(json.dumps(row).encode(), type=ResultLine)
    found = get(provider).result_problem(line)
    assert found is not None and found[0] == path and words in found[1]


@pytest.mark.parametrize("provider", [n for n, p in REGISTRY.items() if p.batch_none])
def test_a_provider_without_a_batch_form_is_refused_with_its_sentence(
        tmp_path: Path, provider: str) -> None:
    config = JudgeConfig(model="m", provider=provider)
    with pytest.raises(UsageError, match=rf"--provider {provider}: evalstream's batch commands "
                                         r"do not speak|--provider bedrock: Bedrock's batch"):
        prepare.run(prepare.Options(input=str(tmp_path / "s.jsonl"),
                                    folder=str(tmp_path / "b"), config=config))
    assert not (tmp_path / "b").exists()
