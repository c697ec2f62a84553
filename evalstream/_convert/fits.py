"""Whether a case dict convert built is one the case decoder accepts, told without decoding it.

``convert`` guarantees that ``validate`` accepts every case it writes. It used to decode each
line it had just encoded with the case decoder (``schema.decoder``) to know that: ~3 us a
row, a tenth of a table row's conversion. ``fits`` answers the same question on the dict
before it is encoded, for the shapes a table row makes (text fields, passages, messages,
flat or nested metadata of plain values, labels), by the rules of ``schema.Case``: the fields
it knows, their types, the caps (``MAX_TEXT_CHARS`` a text, ``MAX_ITEMS`` items, the id
rule), and item ids unique within their list (``schema.duplicate_item_id``).

It only ever says yes for a case the decoder accepts; anything it does not recognise
(tool events, lists or deep objects in metadata, a value of another type, a cap passed) is a
no, and the run then decodes the line as before, so a reject's sentence is the decoder's own
(``tests/convert/test_fits.py`` holds both halves: every case ``fits`` passes is decoded
without error and without a repeated item id, and the rows it sends to the decoder are
rejected with the same sentences as before).
"""

from __future__ import annotations

from typing import Any, get_args

from evalstream._cases.schema import (
    MAX_ID_CHARS,
    MAX_ITEMS,
    MAX_TEXT_CHARS,
    LabelSource,
    LabelStatus,
    Role,
    is_id,
)

# The schema's own literals, so that a role or status it drops is refused here too.
_ROLES = frozenset(get_args(Role))
_STATUSES = frozenset(get_args(LabelStatus))
_SOURCES = frozenset(get_args(LabelSource))
# Metadata values written as they are read: decoded by the decoder's `Any` to the same
# value, whatever their content (ints only within 64 bits: msgspec's range).
_PLAIN = (str, bool, float, type(None))
_INT_LOW, _INT_HIGH = -(1 << 63), 1 << 64
_RUBRICS: set[str] = set()  # rubric ids found valid (is_id), kept for the next rows
_METADATA_DEPTH = 33  # metadata.KEY nests at most 32 keys (mapping.MAX_METADATA_KEYS)


def fits(case: dict[str, Any]) -> bool:
    """Whether the case decoder accepts ``case`` encoded, with no repeated item id; False
    also for a case it may accept but ``fits`` does not check (it is then decoded)."""
    # Each field the case may have, looked up once (a loop over the keys measured ~1 us a
    # case more); a key counted by none of them (tool events, a field the case does not
    # have, a null) leaves the count short of the dict's size: a no.
    case_id, given, answer = case.get("id"), case.get("input"), case.get("output")
    if type(case_id) is not str or not is_id(case_id) or type(given) is not str \
            or len(given) > MAX_TEXT_CHARS or type(answer) is not str \
            or len(answer) > MAX_TEXT_CHARS:
        return False
    known = 3
    policy = case.get("policy")
    if policy is not None:
        if type(policy) is not str or len(policy) > MAX_TEXT_CHARS:
            return False
        known += 1
    context = case.get("context")
    if context is not None:
        if not _items(context, "text", None):
            return False
        known += 1
    messages = case.get("messages")
    if messages is not None:
        if not _items(messages, "content", "role"):
            return False
        known += 1
    metadata = case.get("metadata")
    if metadata is not None:
        if type(metadata) is not dict or not _plain_object(metadata, _METADATA_DEPTH):
            return False
        known += 1
    expected = case.get("expected")
    if expected is not None:
        if not _labels(expected):
            return False
        known += 1
    return known == len(case)


def _items(value: Any, text: str, role: str | None) -> bool:
    """A list of passages (``{id, text}``) or messages (``{id, role, content}``): within the
    item cap, each item of exactly those keys, within caps, ids unique."""
    if type(value) is not list or len(value) > MAX_ITEMS:
        return False
    size = 2 if role is None else 3
    ids = set()
    for item in value:
        if type(item) is not dict or len(item) != size:
            return False
        item_id, body = item.get("id"), item.get(text)
        if type(item_id) is not str or not 0 < len(item_id) <= MAX_ID_CHARS \
                or type(body) is not str or len(body) > MAX_TEXT_CHARS:
            return False
        if role is not None:
            said = item.get(role)
            if type(said) is not str or said not in _ROLES:
                return False
        ids.add(item_id)
    return len(ids) == len(value)


def _plain_object(value: dict[Any, Any], levels: int) -> bool:
    """An object of string keys whose values are plain (text, numbers, true, false, null) or
    such objects, nested at most ``levels`` deep, every key and text within the text cap."""
    if levels == 0:
        return False
    for key, item in value.items():
        # Strings and keys within the text cap (validate's ``schema.long_nested_text``).
        if type(key) is not str or len(key) > MAX_TEXT_CHARS:
            return False
        kind = type(item)
        if kind in _PLAIN:
            if kind is str and len(item) > MAX_TEXT_CHARS:
                return False
            continue
        if kind is int:
            if not _INT_LOW <= item < _INT_HIGH:
                return False
        elif kind is not dict or not _plain_object(item, levels - 1):
            return False
    return True


def _labels(value: Any) -> bool:
    """``expected``: at most ``MAX_ITEMS`` labels under rubric ids, each exactly a status and a
    source of the allowed words."""
    if type(value) is not dict or len(value) > MAX_ITEMS:
        return False
    for rubric, label in value.items():
        if type(rubric) is not str or type(label) is not dict or len(label) != 2:
            return False
        if rubric not in _RUBRICS:  # a table's labels name a few rubrics, row after row
            if not is_id(rubric):
                return False
            if len(_RUBRICS) < 1024:
                _RUBRICS.add(rubric)
        status, source = label.get("status"), label.get("source")
        if type(status) is not str or status not in _STATUSES or type(source) is not str \
                or source not in _SOURCES:
            return False
    return True
