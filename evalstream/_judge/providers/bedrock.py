"""AWS Bedrock, through its Converse API (one request shape for every model it hosts).

- Request (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
  ``POST {base_url}/model/{modelId}/converse``, the base URL
  ``https://bedrock-runtime.{region}.amazonaws.com`` (``--region``, else ``AWS_REGION`` or
  ``AWS_DEFAULT_REGION``, else us-east-1); the system text as ``system``, the state as the
  one user message, ``inferenceConfig`` ``{maxTokens, temperature}``, the answer asked for
  as a ``record_verdict`` tool the model is forced to call (``toolConfig.toolChoice``
  ``{"tool": {"name"}}``, as Anthropic's and Mistral's models on Bedrock take it;
  https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html).
  ``--thinking-budget`` (Claude): ``additionalModelRequestFields.thinking`` and the tool
  offered (``{"auto": {}}``), no temperature, as Anthropic's own API wants.
- Credentials: a Bedrock API key in ``AWS_BEARER_TOKEN_BEDROCK`` (``Authorization: Bearer``),
  else AWS credentials, each request signed with SigV4 by botocore's own signer
  (``pip install 'evalstream[bedrock]'``): ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``) from the environment, else the
  profile ``AWS_PROFILE`` (default ``default``) of the shared credentials file. Never
  instance metadata: that is a network call to an address evalstream does not send to.
- Answer: the ``toolUse.input`` of ``output.message.content`` (else its text); ``stopReason``
  ``max_tokens`` is truncated, ``guardrail_intervened`` and ``content_filtered`` a refusal;
  ``usage.inputTokens``/``outputTokens``; request id ``x-amzn-RequestId``; errors
  ``{"message"}``.
- Batch: Bedrock's batch inference (``CreateModelInvocationJob``) reads its records from S3,
  which evalstream does not write, and a record is the model's own InvokeModel body
  (``{"recordId", "modelInput"}``), not the Converse request: not spoken.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

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
from evalstream._judge.batch.formats import Limits
from evalstream._judge.providers.anthropic import check_thinking_budget
from evalstream._judge.providers.base import Config, NoBatch, Provider, Signer
from evalstream.errors import UsageError

DEFAULT_REGION = "us-east-1"
SERVICE = "bedrock"  # the SigV4 signing name of bedrock-runtime
# By the form of answer and whether the rubric allows `na` (``answer.asked``): the schema
# without it otherwise; a pairwise state's preference under its own description.
_TOOLS = {key: msgspec.Raw(msgspec.json.encode([{"toolSpec": {
    "name": TOOL_NAME, "description": TOOL_DESCRIPTIONS[key[0]],
    "inputSchema": {"json": schema}}}])) for key, schema in ASKED.items()}
_FORCED = msgspec.Raw(msgspec.json.encode({"tool": {"name": TOOL_NAME}}))
_AUTO = msgspec.Raw(msgspec.json.encode({"auto": {}}))
CREDENTIALS = ("set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key, or AWS credentials: "
               "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the "
               "environment, or a profile of the shared credentials file (AWS_PROFILE)")


class _Text(Struct, gc=False):
    text: str


class _Message(Struct, gc=False):
    role: str
    content: list[_Text]


class _Inference(Struct, gc=False, omit_defaults=True):
    maxTokens: int  # noqa: N815 (the API's names)
    temperature: float | None = None


class _ToolConfig(Struct, gc=False):
    tools: msgspec.Raw
    toolChoice: msgspec.Raw  # noqa: N815


class _Thinking(Struct, gc=False):
    type: str
    budget_tokens: int


class _Extra(Struct, gc=False):
    thinking: _Thinking


class Body(Struct, gc=False, omit_defaults=True):
    """A Bedrock Converse request (the model is in the URL)."""

    system: list[_Text]
    messages: list[_Message]
    inferenceConfig: _Inference  # noqa: N815
    toolConfig: _ToolConfig | None = None  # noqa: N815
    additionalModelRequestFields: _Extra | None = None  # noqa: N815


# -- the response (only the fields read; others are ignored) ------------------------------------
class _ToolUse(Struct, gc=False):
    name: str | None = None
    input: msgspec.Raw = msgspec.Raw()


class _Block(Struct, gc=False):
    text: str | None = None
    toolUse: _ToolUse | None = None  # noqa: N815
    # reasoningContent (Claude's thinking) is never read


class _RMessage(Struct, gc=False):
    content: list[_Block] = []


class _Output(Struct, gc=False):
    message: _RMessage | None = None


class _Usage(Struct, gc=False):
    inputTokens: int = 0  # noqa: N815
    outputTokens: int = 0  # noqa: N815


class _Response(Struct, gc=False):
    output: _Output | None = None
    stopReason: str | None = None  # noqa: N815
    usage: _Usage | None = None


_decode = msgspec.json.Decoder(_Response).decode


def region_of(config: Config, environ: Mapping[str, str] = os.environ) -> str:
    """The region requests are signed for: --region, else the one the runtime host names,
    else ``AWS_REGION``/``AWS_DEFAULT_REGION``, else us-east-1."""
    if config.region:
        return config.region
    host = urlsplit(config.base_url).hostname or ""
    if host.startswith("bedrock-runtime.") and host.endswith(".amazonaws.com"):
        return host.split(".")[1]
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


class Bedrock(NoBatch, Provider):
    """AWS Bedrock's Converse API."""

    name = "bedrock"
    title = "AWS Bedrock"
    speaks = "AWS Bedrock Converse"
    base_url = f"https://bedrock-runtime.{DEFAULT_REGION}.amazonaws.com"
    path = "/converse"
    key_env = "AWS_BEARER_TOKEN_BEDROCK"
    key_required = False  # else AWS credentials, through botocore (see signer)
    credential_headers = ("authorization",)
    request_id_header = "x-amzn-requestid"
    batch_speaks = "none (Bedrock batch inference reads from S3)"
    batch_none = ("Bedrock's batch inference (CreateModelInvocationJob) reads its records from "
                  "S3, which evalstream does not write, and each record is the model's own "
                  "InvokeModel body, not the Converse request a live run sends (one request "
                  "builder makes both for every other provider): judge with `evalstream judge "
                  "--provider bedrock`")
    batch_limits = Limits(0, 0)
    settings = ("thinking_budget", "region")

    def default_base_url(self, config: Config) -> str:
        return f"https://bedrock-runtime.{region_of(config)}.amazonaws.com"

    def check(self, config: Config) -> None:
        check_thinking_budget(config)

    def url(self, config: Config) -> str:
        # The model id is one path segment, its ':' escaped as botocore escapes it (the
        # signature covers the path as sent).
        return f"{config.base_url}/model/{quote(config.model, safe='')}{self.path}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def signer(self, config: Config, api_key: str | None,
               environ: Mapping[str, str]) -> Signer | None:
        if api_key:
            return None  # a Bedrock API key: a bearer token, sent as the header
        try:
            from botocore.auth import SigV4Auth
            from botocore.awsrequest import AWSRequest
            from botocore.credentials import EnvProvider, SharedCredentialProvider
        except ImportError:
            raise UsageError("--provider bedrock signs its requests with botocore: pip install "
                             "'evalstream[bedrock]' (or set AWS_BEARER_TOKEN_BEDROCK to a "
                             "Bedrock API key).") from None
        found = EnvProvider(environ=dict(environ)).load() or SharedCredentialProvider(
            os.path.expanduser(environ.get("AWS_SHARED_CREDENTIALS_FILE",
                                           "~/.aws/credentials")),
            environ.get("AWS_PROFILE", "default")).load()
        if found is None:
            raise UsageError(f"--provider bedrock found no credentials: {CREDENTIALS}.")
        credentials = found.get_frozen_credentials()
        region = region_of(config, environ)

        def sign(url: str, body: bytes) -> dict[str, str]:
            request = AWSRequest(method="POST", url=url, data=body,
                                 headers={"content-type": "application/json"})
            SigV4Auth(credentials, SERVICE, region).add_auth(request)
            return {k: v for k, v in request.headers.items() if k.lower() != "content-type"}

        # The session token travels in a header: a server echoing it is redacted as a key.
        return Signer(sign, credentials.token)

    def reasons(self, config: Config) -> bool:
        return config.thinking_budget is not None

    def sent_temperature(self, config: Config) -> float | None:
        return None if config.thinking_budget is not None else config.temperature

    def body(self, config: Config, system: str, state: str) -> bytes:
        budget = config.thinking_budget
        tools = config.response_format != "none"
        return config.encoder.encode(Body(
            system=[_Text(system)], messages=[_Message("user", [_Text(state)])],
            inferenceConfig=_Inference(config.max_output_tokens, self.sent_temperature(config)),
            toolConfig=_ToolConfig(_TOOLS[asked(config)],
                                   _AUTO if budget is not None else _FORCED) if tools else None,
            additionalModelRequestFields=None if budget is None else _Extra(
                _Thinking("enabled", budget))))

    def read(self, body: bytes, form: Form) -> Parsed:
        try:
            r = _decode(body)
        except msgspec.DecodeError as exc:
            return unscored("bad_response", f"not a Bedrock Converse response ({exc}): "
                            f"{excerpt(body)}")
        usage = None if r.usage is None else token_usage(r.usage.inputTokens,
                                                         r.usage.outputTokens)
        if r.output is None or r.output.message is None:
            return unscored("bad_response", f"no output.message: {excerpt(body)}", usage)
        blocks = r.output.message.content
        text = "".join(b.text or "" for b in blocks)
        if r.stopReason in ("guardrail_intervened", "content_filtered"):
            return unscored("refusal", f"stopReason {r.stopReason}: {excerpt(text)}", usage)
        if r.stopReason == "max_tokens":
            return unscored("truncated", "stopReason max_tokens (raise --max-output-tokens): "
                            f"{excerpt(text)}", usage)
        calls = [b.toolUse for b in blocks if b.toolUse is not None
                 and b.toolUse.name == TOOL_NAME]
        if len(calls) > 1:
            return unscored("ambiguous", f"{len(calls)} {TOOL_NAME} tool calls where one verdict "
                            f"was asked for: {excerpt(body)}", usage)
        if calls:
            return read_json(bytes(calls[0].input), usage, None, form)
        return read_text(text, usage, None, form, shaped=False)

    def error_detail(self, status: int, body: bytes) -> str:
        # AWS's JSON errors: {"message": ...} (some services: "Message")
        try:
            value = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            value = None
        if isinstance(value, dict):
            message = value.get("message", value.get("Message"))
            if isinstance(message, str):
                return f"HTTP {status}: {excerpt(message)}"
        return super().error_detail(status, body)
