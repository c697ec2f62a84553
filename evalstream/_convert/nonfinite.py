"""``NaN``, ``Infinity`` and ``-Infinity`` in JSON text, as Python's ``json`` (and pydantic with
``ser_json_inf_nan="constants"``) writes them: inspect_ai writes ``"value": NaN`` for a score
it could not give (``Score.unscored()``: 61 of 101 samples of a real log).

They are not JSON, and neither msgspec nor ijson reads them: every such sample was rejected
as "JSON is malformed", and one in a ``.json`` log stopped the whole log. So the text is
rewritten first: each of the three literals found outside a string (strings are skipped whole,
however they are cut into blocks) becomes a marker string, which the JSON readers read as
any string; ``restore`` then turns the markers back into Python's floats (``nan``, ``inf``,
``-inf``) in the decoded value. A marker is a NUL and the literal (``"\\u0000NaN"``), which
real text practically never is; if a source holds one, it is read as the number, which for a
score means no label (never a wrong one).

Cost: text without the literals is not rewritten (``has_literal``, ``file_has_literal``: a
search in C); text with them is scanned with two regular expressions, a Python step a string.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any, BinaryIO

# What each literal becomes in the text (a JSON string), and back (a float).
_MARKER = {b"NaN": b'"\\u0000NaN"', b"Infinity": b'"\\u0000Infinity"',
           b"-Infinity": b'"\\u0000-Infinity"'}
_VALUE = {"\x00NaN": math.nan, "\x00Infinity": math.inf, "\x00-Infinity": -math.inf}
# Outside strings: the next string's opening quote, or a literal.
_NEXT = re.compile(rb'"|-?Infinity|NaN')
# Inside a string (its opening quote read): the text up to its closing quote, escapes read as
# pairs ("unrolled": linear, no backtracking); stops before a lone backslash at the end.
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)
# A block may end inside a literal ("-Infin"): outside strings only letters and `-` can start
# one, so a trailing run of them waits for the next block.
_TAIL = re.compile(rb"[-A-Za-z]{1,9}\Z")


def has_literal(data: bytes) -> bool:
    """Whether ``data`` may hold one of the literals (inside a string or not)."""
    return b"NaN" in data or b"Infinity" in data


def file_has_literal(path: str, block: int = 1 << 20) -> bool:
    """Whether the file at ``path`` may hold a literal: one pass in C-speed blocks, so that a
    file without any is read without the rewriter."""
    with open(path, "rb") as f:
        tail = b""
        while block_data := f.read(block):
            if has_literal(tail + block_data):
                return True
            tail = block_data[-8:]  # a literal cut by the block's end
    return False


def spelled(value: float) -> str:
    """How the source spelled a non-finite number: ``NaN``, ``Infinity``, ``-Infinity``."""
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def is_nonfinite(value: Any) -> bool:
    """Whether ``value`` is a float NaN or infinity (never a bool or an int)."""
    return isinstance(value, float) and not math.isfinite(value)


class Rewriter:
    """Rewrites JSON text block by block, remembering between blocks whether it is inside a
    string (and after a backslash) and holding back a literal cut by a block's end."""

    def __init__(self) -> None:
        self.in_string = False
        self.escaped = False  # the block ended on a backslash inside a string
        self.held = b""
        self.count = 0  # literals rewritten so far

    def feed(self, block: bytes, final: bool = False) -> bytes:
        """The rewritten text of ``block`` that is certain (a cut literal waits for more)."""
        data = self.held + block
        self.held = b""
        out: list[bytes] = []
        pos, end = 0, len(data)
        while pos < end:
            if self.in_string:
                if self.escaped:  # the escaped character that opened this block
                    self.escaped = False
                    out.append(data[pos:pos + 1])
                    pos += 1
                    continue
                stop = _STRING_REST.match(data, pos).end()  # type: ignore[union-attr]
                if stop < end and data[stop:stop + 1] == b'"':
                    out.append(data[pos:stop + 1])
                    pos = stop + 1
                    self.in_string = False
                    continue
                # The string goes on in the next block (maybe after a lone backslash here).
                out.append(data[pos:end])
                self.escaped = stop < end  # a backslash is the last byte
                pos = end
                continue
            found = _NEXT.search(data, pos)
            if found is None:
                rest = data[pos:]
                tail = None if final else _TAIL.search(rest)
                if tail is not None:
                    self.held = rest[tail.start():]
                    rest = rest[:tail.start()]
                out.append(rest)
                break
            start, stop = found.span()
            if found[0] == b'"':
                out.append(data[pos:stop])
                self.in_string = True
                pos = stop
                continue
            if stop == end and not final:  # `NaN` and `-Infinity` end here, `Infinity` may not
                out.append(data[pos:start])
                self.held = data[start:]
                break
            out.append(data[pos:start])
            out.append(_MARKER[found[0]])
            self.count += 1
            pos = stop
        return b"".join(out)


def rewrite(data: bytes) -> tuple[bytes, int]:
    """``data`` with the literals outside strings made markers, and how many there were."""
    if not has_literal(data):
        return data, 0
    rewriter = Rewriter()
    out = rewriter.feed(data, final=True)
    return out, rewriter.count


class RewrittenStream(io.RawIOBase):
    """A binary stream read through a ``Rewriter`` (for ijson, which reads blocks)."""

    def __init__(self, raw: BinaryIO, block: int = 1 << 16) -> None:
        self._raw, self._block = raw, block
        self._rewriter = Rewriter()
        self._pending = b""
        self._done = False

    @property
    def count(self) -> int:
        """Literals rewritten so far."""
        return self._rewriter.count

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            block = self._raw.read(self._block)
            self._done = not block
            self._pending = self._rewriter.feed(block, final=self._done)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


_BYTE = re.compile(r"\(byte (\d+)\)")


def in_original(message: str, rewritten: bytes) -> str:
    """A decoder's message about ``rewritten`` text with its ``(byte N)`` moved back to the
    original text: each marker is 8 bytes longer than its literal (``"\u0000`` and ``"``)."""
    def back(found: re.Match[str]) -> str:
        offset = int(found[1])
        head = rewritten[:offset]
        return f"(byte {offset - 8 * sum(head.count(m) for m in _MARKER.values())})"

    return _BYTE.sub(back, message)


def restore(value: Any) -> Any:
    """``value`` with every marker string made its float again (in place in lists and dicts,
    keys left as they are), walked with a stack: no recursion however deep."""
    if isinstance(value, str):
        return _VALUE.get(value, value)
    if not isinstance(value, (dict, list)):
        return value
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in list(pairs):
            if isinstance(child, str):
                if child in _VALUE:
                    item[key] = _VALUE[child]
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return value
