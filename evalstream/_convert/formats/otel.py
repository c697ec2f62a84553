"""``--from otel``: production traces -> one case a trace, from OpenTelemetry GenAI spans.

The input is OTLP JSON as the OpenTelemetry collector's file exporter writes it: one export
request a line (``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans"}]}]}``),
read by the one line loop. Spans are grouped by trace: a trace is a row, complete once its
root span (no ``parentSpanId``) has been read with the rest of its line, or at the end of the
file when its root is not in it (a parent in another service). Memory: the spans of the
traces not yet complete.

A case comes from the trace's GenAI spans, as the GenAI semantic conventions name them
(docs/convert.md, the ``otel`` table): the answering span is the last model call
(``gen_ai.operation.name`` ``chat``, ``text_completion`` or ``generate_content``, by end
time) whose ``gen_ai.output.messages`` hold text; its ``gen_ai.system_instructions``,
``gen_ai.input.messages`` and output are the transcript (attributes on the span, as a JSON
string or structured, or on its ``gen_ai.client.inference.operation.details`` event), read
by ``chat.transcript`` like an OpenAI chat: ``input`` the last user message with text,
``output`` the answer, tool calls joined with their results into tool events. A tool call's
status is its ``execute_tool`` span's (``gen_ai.tool.call.id``; status ERROR is a failure,
the status message or ``error.type`` its error), else ``--tool-failure-when`` on its result.
``metadata.otel`` holds the trace and span ids, the answering span's name and attributes
(but the messages), the root span's name and attributes, the resource's attributes and the
instrumentation scope. A trace without any GenAI span is blank (nothing of a model call in
it); one whose model calls never answered with text is rejected with a sentence.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from evalstream._convert import chat, depth
from evalstream._convert.formats.base import FirstLine, Format, Given, Source
from evalstream._convert.rows import Built, CasePath, Notes, Row, RowProblem, type_word

INFERENCE = ("chat", "text_completion", "generate_content")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
MESSAGE_KEYS = ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages")
STATUS_ERROR = 2  # OTLP's STATUS_CODE_ERROR
CAPTURE = ("record message content on spans: for opentelemetry-instrumentation-openai-v2, "
           "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental and "
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT)")


def _open(given: Given) -> Source:
    from evalstream._convert.tables import jsonl_rows

    rows = traces(jsonl_rows(given.stream(), given.max_line_bytes))
    rules = given.rules
    with_id = given.id_from is None  # else the run makes each id from the trace's fields

    def build_trace(values: dict[str, Any], notes: Notes) -> Built:
        return build(values, notes, rules, with_id)

    if with_id:
        return Source(rows, build_trace, None, "the trace id", own_ids=True)
    return Source(rows, build_trace, None, given.ids_from)


def _looks_like_otlp(head: bytes) -> bool:
    first = head.lstrip()[:200]
    return first.startswith(b"{") and b'"resourceSpans"' in first[:40]


FORMAT = Format(
    "otel", "OpenTelemetry traces in OTLP JSON (a collector's file exporter): one case a "
    "trace, from its GenAI spans (gen_ai.* attributes and events)", _open,
    options=("id_from", "tool_failure_when"),
    refuses={"mapping": "otel has its own fixed mapping (see docs/convert.md)"},
    stream=True, suffixes=(".jsonl", ".json", ".ndjson", ""), kinds=("otel traces",),
    also=("jsonl",),  # JSONL: not named in a sentence about any JSONL file
    first_line=FirstLine(_looks_like_otlp, "an OTLP `resourceSpans` export"))


# -- lines -> traces -----------------------------------------------------------------------------
class _Trace:
    __slots__ = ("line", "spans", "root")

    def __init__(self, line: int) -> None:
        self.line = line  # where its first span is: the row's number
        self.spans: list[dict[str, Any]] = []
        self.root = False


def traces(lines: Iterator[Row]) -> Iterator[Row]:
    """The rows of a file of export requests: each trace (values: ``trace_id``, the flat
    attributes for ``--id-from`` templates, ``spans``), blank lines, and lines that are not
    traces (each a row with its problem)."""
    open_traces: dict[str, _Trace] = {}
    done: set[str] = set()  # trace ids already a row: a span of one after that is said
    for row in lines:
        if row.values is None:
            yield row
            continue
        spans = _spans(row)
        if isinstance(spans, RowProblem):
            yield Row(row.number, None, spans, raw=_raw(row.values))
            continue
        late: dict[str, list[dict[str, Any]]] = {}
        for span in spans:
            trace_id = span["traceId"]
            if trace_id in done:
                late.setdefault(trace_id, []).append(span)
                continue
            found = open_traces.get(trace_id)
            if found is None:
                found = open_traces[trace_id] = _Trace(row.number)
            found.spans.append(span)
            found.root = found.root or not span.get("parentSpanId")
        for trace_id, extra in late.items():
            yield Row(row.number, None, RowProblem(
                f"{len(extra)} span{'s' if len(extra) > 1 else ''} of trace {trace_id} came "
                "after its root span (an earlier line), whose trace was already a case: they "
                "are not in it. Export a trace's spans before its root span ends (one "
                "process's spans always are).", "traceId", "$.id", kind="late spans",
                case_id=trace_id), raw=_raw({"spans": extra}))
        for trace_id in [t for t, trace in open_traces.items() if trace.root]:
            done.add(trace_id)
            yield _row(trace_id, open_traces.pop(trace_id))
    for trace_id, trace in open_traces.items():
        yield _row(trace_id, trace)


def _raw(value: Any) -> bytes:
    import msgspec

    return msgspec.json.encode(value)[:8_000]


def _spans(row: Row) -> list[dict[str, Any]] | RowProblem:
    """The spans of one export request, each with its resource and scope; a RowProblem for a
    line that is not one."""
    values = row.values
    assert values is not None
    groups = values.get("resourceSpans")
    if not isinstance(groups, list):
        keys = ", ".join(f"`{k}`" for k in list(values)[:6]) or "none"
        return RowProblem(f"The line is not an OTLP traces export (its keys: {keys}); --from "
                          "otel reads the collector's traces (`resourceSpans`): GenAI content "
                          f"recorded as log events is not read, so {CAPTURE}.",
                          "resourceSpans", "$", kind="not traces")
    out = []
    for g, group in enumerate(groups):
        where = f"resourceSpans[{g}]"
        if not isinstance(group, dict):
            return RowProblem(f"`{where}` is {type_word(group)}, not an object.", where, "$",
                              kind="bad span")
        resource = attributes((group.get("resource") or {}).get("attributes"))
        for s, scoped in enumerate(group.get("scopeSpans") or []):
            scope = scoped.get("scope") if isinstance(scoped, dict) else None
            for k, span in enumerate(scoped.get("spans") or [] if isinstance(scoped, dict)
                                     else []):
                at = f"{where}.scopeSpans[{s}].spans[{k}]"
                if not isinstance(span, dict) or not isinstance(span.get("traceId"), str) \
                        or not span["traceId"]:
                    return RowProblem(f"`{at}` has no `traceId`: not an OTLP span.", at, "$",
                                      kind="bad span")
                out.append({**span, "traceId": _hex_id(span["traceId"]),
                            "resource": resource, "scope": scope or {}})
    return out


def _hex_id(value: str) -> str:
    """A trace id in hex, as OTLP JSON writes it (base64, as protobuf's generic JSON mapping
    writes bytes, is read too)."""
    text = value.lower()
    if len(text) == 32 and all(c in "0123456789abcdef" for c in text):
        return text
    try:
        return base64.b64decode(value, validate=True).hex()
    except ValueError:
        return value


def _row(trace_id: str, trace: _Trace) -> Row:
    """A trace as a row: its spans, and the flat fields ``--id-from`` templates name (the
    answering span's attributes, then the root span's, then the resource's); a trace with
    no GenAI attribute on any span is blank: nothing of a model call is in it."""
    if not any(key.startswith("gen_ai.") for span in trace.spans
               for key in attributes(span.get("attributes"))):
        return Row(trace.line, None, blank=True)
    answer = _answering(trace.spans) or {}
    root = next((s for s in trace.spans if not s.get("parentSpanId")), {})
    fields = {**(answer or root).get("resource", {}), **attributes(root.get("attributes")),
              **attributes(answer.get("attributes"))}
    flat = {k: v for k, v in fields.items() if isinstance(v, (str, int)) and k not in
            MESSAGE_KEYS}
    return Row(trace.line, {"trace_id": trace_id, **flat, "spans": trace.spans})


# -- a trace -> a case ---------------------------------------------------------------------------
def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP ``[{"key", "value": AnyValue}]`` as a plain dict."""
    if not isinstance(pairs, list):
        return {}
    return {p["key"]: any_value(p.get("value")) for p in pairs
            if isinstance(p, dict) and isinstance(p.get("key"), str)}


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as plain JSON: a string, a number (64-bit integers are written as
    strings), a boolean, a list, an object, bytes as their base64 text."""
    if not isinstance(value, dict) or not value:
        return None
    (kind, inner), = list(value.items())[:1]
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    if kind == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return attributes((inner or {}).get("values"))
    return inner  # stringValue, boolValue, doubleValue, bytesValue


def _operation(span: dict[str, Any]) -> Any:
    return attributes(span.get("attributes")).get("gen_ai.operation.name")


def _content(span: dict[str, Any]) -> dict[str, Any]:
    """The span's message attributes, from the span or its operation-details event."""
    found = {k: v for k, v in attributes(span.get("attributes")).items() if k in MESSAGE_KEYS}
    for event in span.get("events") or []:
        if isinstance(event, dict) and event.get("name") == DETAILS_EVENT:
            for k, v in attributes(event.get("attributes")).items():
                if k in MESSAGE_KEYS:
                    found.setdefault(k, v)
    return found


def _messages(value: Any, key: str) -> list[Any]:
    """A message attribute's list: structured, or the JSON text spans may hold."""
    if isinstance(value, str):
        try:
            value = depth.loads(value, f"The JSON text of `{key}`", key)
        except Exception as exc:  # msgspec.DecodeError: said in the sentence
            raise RowProblem(f"`{key}` is not valid JSON ({exc}).", key, "$.messages",
                             kind="bad message") from None
    if not isinstance(value, list):
        raise RowProblem(f"`{key}` is {type_word(value)}; the GenAI conventions write a list "
                         "of messages.", key, "$.messages", kind="bad message")
    return value


def _has_text(output: list[Any]) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "text" and str(p.get("content") or "")
               .strip() for m in output if isinstance(m, dict)
               for p in (m.get("parts") or []))


def _answering(spans: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last model call (by end time) whose output holds text, or None."""
    calls = sorted((s for s in spans if _operation(s) in INFERENCE),
                   key=lambda s: int(s.get("endTimeUnixNano") or 0))
    for span in reversed(calls):
        output = _content(span).get("gen_ai.output.messages")
        try:
            if output is not None and _has_text(_messages(output, "gen_ai.output.messages")):
                return span
        except RowProblem:
            return span  # its own sentence, when it is built
    return None


def build(values: dict[str, Any], notes: Notes, rules: list[chat.FailureRule],
          with_id: bool = True) -> Built:
    """A case from one trace (``values``: as ``traces`` yields them)."""
    spans: list[dict[str, Any]] = values["spans"]
    trace_id = values["trace_id"]
    case_id = trace_id if with_id else None
    answer = _answering(spans)
    if answer is None:
        calls = [s for s in spans if _operation(s) in INFERENCE]
        if calls and not any(_content(s) for s in calls):
            why = f"its model calls carry no messages (`gen_ai.input.messages`); {CAPTURE}"
        elif calls:
            why = "no model call in it answered with text (the last answered with tool calls)"
        else:
            why = "it has GenAI spans but no model call (`gen_ai.operation.name` chat)"
        raise RowProblem(f"The trace has no answer to take as `output`: {why}.",
                         "gen_ai.output.messages", "$.output", kind="no answer",
                         case_id=case_id)
    content = _content(answer)
    openai: list[dict[str, Any]] = []
    system = content.get("gen_ai.system_instructions")
    if system is not None:
        parts = _messages(system, "gen_ai.system_instructions")
        openai.append({"role": "system", "content": _text(parts, notes)})
    for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
        if key in content:
            openai += _to_openai(_messages(content[key], key), notes)
    statuses = _tool_statuses(spans)
    t = chat.transcript(openai, "messages", notes, rules, statuses)
    if t.output is None:  # _answering saw text: only a refusal-free empty answer gets here
        raise RowProblem("The answering span's output has no text.", "gen_ai.output.messages",
                         "$.output", kind="no answer", case_id=case_id)
    if t.input is None:
        raise RowProblem("No user message with text before the answer: nothing to take as "
                         "`input`.", "gen_ai.input.messages", "$.input", kind="no user turn",
                         case_id=case_id)
    case: dict[str, Any] = {"id": case_id} if with_id else {}
    case.update({"input": t.input, "output": t.output, "messages": t.messages})
    if t.tool_events:
        case["toolEvents"] = t.tool_events
    case["metadata"] = {"otel": _metadata(trace_id, answer, spans)}
    origin: dict[CasePath, str] = {("id",): "traceId"} if with_id else {}
    origin.update(t.origin)
    origin[("metadata",)] = "attributes"
    return Built(case, origin)


def _text(parts: list[Any], notes: Notes) -> str:
    """GenAI message parts as text: text parts joined by newlines, others by placeholders."""
    texts = []
    for part in parts:
        if not isinstance(part, dict):
            texts.append(str(part))
        elif part.get("type") == "text":
            texts.append(str(part.get("content") or ""))
        else:
            texts.append(chat.part_text({"type": part.get("type")}, notes))
    return "\n".join(texts)


def _to_openai(messages: list[Any], notes: Notes) -> list[dict[str, Any]]:
    """GenAI messages (``role``, ``parts``) as OpenAI chat messages, for ``chat.transcript``:
    text parts are the content, ``tool_call`` parts the tool calls, each
    ``tool_call_response`` part a ``tool`` message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)  # the transcript's own sentence
            continue
        parts = [p for p in (m.get("parts") or []) if isinstance(p, dict)]
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        calls = [p for p in parts if p.get("type") == "tool_call"]
        other = [p for p in parts if p.get("type") not in ("tool_call", "tool_call_response")]
        if responses:
            for p in responses:
                response = p.get("response")
                out.append({"role": "tool", "tool_call_id": p.get("id"),
                            "content": response if isinstance(response, str)
                            else _json(response)})
            if not other:
                continue
        message: dict[str, Any] = {"role": m.get("role"), "content": _text(other, notes)}
        if calls:
            message["tool_calls"] = [{"id": p.get("id"), "type": "function", "function": {
                "name": p.get("name"), "arguments": p.get("arguments")}} for p in calls]
        out.append(message)
    return out


def _json(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value).decode()


def _tool_statuses(spans: list[dict[str, Any]]) -> dict[str, str | None]:
    """Each tool call's outcome from its ``execute_tool`` span: None when it worked, else
    its error (the status message, else ``error.type``)."""
    found: dict[str, str | None] = {}
    for span in spans:
        attrs = attributes(span.get("attributes"))
        call_id = attrs.get("gen_ai.tool.call.id")
        if attrs.get("gen_ai.operation.name") != "execute_tool" or not isinstance(call_id, str):
            continue
        status = span.get("status") or {}
        if status.get("code") == STATUS_ERROR:
            found[call_id] = str(status.get("message") or attrs.get("error.type") or "error")
        else:
            found[call_id] = None
    return found


def _metadata(trace_id: str, answer: dict[str, Any], spans: list[dict[str, Any]]
              ) -> dict[str, Any]:
    root = next((s for s in spans if not s.get("parentSpanId")), None)
    out: dict[str, Any] = {
        "trace_id": trace_id, "span_id": answer.get("spanId"), "span": answer.get("name"),
        "attributes": {k: v for k, v in attributes(answer.get("attributes")).items()
                       if k not in MESSAGE_KEYS},
        "resource": answer.get("resource", {}), "scope": answer.get("scope", {}),
        "spans": len(spans), "model_calls": sum(_operation(s) in INFERENCE for s in spans)}
    if root is not None and root is not answer:
        out["root"] = {"span": root.get("name"), "attributes": attributes(root.get("attributes"))}
    return out
