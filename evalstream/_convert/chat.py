"""OpenAI chat transcripts -> case fields: messages, tool events, input and output.

Read the same way from every source that holds one: an ``openai-chat`` line
(``formats.openai_chat``), a table's ``messages`` column (``mapping``), an inspect_ai
sample's messages (``formats.inspect_log``). Rules (the ``openai-chat`` table of
docs/convert.md says the same):

- ``output`` is the last assistant message with text; ``input`` the last user message
  with text before it. ``messages`` is the whole transcript, in order.
- A message without an ``id`` gets ``m<position>`` (1-based); ``developer`` is read as
  ``system``; ``content: null`` is empty text.
- Content parts are joined with a newline; a part that is not text is named in the text
  by a placeholder (``[image: URL]``, ``[audio: wav, N bytes of base64]``, ``[file: NAME]``,
  ``[TYPE part]``) and counted in the report, never dropped.
- An assistant's ``tool_calls`` are written into its content, one line a call
  (``[tool call] NAME ARGUMENTS``), and joined with their ``tool`` results by
  ``tool_call_id`` into ``toolEvents``: ``id`` the call's id (else ``t<n>``), ``input`` the
  arguments (parsed when they are a JSON object or array), ``output`` the result (parsed
  likewise). The status comes from the failure rules (``--tool-failure-when``), never from
  a guess (or from the source's own record of the call: a trace's tool spans); a call
  without a result, or a result without a call, rejects the row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import msgspec

from evalstream._convert import depth
from evalstream._convert.rows import CasePath, Notes, RowProblem, type_word
from evalstream.errors import UsageError

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool"}
TOOL_CALL_PREFIX = "[tool call]"
_encode_json = msgspec.json.Encoder(order="sorted").encode


# -- tool failure rules ---------------------------------------------------------------------------
class FailureRule(NamedTuple):
    """When a tool result counts as a failure: ``text`` is the rule as the user wrote it."""

    text: str
    path: tuple[str | int, ...] | None  # a JSON path into the parsed result
    equals: Any  # with a path: the value that means failure (``_PRESENT``: any but null/false)
    pattern: Any  # else: an RE2 pattern searched in the result's text (``linear_regex``)


_PRESENT = object()
DEFAULT_FAILURE_RULE = "$.error"
_RULE_PATH = re.compile(r"\$((?:\.[A-Za-z_][\w-]*|\[\d+\])*)(?:\s*=\s*(.*))?\Z", re.S)
_RULE_PART = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")


def parse_failure_rules(texts: list[str]) -> list[FailureRule]:
    """Rules from ``--tool-failure-when`` (default ``$.error``); ``never`` means none."""
    rules = []
    for text in texts or [DEFAULT_FAILURE_RULE]:
        if text == "never":
            continue
        if text.startswith("re:"):
            from evalstream._checks.exact import linear_regex

            try:  # RE2: the result text is data, and may be long
                rules.append(FailureRule(text, None, None, linear_regex(text[3:])))
            except ValueError as exc:
                raise UsageError(f"--tool-failure-when {text!r}: the pattern {exc}") from None
            continue
        m = _RULE_PATH.match(text.strip())
        if m is None or not m[1]:
            raise UsageError(
                f"--tool-failure-when {text!r} is not a rule; give a JSON path into the tool "
                "result (`$.error`: present and not null or false), a path and a value "
                "(`$.status=error`), a pattern for the result text (`re:^Error:`), or `never`.")
        path = tuple(int(i) if i else name for name, i in _RULE_PART.findall(m[1]))
        equals: Any = _PRESENT
        if m[2] is not None:
            try:
                equals = msgspec.json.decode(m[2].strip())
            except msgspec.DecodeError:
                equals = m[2].strip()
        rules.append(FailureRule(text, path, equals, None))
    return rules


def tool_failure(rules: list[FailureRule], text: str, parsed: Any) -> str | None:
    """The error text when a result counts as a failure under ``rules``, else None."""
    for rule in rules:
        if rule.pattern is not None:
            if rule.pattern.search(text):
                return text
            continue
        assert rule.path is not None
        value = _at(parsed, rule.path)
        if value is _MISSING:
            continue
        if rule.equals is _PRESENT:
            if value is not None and value is not False:
                return value if isinstance(value, str) else _encode_json(value).decode()
        elif value == rule.equals and type(value) is type(rule.equals):
            return text
    return None


_MISSING = object()


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return _MISSING
    return value


# -- content ---------------------------------------------------------------------------------------
def content_text(content: Any, where: str, notes: Notes) -> str:
    """A message's content as text: parts joined by newlines, non-text parts named."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RowProblem(f"`{where}` is {type_word(content)}; message content must be a "
                         "string, a list of content parts or null.", where, kind="bad message")
    texts = []
    for k, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise RowProblem(f"`{where}[{k}]` is {type_word(part)}; a content part must be an "
                             "object with a `type`.", f"{where}[{k}]", kind="bad message")
        texts.append(part_text(part, notes))
    return "\n".join(texts)


def part_text(part: dict[str, Any], notes: Notes) -> str:
    """One content part (OpenAI's or inspect_ai's) as text; a placeholder when not text."""
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text") or "")
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return str(part["refusal"])
    name = kind if isinstance(kind, str) and kind else "untyped"
    if name in ("image_url", "image"):
        notes.add("placeholders", "image")
        inner = part.get(name)
        url = inner.get("url") if isinstance(inner, dict) else inner
        return f"[image: {_location(url)}]"
    if name in ("input_audio", "audio"):
        notes.add("placeholders", "audio")
        inner = part.get(name)
        if isinstance(inner, dict):  # OpenAI: {"data": base64, "format": "wav"}
            return f"[audio: {inner.get('format') or 'unknown format'}, " \
                   f"{len(str(inner.get('data') or '')):,} bytes of base64]"
        return f"[audio: {part.get('format') or 'unknown format'}, {_location(inner)}]"
    if name in ("file", "document"):
        notes.add("placeholders", "file")
        inner = part.get("file") if name == "file" else part
        label = None
        if isinstance(inner, dict):
            label = inner.get("filename") or inner.get("file_id")
            if label is None and isinstance(inner.get("document"), str):
                label = _location(inner["document"])
        return f"[file: {label or 'unnamed'}]"
    notes.add("placeholders", name)
    return f"[{name} part]"


def _location(url: Any) -> str:
    """A media reference as a placeholder shows it: a URL as it is, base64 data by size."""
    if not isinstance(url, str) or not url:
        return "no URL"
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        return f"{head.removeprefix('data:').split(';')[0] or 'data'}, " \
               f"{len(data):,} bytes of base64"
    return url


# -- transcripts -----------------------------------------------------------------------------------
class Transcript(NamedTuple):
    """Case fields taken from a transcript, and where each came from."""

    messages: list[dict[str, Any]]
    tool_events: list[dict[str, Any]]
    input: str | None
    output: str | None
    origin: dict[CasePath, str]


def arguments(value: Any, where: str) -> Any:
    """Tool-call arguments or a tool result (found at ``where`` in the row): parsed when a
    JSON object or array, else as is; a RowProblem when nested deeper than convert reads."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return depth.loads(value, f"The JSON text in `{where}`", where)
        except msgspec.DecodeError:
            return value
    return value


def transcript(messages: Any, source: str, notes: Notes, rules: list[FailureRule],
               outcomes: Mapping[str, str | None] | None = None) -> Transcript:
    """Convert OpenAI chat ``messages`` (found at ``source`` in the row) into case fields.
    ``outcomes``: tool calls whose outcome the source records apart (a trace's tool spans),
    by call id: None when the call worked, else its error; the rules decide the others."""
    if not isinstance(messages, list):
        raise RowProblem(f"`{source}` is {type_word(messages)}; it must be a list of chat "
                         "messages.", source, "$.messages", kind="bad message")
    out: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    pending: dict[str, tuple[dict[str, Any], str]] = {}
    origin: dict[CasePath, str] = {}
    answer = question = None
    own_texts: list[str] = []  # each message's own text, without its rendered tool calls
    for i, m in enumerate(messages):
        where = f"{source}[{i}]"
        if not isinstance(m, dict):
            raise RowProblem(f"`{where}` is {type_word(m)}; each message must be an object "
                             "with `role` and `content`.", where, f"$.messages[{i}]",
                             kind="bad message")
        role = ROLES.get(m.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise RowProblem(_role_sentence(m.get("role"), where), f"{where}.role",
                             f"$.messages[{i}].role", kind="bad role")
        if m["role"] != role:
            notes.add("roles_renamed", f"{m['role']} -> {role}")
        text = content_text(m.get("content"), f"{where}.content", notes)
        if role == "assistant" and not text and isinstance(m.get("refusal"), str):
            text = m["refusal"]
        own_text = text
        own_texts.append(own_text)
        if role == "assistant" and m.get("tool_calls"):
            text = _calls(m["tool_calls"], where, text, events, pending, origin, notes)
        elif role == "assistant" and m.get("function_call"):
            raise RowProblem(f"`{where}` uses the legacy `function_call`; write it as "
                             "`tool_calls` with a `tool` result message.",
                             f"{where}.function_call", kind="bad message")
        if role == "tool":
            _result(m, where, pending, rules, notes, outcomes or {})
        msg_id = m.get("id")
        if not isinstance(msg_id, str) or not msg_id:
            msg_id = f"m{i + 1}"
            notes.add("generated_ids", "messages")
        out.append({"id": msg_id, "role": role, "content": text})
        origin[("messages", i)] = where
        if role == "assistant" and own_text.strip():
            answer = i
    if pending:
        event, where = next(iter(pending.values()))
        raise RowProblem(f"The tool call `{event['id']}` (`{event['name']}`) in `{where}` has no "
                         "`tool` message with its result, so its status cannot be known; add "
                         "the result or drop the call.", where, kind="tool result missing")
    output = user = None
    if answer is not None:
        output = own_texts[answer]
        origin[("output",)] = f"{source}[{answer}].content"
        question = next((k for k in range(answer - 1, -1, -1)
                         if out[k]["role"] == "user" and out[k]["content"].strip()), None)
        if question is not None:
            user = out[question]["content"]
            origin[("input",)] = f"{source}[{question}].content"
    return Transcript(out, events, user, output, origin)


def _role_sentence(role: Any, where: str) -> str:
    if role == "function":
        return (f"`{where}` has the legacy role `function`; write it as a `tool` message with "
                "the `tool_call_id` of its call.")
    shown = repr(role) if isinstance(role, str) else type_word(role)
    return (f"`{where}.role` is {shown}; allowed roles are: system, developer (read as "
            "system), user, assistant, tool.")


def _calls(calls: Any, where: str, text: str, events: list[dict[str, Any]],
           pending: dict[str, tuple[dict[str, Any], str]], origin: dict[CasePath, str],
           notes: Notes) -> str:
    """Record an assistant's tool calls as pending events; its content with the calls."""
    if not isinstance(calls, list):
        raise RowProblem(f"`{where}.tool_calls` is {type_word(calls)}; it must be a list.",
                         f"{where}.tool_calls", kind="bad message")
    lines = [text] if text else []
    for c, call in enumerate(calls):
        at = f"{where}.tool_calls[{c}]"
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise RowProblem(f"`{at}` has no `function.name`; a tool call needs the name of "
                             "its tool.", at, kind="bad message")
        args = function.get("arguments") if isinstance(function, dict) else None
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"t{len(events) + 1}"
            notes.add("generated_ids", "tool_events")
        if call_id in pending:
            raise RowProblem(f"`{at}` repeats the tool call id {call_id!r} of a call still "
                             "waiting for its result.", f"{at}.id", kind="bad message")
        event = {"id": call_id, "name": name, "status": None,
                 "input": arguments(args, f"{at}.function.arguments")}
        shown = args if isinstance(args, str) else _encode_json(args).decode()
        lines.append(f"{TOOL_CALL_PREFIX} {name} {shown}")
        origin[("toolEvents", len(events))] = at
        events.append(event)
        pending[call_id] = (event, at)
    return "\n".join(lines)


def _result(m: dict[str, Any], where: str, pending: dict[str, tuple[dict[str, Any], str]],
            rules: list[FailureRule], notes: Notes,
            outcomes: Mapping[str, str | None]) -> None:
    call_id = m.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in pending:
        raise RowProblem(f"`{where}` is a tool result for {call_id!r}, which no earlier "
                             "assistant tool call has (or whose result was already given).",
                             f"{where}.tool_call_id", kind="tool call missing")
    event, _ = pending.pop(call_id)
    text = content_text(m.get("content"), f"{where}.content", Notes())
    parsed = arguments(text, f"{where}.content")
    event["output"] = parsed
    error = outcomes[call_id] if call_id in outcomes else tool_failure(rules, text, parsed)
    event["status"] = "success" if error is None else "failure"
    if error is not None:
        event["error"] = error
    notes.add("tool_events", event["status"])
