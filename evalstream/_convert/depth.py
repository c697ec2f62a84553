"""How deep a value from the source may nest, checked wherever JSON enters ``convert``.

msgspec stops near 1,000 levels, at a depth that depends on how deep the Python stack
already is, and a case is the source's value plus a few levels (``toolEvents[0].input``).
So ``convert`` reads values nested at most ``MAX_DEPTH`` levels, counting the row (or the
parsed JSON text) as level 1, far below msgspec's limit: every case it writes is read by
``validate`` on any stack, and a deeper row is a reject that names its row, its column and
the limit, in the same words for every source. A Parquet or Arrow column typed deeper is
refused before it is read (``tables.check_nesting``): Polars cannot read such types safely.

A deep value is found without recursion and without holding what lies below the limit: a
JSON array is built from ijson's parse events (``ijson.items`` keeps the prefix of every
enclosing level: memory the square of the depth, 2.2 GB at 30,000 levels), a decoded value
is walked with a stack of iterators.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from evalstream._cases.schema import key_path
from evalstream._convert.rows import RowProblem

# Levels a row or a parsed JSON text may nest: real data rarely passes 64; msgspec stops
# near 1,000 and Polars crashed (a Rust stack overflow) reading Parquet past ~370 here.
MAX_DEPTH = 256
Path = tuple[str | int, ...]
Events = Iterator[tuple[str, Any]]  # ijson.basic_parse's (event, value) pairs
_decode = msgspec.json.Decoder().decode
# Plain JSON values, and lists and objects of them: what most rows and JSON cells hold. A text
# decoded as one of these nests two levels at most, so the bound need not search it for
# brackets (``may_be_deeper``: ~1 us a text of 0.7-1 KB, as much as its decode); msgspec reads
# every JSON value alike under these types and as any value (tests/convert/test_depth.py and
# test_tables.py hold them equal), and a text they do not fit is decoded as any value.
Plain = str | int | float | bool | None
Shallow = Plain | list[Plain] | dict[str, Plain]
SHALLOW_TRIES = 64  # texts in a row the shallow type may miss before it is no longer tried


class ShallowFirst:
    """A decoder that reads each text as a shallow type first (``last`` is then the value),
    else as any value, with the errors of that. A miss (a deeper text) costs ~1.2 us more
    than reading it as any value at once, so after ``SHALLOW_TRIES`` misses in a row (a
    source of chats, or of nested cells) the shallow type is no longer tried."""

    __slots__ = ("_shallow", "_any", "tries", "last")

    def __init__(self, shallow: Callable[[Any], Any], any_value: Callable[[Any], Any]) -> None:
        self._shallow, self._any = shallow, any_value
        self.tries = SHALLOW_TRIES
        self.last: Any = None  # the last value read as the shallow type

    def __call__(self, text: bytes | str) -> Any:
        if self.tries:
            try:
                value = self._shallow(text)
            except (msgspec.DecodeError, RecursionError):
                self.tries -= 1
                return self._any(text)
            self.tries = SHALLOW_TRIES
            self.last = value
            return value
        return self._any(text)


_read = ShallowFirst(msgspec.json.Decoder(Shallow).decode, _decode)


class Deep:
    """A value read only down to the limit: where it first goes deeper, and what was read."""

    __slots__ = ("path", "partial")

    def __init__(self, path: Path, partial: Any) -> None:
        self.path, self.partial = path, partial


def deep_path(value: Any, limit: int = MAX_DEPTH) -> Path | None:
    """The path of the first array or object (depth first, in order) deeper than ``limit``
    levels, ``value`` itself being level 1; None when it nests no deeper."""
    if not isinstance(value, (dict, list, tuple)):
        return None
    stack: list[Iterator[tuple[Any, Any]]] = [_children(value)]
    keys: list[Any] = []
    while stack:
        for key, child in stack[-1]:
            if isinstance(child, (dict, list, tuple)):
                if len(stack) >= limit:
                    return (*keys, key)
                keys.append(key)
                stack.append(_children(child))
                break
        else:
            stack.pop()
            if keys:
                keys.pop()
    return None


def _children(value: Any) -> Iterator[tuple[Any, Any]]:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value)


def build(first: str, events: Events, limit: int = MAX_DEPTH, skip_rest: bool = True,
          ) -> Any:
    """The array or object that ``first`` (``start_map`` or ``start_array``) opens, built from
    the events that follow it, or a ``Deep`` at its first value deeper than ``limit`` levels
    (the rest of the value consumed unbuilt when ``skip_rest``)."""
    root: Any = {} if first == "start_map" else []
    stack: list[Any] = [root]
    keys: list[Any] = [None]  # the key of the value being read, for each object open
    for event, value in events:
        if event == "map_key":
            keys[-1] = value
            continue
        if event == "end_map" or event == "end_array":
            stack.pop()
            keys.pop()
            if not stack:
                return root
            continue
        top = stack[-1]
        if event == "start_map" or event == "start_array":
            if len(stack) >= limit:
                path = tuple(keys[i] if isinstance(c, dict) else len(c) - 1
                             for i, c in enumerate(stack[:-1]))
                path += (keys[-1] if isinstance(top, dict) else len(top),)
                if skip_rest:
                    _skip(events, len(stack) + 1)
                return Deep(path, root)
            value = {} if event == "start_map" else []
        if isinstance(top, list):
            top.append(value)
        else:
            top[keys[-1]] = value
        if event == "start_map" or event == "start_array":
            stack.append(value)
            keys.append(None)
    import ijson

    raise ijson.IncompleteJSONError("the JSON ends inside a value")  # ijson says it first


def elements(events: Events) -> Iterator[Any]:
    """The elements of the array whose ``start_array`` was just read, until its end: each
    scalar as it is, each array or object built by ``build`` (a ``Deep`` when too deep)."""
    for event, value in events:
        if event == "end_array":
            return
        if event == "start_map" or event == "start_array":
            value = build(event, events)
        yield value


def find_key(events: Events, key: str) -> tuple[str, Any] | None:
    """In the object whose ``start_map`` was just read, skip to the member ``key``: the
    event that starts its value and the value (a scalar's); None when there is none."""
    for event, name in events:
        if event == "end_map":
            return None
        first, value = next(events)
        if name == key:
            return first, value
        if first == "start_map" or first == "start_array":
            _skip(events, 1)
    return None


def member(events: Events, key: str) -> Any:
    """The value of the top-level member ``key`` of the JSON object ``events`` parse (built
    from the events, held to ``MAX_DEPTH``: a ``Deep`` deeper), None when it has none; the
    events stop there."""
    next(events)  # the object's start_map
    found = find_key(events, key)
    if found is None:
        return None
    first, value = found
    if first == "start_map" or first == "start_array":
        return build(first, events)
    return value


def _skip(events: Events, open_levels: int) -> None:
    """Consume events until ``open_levels`` open arrays and objects are closed."""
    for event, _ in events:
        if event == "start_map" or event == "start_array":
            open_levels += 1
        elif event == "end_map" or event == "end_array":
            open_levels -= 1
            if not open_levels:
                return


def path_in(data: bytes) -> Path:
    """Where the JSON text ``data`` (too deep for msgspec) first nests deeper than the limit;
    ``()`` when it cannot tell (the text is also malformed)."""
    import ijson

    events = ijson.basic_parse(io.BytesIO(data), use_float=True)
    try:
        event, _ = next(events)
        if event in ("start_map", "start_array"):
            found = build(event, events, skip_rest=False)
            if isinstance(found, Deep):
                return found.path
    except (ijson.JSONError, StopIteration):
        pass
    return ()


_FEW = 16  # brackets found one by one (memchr) before counting them all
_BRACKETS, _BRACKETS_TEXT = (ord("["), ord("{")), ("[", "{")  # ints: bytes.find takes them faster


def may_be_deeper(text: bytes | str, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON text may nest deeper than ``limit`` levels: it opens more than
    ``limit`` arrays and objects (each level opens one). Most rows open a few: those are
    found one by one by ``find`` (memchr, in C), at a fraction of a ``count`` of the whole
    text (a byte-by-byte loop: ~2 us a KB, more than the rest of a row's read); a text with
    more than ``_FEW`` is counted."""
    if len(text) <= 2 * limit:  # fewer characters than twice the limit cannot open deeper
        return False
    brackets: Any = _BRACKETS_TEXT if type(text) is str else _BRACKETS
    found, few = 0, min(_FEW, limit)  # (a limit under _FEW: found one by one up to it)
    for bracket in brackets:
        at = text.find(bracket)
        while at >= 0:
            found += 1
            if found > few:
                return sum(map(text.count, brackets)) > limit
            at = text.find(bracket, at + 1)
    return False


def loads(text: str, what: str, column: str | None) -> Any:
    """A JSON text from the source (a ``--parse-json`` cell, tool-call arguments, a tool
    result), decoded and held to ``MAX_DEPTH``: a RowProblem naming ``what`` and ``column``
    when it nests deeper; msgspec's DecodeError when it is not JSON."""
    try:
        value = _read(text)
    except RecursionError:
        raise too_deep(what, column, path_in(text.encode("utf-8", "surrogatepass"))) from None
    if value is _read.last:  # read as Shallow: two levels at most
        return value
    if may_be_deeper(text):  # most texts open too few arrays and objects: no walk
        path = deep_path(value)
        if path is not None:
            raise too_deep(what, column, path)
    return value


def too_deep(what: str, column: str | None, path: Path) -> RowProblem:
    """The row problem of a value nested deeper than ``MAX_DEPTH``: ``what`` says which value
    (``The row``, ``Column 'ctx' (--parse-json)``), ``path`` where it goes deeper."""
    where = f" (at `{path_text(path)}`)" if path else ""
    return RowProblem(f"{what} is nested more than {MAX_DEPTH:,} levels deep{where}; convert "
                      f"reads JSON nested at most {MAX_DEPTH:,} levels deep. Flatten the value, "
                      "or keep it as one JSON string.", column, kind="too deep")


def path_text(path: Path, limit: int = 80) -> str:
    """``("a", 0, 0)`` -> ``$.a[0][0]``, cut after ``limit`` characters (a path this deep
    repeats itself)."""
    out = "$"
    for part in path:
        out = f"{out}[{part}]" if isinstance(part, int) else key_path(out, part)
        if len(out) > limit:
            return f"{out[:limit]}..."
    return out


def row_problem(path: Path) -> RowProblem:
    """The problem of a row (a JSON element or line, a table row) nested too deep: its
    column is the row's key the path goes through."""
    column = path[0] if path and isinstance(path[0], str) else None
    return too_deep("The row", column, path)
