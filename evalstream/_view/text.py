"""Untrusted text as HTML: escaped, with invisible controls made visible, folded when long.

Everything a view page shows from a file (ids, messages, tool output, rationales, metadata)
was written by users, models, tools or scripts, so it goes through ``text`` or ``attr``
here and nowhere else. ``html.escape`` makes ``<``, ``>``, ``&`` and quotes inert; on top
of that, characters that change how neighbouring text is displayed or that cannot be seen
are shown as a marked code point (``U+202E``): bidirectional overrides and isolates (an
id could otherwise read backwards, or make a reviewer misread a verdict), C0 and C1
controls, line and paragraph separators, zero-width spaces and the byte order mark.
Joiners (U+200C, U+200D) are left alone: scripts and emoji need them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from html import escape
from typing import Any

FOLD = 2_000  # characters shown before the rest of a text folds under a <details>
EXCERPT = 200  # characters of a rationale or an error in a list row
_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f"
                     "\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
_NEWLINES = re.compile("[\r\n\t]+")


def _marked(match: re.Match[str]) -> str:
    ch = match[0]
    code = f"U+{ord(ch):04X}"
    name = unicodedata.name(ch, "control character")
    return f'<span class="ctl" title="{escape(name)}">{code}</span>'


def inline(value: str) -> str:
    """``value`` escaped for HTML, with hidden and direction-changing characters marked."""
    return _HIDDEN.sub(_marked, escape(value, quote=True))


def attr(value: str) -> str:
    """``value`` for an attribute (quoted by the caller with double quotes)."""
    return escape(value, quote=True)


def text(value: str, fold: int = FOLD, cut: int | None = None) -> str:
    """A block of text (line breaks kept, long words wrapped) for a ``div.text``.

    Past ``fold`` characters the rest is in a closed ``<details>``, so the page stays short
    and the whole text is still there. With ``cut`` (a record too large to show whole),
    text past it is left out and the block says how much.
    """
    shown, left_out = value, 0
    if cut is not None and len(value) > cut:
        shown, left_out = value[:cut], len(value) - cut
    if len(shown) <= fold:
        out = inline(shown)
    else:
        rest = len(shown) - fold
        out = (inline(shown[:fold]) + f'<details class="more"><summary>{rest:,} more '
               f"characters ({len(value):,} in all)</summary>{inline(shown[fold:])}</details>")
    if left_out:
        out += (f'<p class="cut">{left_out:,} more characters are not shown on this page (the '
                "record is too large to show whole); see the raw record.</p>")
    return out


def excerpt(value: str | None, size: int = EXCERPT) -> str:
    """The first ``size`` characters of ``value`` on one line, for a table cell."""
    if value is None:
        return '<span class="muted">-</span>'
    flat = _NEWLINES.sub(" ", value)
    more = "…" if len(flat) > size else ""
    return inline(flat[:size]) + more


def json_text(value: Any, fold: int = FOLD, cut: int | None = None) -> str:
    """A JSON value pretty-printed (two spaces) as a text block; strings as they are."""
    if isinstance(value, str):
        return text(value, fold, cut)
    return text(json.dumps(value, indent=2, ensure_ascii=False), fold, cut)


def plain(value: str, size: int | None = None) -> str:
    """``value`` as plain text (for a title or an option, escaped by the caller), hidden and
    direction-changing characters written as their code points, cut at ``size``."""
    out = _HIDDEN.sub(lambda m: f"U+{ord(m[0]):04X}", value)
    return out if size is None or len(out) <= size else out[:size - 1] + "…"
