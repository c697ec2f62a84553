"""Azure OpenAI, Gemini and Bedrock (issue 27): each request in the shape of its provider's
documented examples, each documented response read, Azure's URL forms, and Bedrock's SigV4
signature against botocore's own signer (the one boto3 signs ``converse`` with) on a fixed
clock. The live runs of each against the fake server are the tests parametrised over the
registry (test_live.py, test_hostile.py, test_reasoning.py)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from evalstream._judge import live
from evalstream._judge.answer import ANSWER_SCHEMA
from evalstream._judge.providers import get
from evalstream._judge.request import ANSWER_INSTRUCTION, JudgeConfig
from evalstream._judge.transport import key_from_environment
from evalstream.errors import UsageError
from tests.judge.support import FakeServer, lines, states

RESOURCE = "https://example-resource.openai.azure.com"
STATE = '{"user_input":"Book me for Thursday.","assistant_response":"Done."}'


def body(config: JudgeConfig) -> dict[str, Any]:
    return json.loads(config.body("Q?", STATE))


# -- Azure -------------------------------------------------------------------------------------
# https://learn.microsoft.com/en-us/azure/ai-services/openai/reference#chat-completions:
# POST https://{resource}.openai.azure.com/openai/deployments/{deployment-id}/chat/completions
# ?api-version=2024-10-21, header `api-key`.
@pytest.mark.parametrize(("kw", "url"), [
    ({"base_url": RESOURCE, "model": "gpt-4o-mini"},
     f"{RESOURCE}/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"),
    ({"base_url": RESOURCE + "/", "model": "gpt-4o-mini", "deployment": "judge",
      "api_version": "2025-01-01-preview"},
     f"{RESOURCE}/openai/deployments/judge/chat/completions?api-version=2025-01-01-preview"),
    ({"base_url": f"{RESOURCE}/openai/deployments/judge?api-version=2024-12-01-preview",
      "model": "o3-mini"},
     f"{RESOURCE}/openai/deployments/judge/chat/completions?api-version=2024-12-01-preview"),
    ({"base_url": f"{RESOURCE}/openai/v1/", "model": "judge"},
     f"{RESOURCE}/openai/v1/chat/completions"),
])
def test_azure_urls(kw: dict[str, str], url: str) -> None:
    config = JudgeConfig(provider="azure", **kw)  # type: ignore[arg-type]
    assert config.url == url
    assert get("azure").headers("k") == {"api-key": "k"}
    assert body(config)["model"] == kw.get("deployment", kw["model"])


def test_azure_batch_endpoints_carry_the_api_version() -> None:
    config = JudgeConfig(provider="azure", model="gpt-4o-mini", base_url=RESOURCE)
    api = get("azure")
    assert api.endpoint(config, "/files") == f"{RESOURCE}/openai/files?api-version=2024-10-21"
    assert api.endpoint(config, "/batches?limit=100") == \
        f"{RESOURCE}/openai/batches?limit=100&api-version=2024-10-21"
    v1 = JudgeConfig(provider="azure", model="m", base_url=f"{RESOURCE}/openai/v1")
    assert api.endpoint(v1, "/files") == f"{RESOURCE}/openai/v1/files"


@pytest.mark.parametrize("base_url", [f"{RESOURCE}?key=SECRET", f"{RESOURCE}?api-version=1&"
                                      "api-version=2", f"{RESOURCE}#SECRET"])
def test_azure_takes_no_other_query(base_url: str) -> None:
    with pytest.raises(UsageError, match="must not carry a query other than api-version") as e:
        JudgeConfig(provider="azure", model="m", base_url=base_url)
    assert "SECRET" not in str(e.value)
    with pytest.raises(UsageError, match="must not carry a query or fragment"):
        JudgeConfig(model="m", base_url=f"{RESOURCE}?api-version=1")  # only Azure's


def test_azure_always_wants_its_key() -> None:
    config = JudgeConfig(provider="azure", model="m", base_url="http://127.0.0.1:9")
    with pytest.raises(UsageError, match="set AZURE_OPENAI_API_KEY"):
        key_from_environment(config, None, {})


# -- Gemini ------------------------------------------------------------------------------------
def test_gemini_request_is_the_documented_generate_content() -> None:
    # https://ai.google.dev/api/generate-content#method:-models.generatecontent and
    # https://ai.google.dev/gemini-api/docs/structured-output (responseMimeType,
    # responseSchema in the OpenAPI subset: types in capitals, propertyOrdering).
    config = JudgeConfig(provider="gemini", model="gemini-2.5-flash", thinking_budget=512)
    assert config.url == ("https://generativelanguage.googleapis.com/v1beta/models/"
                          "gemini-2.5-flash:generateContent")
    sent = body(config)
    assert sent == {
        "systemInstruction": {"parts": [{"text": f"Q?\n\n{ANSWER_INSTRUCTION}"}]},
        "contents": [{"parts": [{"text": STATE}], "role": "user"}],
        "generationConfig": {
            "maxOutputTokens": 1024, "temperature": 0.0,
            "responseMimeType": "application/json",
            "responseSchema": {"type": "OBJECT", "properties": {
                "reason": {"type": "STRING"},
                "status": {"type": "STRING", "enum": ["pass", "fail", "na"]}},
                "required": ["reason", "status"], "propertyOrdering": ["reason", "status"]},
            "thinkingConfig": {"thinkingBudget": 512}}}
    assert get("gemini").headers("k") == {"x-goog-api-key": "k"}
    bare = body(JudgeConfig(provider="gemini", model="gemini-2.0-flash", response_format="none"))
    assert "responseSchema" not in bare["generationConfig"]


def gemini_response(**kw: Any) -> bytes:
    answer = '{"status": "fail", "reason": "No booking was made."}'
    response = {"candidates": [{"content": {"parts": [
        {"text": "Let me check the tool events.", "thought": True}, {"text": answer}],
        "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 14,
                          "thoughtsTokenCount": 60, "totalTokenCount": 194},
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"}
    response["candidates"][0].update(kw)
    return json.dumps(response).encode()


def test_gemini_response_thoughts_never_read_and_counted_as_output() -> None:
    parsed = get("gemini").parse(gemini_response())
    assert (parsed.status, parsed.reason, parsed.response_id) == (
        "fail", "No booking was made.", "resp-1")
    assert parsed.usage is not None
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens,
            parsed.usage.reasoning_tokens) == (120, 74, 60)
    assert get("gemini").parse(gemini_response(finishReason="SAFETY")).cause == "refusal"
    assert get("gemini").parse(gemini_response(finishReason="MAX_TOKENS")).cause == "truncated"
    blocked = get("gemini").parse(b'{"promptFeedback": {"blockReason": "SAFETY"}}')
    assert (blocked.cause, blocked.detail) == ("refusal", "promptFeedback.blockReason SAFETY")


def test_gemini_key_is_read_from_google_api_key_too() -> None:
    config = JudgeConfig(provider="gemini", model="gemini-2.5-flash")
    assert key_from_environment(config, None, {"GOOGLE_API_KEY": "g"}) == "g"
    assert key_from_environment(config, None, {"GEMINI_API_KEY": "a",
                                                "GOOGLE_API_KEY": "g"}) == "a"
    with pytest.raises(UsageError, match="set GEMINI_API_KEY"):
        key_from_environment(config, None, {})


# -- Bedrock -----------------------------------------------------------------------------------
def test_bedrock_request_is_the_documented_converse() -> None:
    # https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html and
    # https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html
    # (toolSpec.inputSchema.json; toolChoice {"tool": {"name"}}).
    model = "anthropic.claude-3-5-sonnet-20240620-v1:0"
    config = JudgeConfig(provider="bedrock", model=model, region="eu-west-1")
    assert config.url == ("https://bedrock-runtime.eu-west-1.amazonaws.com/model/"
                          "anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse")
    assert body(config) == {
        "system": [{"text": f"Q?\n\n{ANSWER_INSTRUCTION}"}],
        "messages": [{"role": "user", "content": [{"text": STATE}]}],
        "inferenceConfig": {"maxTokens": 1024, "temperature": 0.0},
        "toolConfig": {"tools": [{"toolSpec": {
            "name": "record_verdict", "description": "Record the verdict on the judge state.",
            "inputSchema": {"json": ANSWER_SCHEMA}}}],
            "toolChoice": {"tool": {"name": "record_verdict"}}}}
    thinking = body(JudgeConfig(provider="bedrock", model=model, thinking_budget=1024,
                                max_output_tokens=4096))
    assert thinking["toolConfig"]["toolChoice"] == {"auto": {}}
    assert thinking["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert "temperature" not in thinking["inferenceConfig"]


def test_bedrock_response_is_read() -> None:
    response = {"output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": '{"status": "pass"}'}}},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "record_verdict",
                     "input": {"status": "fail", "reason": "No booking."}}}]}},
        "stopReason": "tool_use", "usage": {"inputTokens": 30, "outputTokens": 40,
                                            "totalTokens": 70}, "metrics": {"latencyMs": 9}}
    parsed = get("bedrock").parse(json.dumps(response).encode())
    assert (parsed.status, parsed.reason) == ("fail", "No booking.")
    assert parsed.usage is not None and parsed.usage.output_tokens == 40
    response["stopReason"] = "guardrail_intervened"
    assert get("bedrock").parse(json.dumps(response).encode()).cause == "refusal"
    assert get("bedrock").error_detail(403, b'{"message": "The security token included in '
                                       b'the request is invalid."}') == \
        "HTTP 403: The security token included in the request is invalid."


FIXED = datetime.datetime(2026, 12, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
AWS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
       "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
       "AWS_SESSION_TOKEN": "FQoGZXIvYXdzEXAMPLETOKEN"}


def test_sigv4_is_the_signature_boto3_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3's own ``converse`` call, stopped before it is sent, against evalstream's signer
    for the same URL and body, on one fixed clock: the same path (the model id's ``:``
    escaped) and the same Authorization, date and token headers."""
    import boto3
    import botocore.auth

    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: FIXED)
    model = "anthropic.claude-3-5-sonnet-20240620-v1:0"
    client = boto3.client("bedrock-runtime", region_name="eu-west-1",
                          aws_access_key_id=AWS["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=AWS["AWS_SECRET_ACCESS_KEY"],
                          aws_session_token=AWS["AWS_SESSION_TOKEN"])
    seen: dict[str, Any] = {}

    class Sent(Exception):
        pass

    def stop(request: Any, **_: Any) -> None:
        seen.update(url=request.url, headers=dict(request.headers), body=request.body)
        raise Sent

    client.meta.events.register("before-send.bedrock-runtime.Converse", stop)
    with pytest.raises(Sent):
        client.converse(modelId=model, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    config = JudgeConfig(provider="bedrock", model=model, region="eu-west-1")
    assert seen["url"] == config.url
    signer = get("bedrock").signer(config, None, AWS)
    assert signer is not None
    ours = signer.sign(config.url, seen["body"])
    assert signer.secret == AWS["AWS_SESSION_TOKEN"]  # redacted wherever a server echoes it
    theirs = {k.lower(): (v.decode() if isinstance(v, bytes) else v)
              for k, v in seen["headers"].items()}
    assert ours["Authorization"] == theirs["authorization"]
    assert ours["X-Amz-Date"] == theirs["x-amz-date"] == "20261204T120000Z"
    assert ours["X-Amz-Security-Token"] == theirs["x-amz-security-token"]


def test_bedrock_without_credentials_says_how_to_give_them(tmp_path: Path) -> None:
    config = JudgeConfig(provider="bedrock", model="m")
    with pytest.raises(UsageError, match="found no credentials: set AWS_BEARER_TOKEN_BEDROCK"):
        get("bedrock").signer(config, None, {"AWS_SHARED_CREDENTIALS_FILE":
                                             str(tmp_path / "none")})
    assert get("bedrock").signer(config, "bedrock-api-key", {}) is None  # a bearer key


def test_bedrock_signed_end_to_end(tmp_path: Path, fake: Any) -> None:
    server: FakeServer = fake()
    # echoheader: the server sends back the session token the request carried
    path = states(tmp_path, ["FAKE:pass", "FAKE:fail", "FAKE:echoheader"])
    out = tmp_path / "v.jsonl"
    config = JudgeConfig(provider="bedrock", model="anthropic.claude-v2:1",
                         base_url=server.url, region="us-west-2")
    report = live.run(live.Options(input=str(path), output=str(out), config=config,
                                   environ=dict(AWS)))
    got = lines(out)
    assert [v["status"] for v in got] == ["pass", "fail", "pass"]
    assert got[2]["request_id"] == "[redacted]"
    assert report.requests.answered == 3
    for file in tmp_path.iterdir():
        if file.is_file():
            data = file.read_bytes()
            assert AWS["AWS_SECRET_ACCESS_KEY"].encode() not in data
            assert AWS["AWS_SESSION_TOKEN"].encode() not in data
