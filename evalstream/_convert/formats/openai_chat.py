"""``--from openai-chat``: JSONL, one OpenAI chat transcript a line (``messages``).

The transcript's rules (input, output, messages, tool events and their status) are
``chat``'s, shared with ``messages`` columns and inspect samples; a line's other keys go to
the case's metadata. Recognised among ``.jsonl``/``.ndjson`` files (and files without a
suffix) by its first line.
"""

from __future__ import annotations

from typing import Any

import msgspec

from evalstream._convert.chat import FailureRule, transcript
from evalstream._convert.formats.base import FirstLine, Format, Given, Source
from evalstream._convert.rows import OWN_ID, Built, Notes, RowProblem


def _open(given: Given) -> Source:
    from evalstream._convert.tables import jsonl_rows

    rows = jsonl_rows(given.stream(), given.max_line_bytes)
    rules = given.rules

    def build_line(values: dict[str, Any], notes: Notes) -> Built:
        return build(values, notes, rules, given.takes_own_id(values))

    return Source(rows, build_line, None, given.ids_from)


def _looks_like_chat(head: bytes) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    try:
        value = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return b'"messages"' in first[:4096]
    return isinstance(value, dict) and isinstance(value.get("messages"), list) \
        and "input" not in value


FORMAT = Format(
    "openai-chat", "JSONL, one OpenAI chat transcript a line (`messages`): input, output, "
    "messages and tool events taken from it", _open,
    options=("id_from", "tool_failure_when"),
    refuses={"mapping": "openai-chat has its own fixed mapping (see docs/convert.md)"},
    stream=True, suffixes=(".jsonl", ".ndjson", ""), kinds=("jsonl", "openai chat"),
    first_line=FirstLine(_looks_like_chat, "a `messages` transcript"))


# -- a whole line ----------------------------------------------------------------------------------
def build(values: dict[str, Any], notes: Notes, rules: list[FailureRule],
          own_id: bool = False) -> Built:
    """A case (without its id) from one line of OpenAI chat JSONL: ``messages`` and, in
    ``metadata``, every other key (a ``metadata`` object's keys at the top) but ``id`` when it
    is the case id (``own_id``)."""
    if "messages" not in values:
        keys = ", ".join(f"`{k}`" for k in list(values)[:8]) or "none"
        raise RowProblem(f"The line has no `messages` (its keys: {keys}); an OpenAI chat line "
                         "holds the transcript in `messages`.", "messages", "$.messages",
                         kind="no messages")
    t = transcript(values["messages"], "messages", notes, rules)
    if t.output is None:
        raise RowProblem("No assistant message with text: nothing to take as `output`; a line "
                         "must end its transcript with the assistant's answer.", "messages",
                         "$.output", kind="no answer")
    if t.input is None:
        raise RowProblem("No user message with text before the assistant's answer: nothing to "
                         "take as `input`.", "messages", "$.input", kind="no user turn")
    case: dict[str, Any] = {"input": t.input, "output": t.output, "messages": t.messages}
    if t.tool_events:
        case["toolEvents"] = t.tool_events
    metadata = other_keys(values, ("messages", OWN_ID) if own_id else ("messages",))
    if metadata:
        case["metadata"] = metadata
    origin = dict(t.origin)
    origin[("metadata",)] = "metadata"
    return Built(case, origin)


def other_keys(values: dict[str, Any], used: tuple[str, ...]) -> dict[str, Any]:
    """Every key not ``used``, for the case's metadata; a ``metadata`` object is spread."""
    meta = values.get("metadata")
    out: dict[str, Any] = dict(meta) if isinstance(meta, dict) else {}
    for key, value in values.items():
        if key in used or (key == "metadata" and isinstance(meta, dict)):
            continue
        if key in out:
            raise RowProblem(f"`{key}` is both a key of the line and of its `metadata`; "
                             "rename one, so neither is lost.", key, f"$.metadata.{key}",
                             kind="metadata clash")
        out[key] = value
    return out
