"""The case format (see ``benchmarks.spec``) as pydantic v2 models, for the pydantic baseline.

Kept apart from ``baselines`` so that the other baselines do not pay pydantic's import time.
Fields carry the judge-state name as their serialisation alias, so an output line is one
``Row(case_id=..., state=case).model_dump_json(by_alias=True, exclude_none=True,
exclude=ROW_EXCLUDE)``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchmarks.spec import LIST_CAP, SLUG_RUST, STR_CAP

Str = Annotated[str, Field(max_length=STR_CAP)]


class _Closed(BaseModel):
    """Base of every model: unknown keys are errors and nothing is coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Message(_Closed):
    id: Str
    role: Literal["system", "user", "assistant", "tool"]
    content: Str


class Passage(_Closed):
    id: Str
    text: Str


class ToolEvent(_Closed):
    id: Str
    name: Str
    status: Literal["success", "failure"]
    input: Any = None
    output: Any = None
    error: Str | None = None


class Label(_Closed):
    status: Literal["pass", "fail", "na"]
    source: Literal["synthetic", "human", "imported"]


class Metadata(_Closed):
    scenario: Str | None = None
    split: Str | None = None


class Case(_Closed):
    id: Annotated[str, Field(max_length=STR_CAP, pattern=SLUG_RUST)]
    input: Str = Field(serialization_alias="user_input")
    output: Str = Field(serialization_alias="assistant_response")
    messages: Annotated[list[Message], Field(max_length=LIST_CAP)] | None = Field(
        None, serialization_alias="conversation"
    )
    context: Annotated[list[Passage], Field(max_length=LIST_CAP)] | None = Field(
        None, serialization_alias="reference_material"
    )
    policy: Str | None = None
    tool_events: Annotated[list[ToolEvent], Field(max_length=LIST_CAP)] | None = Field(
        None, alias="toolEvents", serialization_alias="tool_events"
    )
    metadata: Metadata | None = None
    expected: dict[Str, Label] | None = None


class Row(BaseModel):
    """One output line: the case id and the case, of which only the state fields are dumped."""

    case_id: str
    state: Case


ROW_EXCLUDE = {"state": {"id", "metadata", "expected"}}
