"""Where a check's page is in an ``evalstream view`` export, so that ``agree`` and
``compare`` can link to it: ``checks/`` and the xxh3-128 of the key ``[case_id, rubric_id]``
as JSON. A hash, not the ids: case ids may hold characters a file system or a URL treats
specially (``%``, ``?``, ``#``, ``:``, any Unicode), and hashed names never clash on
case-insensitive or normalising file systems.
"""

from __future__ import annotations

import os

import msgspec
import xxhash

MARKER = "evalstream-view.json"  # the file that makes a folder a view export


def check_page(case_id: str, rubric_id: str) -> str:
    """The page of a check, relative to the export's folder."""
    key = msgspec.json.encode([case_id, rubric_id])
    return f"checks/{xxhash.xxh3_128_hexdigest(key)}.html"


def export_page(export: str, case_id: str, rubric_id: str) -> str | None:
    """The path of a check's page in the export folder ``export``, or None when the export
    does not hold it (it holds the first entries of each list only)."""
    path = os.path.join(export, check_page(case_id, rubric_id))
    return path if os.path.isfile(path) else None


def is_export(folder: str) -> bool:
    """Whether ``folder`` is a view export (it holds the marker file)."""
    return os.path.isfile(os.path.join(folder, MARKER))
