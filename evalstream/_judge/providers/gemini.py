"""Google Gemini, through its own API: ``generateContent`` with a response schema.

Why the native API and not Gemini's OpenAI-compatible endpoint (which ``--provider openai
--base-url https://generativelanguage.googleapis.com/v1beta/openai`` already reaches): the
native API is the one Google documents first and changes last; it constrains the answer
with ``responseSchema`` (the compatible endpoint's ``strict`` is not enforced), says why an
answer was withheld (``finishReason`` ``SAFETY``, ``promptFeedback.blockReason``), counts
the thinking apart (``thoughtsTokenCount``, billed as output but outside
``candidatesTokenCount``: read through the compatible layer it is easy to under-count), and
takes a thinking budget.

- Request (https://ai.google.dev/api/generate-content): ``POST
  {base_url}/models/{model}:generateContent`` with ``x-goog-api-key: KEY``; the system text
  as ``systemInstruction``, the state as the one user part, ``generationConfig``
  ``{temperature, maxOutputTokens, responseMimeType: "application/json", responseSchema}``
  (the answer's schema in Gemini's OpenAPI subset, which has no ``additionalProperties``:
  the answer is checked for it all the same), ``thinkingConfig.thinkingBudget`` with
  ``--thinking-budget``.
- Answer: the text parts of ``candidates[0].content`` (``thought`` parts never read);
  ``finishReason`` ``MAX_TOKENS`` is truncated, ``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII`` and a ``promptFeedback.blockReason`` a refusal;
  ``usageMetadata.promptTokenCount``, ``candidatesTokenCount`` + ``thoughtsTokenCount`` as
  output; ``responseId``.
- Batch: Gemini's Batch Mode (``batchGenerateContent``, https://ai.google.dev/gemini-api/docs/batch-mode)
  is not spoken yet: its inline requests' results come back in request order, their
  ``metadata`` (the key) not always returned (users report it missing), and evalstream
  matches results by ``custom_id``, never by position; its JSONL files (``{"key",
  "request"}`` lines, results ``{"key", "response"}``) would do, but reach the API through
  the Files API's resumable upload (a session URL read from a response header), which the
  batch client does not speak yet.
"""

from __future__ import annotations

from typing import Any

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
from evalstream._judge.batch.formats import Limits
from evalstream._judge.providers.base import Config, NoBatch, Provider


def _gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An answer's JSON schema (``answer.ASKED``: an object of strings, some enumerated) in
    Gemini's OpenAPI subset (https://ai.google.dev/api/caching#Schema), its properties in
    the schema's order (the reason first, in every form: issue 26)."""
    properties = {name: {"type": "STRING", **({"enum": p["enum"]} if "enum" in p else {})}
                  for name, p in schema["properties"].items()}
    return {"type": "OBJECT", "properties": properties, "required": schema["required"],
            "propertyOrdering": list(properties)}


# The answer's schema by the form of answer and whether the rubric allows `na`
# (``answer.asked``): without it otherwise; a pairwise state's preference.
SCHEMA = {key: _gemini_schema(schema) for key, schema in ASKED.items()}
WITHHELD = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
            "IMAGE_SAFETY", "LANGUAGE")


class _Part(Struct, gc=False, omit_defaults=True):
    text: str


class _Content(Struct, gc=False, omit_defaults=True):
    parts: list[_Part]
    role: str | None = None


class _Thinking(Struct, gc=False):
    thinkingBudget: int  # noqa: N815 (the API's name)


class _Generation(Struct, gc=False, omit_defaults=True):
    maxOutputTokens: int  # noqa: N815
    temperature: float | None = None
    responseMimeType: str | None = None  # noqa: N815
    responseSchema: Any = None  # noqa: N815
    thinkingConfig: _Thinking | None = None  # noqa: N815


class Body(Struct, gc=False, omit_defaults=True):
    """A Gemini ``generateContent`` request."""

    systemInstruction: _Content  # noqa: N815
    contents: list[_Content]
    generationConfig: _Generation  # noqa: N815


# -- the response (only the fields read; others are ignored) ------------------------------------
class _RPart(Struct, gc=False):
    text: str | None = None
    thought: bool = False


class _RContent(Struct, gc=False):
    parts: list[_RPart] = []


class _Candidate(Struct, gc=False):
    content: _RContent | None = None
    finishReason: str | None = None  # noqa: N815


class _Feedback(Struct, gc=False):
    blockReason: str | None = None  # noqa: N815


class _Usage(Struct, gc=False):
    promptTokenCount: int = 0  # noqa: N815
    candidatesTokenCount: int = 0  # noqa: N815
    thoughtsTokenCount: int = 0  # noqa: N815


class _Response(Struct, gc=False):
    candidates: list[_Candidate] = []
    promptFeedback: _Feedback | None = None  # noqa: N815
    usageMetadata: _Usage | None = None  # noqa: N815
    responseId: str | None = None  # noqa: N815


_decode = msgspec.json.Decoder(_Response).decode


class Gemini(NoBatch, Provider):
    """Google Gemini's generateContent."""

    name = "gemini"
    title = "Gemini"
    speaks = "Google Gemini generateContent"
    base_url = "https://generativelanguage.googleapis.com/v1beta"
    path = ""  # the model is in the path: see url
    key_env = "GEMINI_API_KEY"
    key_env_also = ("GOOGLE_API_KEY",)
    key_always = True
    credential_headers = ("x-goog-api-key",)
    request_id_header = "x-goog-request-id"  # seldom sent: the body's responseId otherwise
    batch_speaks = "none yet (judge live)"
    batch_none = ("evalstream's batch commands do not speak Gemini's Batch Mode "
                  "(batchGenerateContent) yet: its inline requests come back matched by "
                  "position only (results are matched by custom_id here, never by position), "
                  "and its request files need the Files API's resumable upload: judge with "
                  "`evalstream judge --provider gemini`")
    batch_limits = Limits(0, 0)
    settings = ("thinking_budget",)

    def url(self, config: Config) -> str:
        return f"{config.base_url}/models/{config.model.removeprefix('models/')}:generateContent"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def reasons(self, config: Config) -> bool:
        # Gemini 2.5 and later think by default, within maxOutputTokens.
        return config.thinking_budget is not None or "2.5" in config.model \
            or config.model.startswith(("gemini-3", "models/gemini-3"))

    def body(self, config: Config, system: str, state: str) -> bytes:
        structured = config.response_format != "none"
        budget = config.thinking_budget
        return config.encoder.encode(Body(
            systemInstruction=_Content([_Part(system)]),
            contents=[_Content([_Part(state)], "user")],
            generationConfig=_Generation(
                maxOutputTokens=config.max_output_tokens, temperature=config.temperature,
                responseMimeType="application/json" if structured else None,
                responseSchema=SCHEMA[asked(config)] if structured else None,
                thinkingConfig=None if budget is None else _Thinking(budget))))

    def read(self, body: bytes, form: Form) -> Parsed:
        try:
            r = _decode(body)
        except msgspec.DecodeError as exc:
            return unscored("bad_response", f"not a Gemini response ({exc}): {excerpt(body)}")
        u = r.usageMetadata
        usage = None if u is None else token_usage(
            u.promptTokenCount, u.candidatesTokenCount + u.thoughtsTokenCount,
            u.thoughtsTokenCount or None)
        if r.promptFeedback is not None and r.promptFeedback.blockReason:
            return unscored("refusal", f"promptFeedback.blockReason {r.promptFeedback.blockReason}",
                            usage, r.responseId)
        if not r.candidates:
            return unscored("bad_response", f"no candidates: {excerpt(body)}", usage,
                            r.responseId)
        if len(r.candidates) > 1:
            return unscored("ambiguous", f"{len(r.candidates)} candidates where one answer was "
                            f"asked for: {excerpt(body)}", usage, r.responseId)
        candidate = r.candidates[0]
        parts = candidate.content.parts if candidate.content is not None else []
        text = "".join(p.text or "" for p in parts if not p.thought)
        if candidate.finishReason in WITHHELD:
            return unscored("refusal", f"finishReason {candidate.finishReason}: "
                            f"{excerpt(text)}", usage, r.responseId)
        if candidate.finishReason == "MAX_TOKENS":
            return unscored("truncated", "finishReason MAX_TOKENS (raise --max-output-tokens): "
                            f"{excerpt(text)}", usage, r.responseId)
        return read_text(text, usage, r.responseId, form)
