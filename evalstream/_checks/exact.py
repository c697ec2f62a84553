"""Exact rubrics: declarative conditions on recorded tool events, evaluated without a judge.

A condition is data from a rubric file, parsed into small objects; nothing in a
rubric file is ever executed. Each condition returns its truth and the indexes of
the tool events it read, which become the verdict's evidence.

Forms (TOML inline tables)::

    { called = "NAME" }                                  a tool named NAME was called
    { last_call = "NAME", status = "success" }           its last call succeeded ("failure": failed)
    { no_failed_calls = true }                           no tool call failed
    { last_call = "NAME", field = "input.slot", equals = VALUE }
    { last_call = "NAME", field = "error", matches = "REGEX" }   RE2 search on a string value
    { all = [ ... ] }   { any = [ ... ] }   { not = { ... } }

``field`` starts with ``input``, ``output`` or ``error`` and may be dotted to reach
inside objects (``input.slot.start``). A missing tool, call or field makes the
condition false.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Events = Sequence[Any]
Result = tuple[bool, frozenset[int]]
_NONE: frozenset[int] = frozenset()


class ConditionError(ValueError):
    """A `check` table in a rubric file is not a valid condition."""


class Condition:
    """Base of the condition forms."""

    def evaluate(self, events: Events) -> Result:
        raise NotImplementedError


@dataclass(frozen=True)
class Called(Condition):
    name: str

    def evaluate(self, events: Events) -> Result:
        read = frozenset(i for i, e in enumerate(events) if e.name == self.name)
        return bool(read), read


def _last(events: Events, name: str) -> int | None:
    for i in range(len(events) - 1, -1, -1):
        if events[i].name == name:
            return i
    return None


_MISSING = object()


def _field(event: Any, path: tuple[str, ...]) -> Any:
    value = getattr(event, path[0])
    for key in path[1:]:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return _MISSING if value is None else value


def _same(a: Any, b: Any) -> bool:
    # TOML `true` must not equal JSON `1`, nor `1` equal `1.0` silently differently typed.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


@dataclass(frozen=True)
class LastCall(Condition):
    name: str
    status: str | None = None
    field: tuple[str, ...] | None = None
    equals: Any = _MISSING
    matches: Any = None  # an RE2 pattern (``re2.compile``): ``search`` as in ``re``

    def evaluate(self, events: Events) -> Result:
        i = _last(events, self.name)
        if i is None:
            return False, _NONE
        event, read = events[i], frozenset((i,))
        if self.status is not None:
            return event.status == self.status, read
        assert self.field is not None
        value = _field(event, self.field)
        if self.matches is not None:
            return isinstance(value, str) and self.matches.search(value) is not None, read
        return value is not _MISSING and _same(value, self.equals), read


@dataclass(frozen=True)
class NoFailedCalls(Condition):
    def evaluate(self, events: Events) -> Result:
        return all(e.status != "failure" for e in events), frozenset(range(len(events)))


@dataclass(frozen=True)
class All(Condition):
    parts: tuple[Condition, ...]

    def evaluate(self, events: Events) -> Result:
        ok, read = True, set[int]()
        for part in self.parts:
            part_ok, part_read = part.evaluate(events)
            ok = ok and part_ok
            read |= part_read
        return ok, frozenset(read)


@dataclass(frozen=True)
class Any_(Condition):
    parts: tuple[Condition, ...]

    def evaluate(self, events: Events) -> Result:
        ok, read = False, set[int]()
        for part in self.parts:
            part_ok, part_read = part.evaluate(events)
            ok = ok or part_ok
            read |= part_read
        return ok, frozenset(read)


@dataclass(frozen=True)
class Not(Condition):
    part: Condition

    def evaluate(self, events: Events) -> Result:
        ok, read = self.part.evaluate(events)
        return not ok, read


MAX_DEPTH = 32  # nesting of all/any/not: far past any real check, well short of the stack


def parse(spec: Any, where: str = "check", depth: int = 0) -> Condition:
    """A condition from its TOML table; ConditionError names ``where`` and what is allowed."""
    if depth > MAX_DEPTH:
        raise ConditionError(f"`{where}` nests all/any/not more than {MAX_DEPTH} levels deep.")
    if not isinstance(spec, dict):
        raise ConditionError(f"`{where}` must be a table such as {{ called = \"NAME\" }}.")
    keys = set(spec)
    if keys in ({"all"}, {"any"}):
        (key,) = keys
        parts = spec[key]
        if not isinstance(parts, list) or not parts:
            raise ConditionError(f"`{where}.{key}` must be a non-empty list of conditions.")
        parsed = tuple(parse(p, f"{where}.{key}[{i}]", depth + 1) for i, p in enumerate(parts))
        return All(parsed) if key == "all" else Any_(parsed)
    if keys == {"not"}:
        return Not(parse(spec["not"], f"{where}.not", depth + 1))
    if keys == {"called"}:
        return Called(_name(spec["called"], f"{where}.called"))
    if keys == {"no_failed_calls"}:
        if spec["no_failed_calls"] is not True:
            raise ConditionError(f"`{where}.no_failed_calls` must be true.")
        return NoFailedCalls()
    if "last_call" in keys:
        return _parse_last_call(spec, where)
    raise ConditionError(
        f"`{where}` has keys {sorted(keys)}; a condition is one of: called, last_call (with "
        "status, or field with equals or matches), no_failed_calls, all, any, not.")


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConditionError(f"`{where}` must be a tool name (a non-empty string).")
    return value


def _parse_last_call(spec: dict[str, Any], where: str) -> LastCall:
    name = _name(spec["last_call"], f"{where}.last_call")
    rest = set(spec) - {"last_call"}
    if rest == {"status"}:
        if spec["status"] not in ("success", "failure"):
            raise ConditionError(f"`{where}.status` must be \"success\" or \"failure\".")
        return LastCall(name, status=spec["status"])
    if rest in ({"field", "equals"}, {"field", "matches"}):
        field = spec["field"]
        if not isinstance(field, str) or field.split(".")[0] not in ("input", "output", "error"):
            raise ConditionError(
                f"`{where}.field` must start with input, output or error (dotted to reach "
                "inside objects, e.g. \"input.slot\").")
        path = tuple(field.split("."))
        if "matches" in rest:
            return LastCall(name, field=path, matches=_regex(spec["matches"], f"{where}.matches"))
        return LastCall(name, field=path, equals=spec["equals"])
    raise ConditionError(
        f"`{where}` with last_call takes either `status`, or `field` with `equals` or "
        f"`matches`; it has {sorted(rest) or 'neither'}.")


def _regex(pattern: Any, where: str) -> Any:
    if not isinstance(pattern, str):
        raise ConditionError(f"`{where}` must be a regular expression (a string).")
    try:
        return linear_regex(pattern)
    except ValueError as exc:
        raise ConditionError(f"`{where}` {exc}") from None


def linear_regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2, which matches in time linear in the text: the text is
    data, and with Python's backtracking ``re`` the data alone made ``x.*y`` take 34.6 s on
    one 200 KB field within the caps. RE2 has no backreferences or lookaround: such a
    pattern is a ValueError (saying why) when the rubric file or option is read, never
    while reading cases. Used by exact rubrics and by convert's ``re:`` rules."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason comes back in the exception, said once below
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
    import re

    try:
        re.compile(pattern)
    except re.error:
        raise ValueError(f"is not a valid regular expression: {reason} ({pattern!r}).") from None
    raise ValueError(
        f"uses what RE2 cannot run: {reason} ({pattern!r}). Patterns are matched by RE2, in "
        "time linear in the text: no backreferences (\\1), no lookaround ((?=...), "
        "(?<!...)); rewrite the pattern without them.")


def evidence_ids(events: Events, read: frozenset[int]) -> list[str]:
    """The ids of the tool events read, in the order they were recorded."""
    return [events[i].id for i in sorted(read)]
