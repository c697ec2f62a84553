"""The case: msgspec Structs for the wire format, with every cap enforced at decode."""


from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

MAX_TEXT_CHARS = 200_000
MAX_ITEMS = 500
MAX_ID_CHARS = 512
ID_PATTERN = r"^[^\s/]+\Z"  # \Z: `$` would accept a final newline

Text = Annotated[str, Meta(max_length=MAX_TEXT_CHARS)]
CaseId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
ItemId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)]
# A label's key names a rubric: the rubric-id rule, as verdicts' `rubric_id`.
RubricId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
Role = Literal["system", "user", "assistant", "tool"]
ToolStatus = Literal["success", "failure"]
LabelStatus = Literal["pass", "fail", "na"]
LabelSource = Literal["synthetic", "human", "imported"]
# Tool inputs and outputs are any JSON value; a string among them is still a text field.
ToolValue = Text | dict[str, Any] | list[Any] | int | float | bool | None

CASE_FIELDS = ("id", "input", "output", "messages", "context", "policy", "toolEvents",
               "metadata", "expected")
MESSAGE_FIELDS = ("id", "role", "content")
PASSAGE_FIELDS = ("id", "text")
TOOL_EVENT_FIELDS = ("id", "name", "status", "input", "output", "error")
LABEL_FIELDS = ("status", "source")


# gc=False: decoded cases hold no reference cycles, and msgspec then skips GC tracking.
class Message(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """One turn of the transcript."""

    id: ItemId
    role: Role
    content: Text


class Passage(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """One retrieved passage or piece of ground truth."""

    id: ItemId
    text: Text


class ToolEvent(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """One recorded tool call; ``input`` and ``output`` are any JSON value."""

    id: ItemId
    name: Text
    status: ToolStatus
    input: ToolValue = None
    output: ToolValue = None
    error: Text | None = None


class Label(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """A provisional expected verdict for one rubric, and where it came from."""

    status: LabelStatus
    source: LabelSource


class Case(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True,
           rename={"tool_events": "toolEvents"}):
    """One evaluation case (wire format camelCase: ``toolEvents``). ``None`` means absent."""

    id: CaseId
    input: Text
    output: Text
    messages: Annotated[list[Message], Meta(max_length=MAX_ITEMS)] | None = None
    context: Annotated[list[Passage], Meta(max_length=MAX_ITEMS)] | None = None
    policy: Text | None = None
    tool_events: Annotated[list[ToolEvent], Meta(max_length=MAX_ITEMS)] | None = None
    metadata: dict[str, Any] | None = None
    expected: Annotated[dict[RubricId, Label], Meta(max_length=MAX_ITEMS)] | None = None


# ``--allow-unknown-fields``: the same types, ignoring fields they do not know. Subclasses,
# so a lenient case is a ``Case`` too (msgspec fixes the unknown-field rule per class).
class _LenientMessage(Message, forbid_unknown_fields=False):
    pass


class _LenientPassage(Passage, forbid_unknown_fields=False):
    pass


class _LenientToolEvent(ToolEvent, forbid_unknown_fields=False):
    pass


class _LenientLabel(Label, forbid_unknown_fields=False):
    pass


class _LenientCase(Case, forbid_unknown_fields=False):
    # The item types narrowed to their lenient subclasses (lists are invariant for mypy).
    messages: Annotated[list[_LenientMessage], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]
    context: Annotated[list[_LenientPassage], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]
    tool_events: Annotated[list[_LenientToolEvent], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]
    expected: Annotated[dict[RubricId, _LenientLabel], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]


def decoder(allow_unknown_fields: bool = False) -> msgspec.json.Decoder[Case]:
    """A typed decoder for one case; build it once and reuse it."""
    return msgspec.json.Decoder(_LenientCase if allow_unknown_fields else Case)


def duplicate_item_id(case: Case) -> tuple[str, str] | None:
    """The JSON path and value of the first repeated message, passage or tool-event id."""
    # Runs for every case: the set is built in C (measured 1.5 -> 1.15 us a case).
    for field, items in (("messages", case.messages), ("context", case.context),
                         ("toolEvents", case.tool_events)):
        if items and len(items) > 1 and len(set(map(_ID, items))) < len(items):
            return _first_repeat(field, items)
    return None


_ID = attrgetter("id")


def _first_repeat(field: str, items: list[Any]) -> tuple[str, str]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.id in seen:
            return f"$.{field}[{i}].id", item.id
        seen.add(item.id)
    raise AssertionError("no repeated id")  # only called when the ids repeat
