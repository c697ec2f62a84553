"""Where the links of a view page go: the server's URLs, or the files of a static export.

Data never becomes a link target by itself: a case or rubric id only ever appears
percent-encoded in a query (server) or hashed into a file name (export), so no
``javascript:`` or other scheme can come from a file. An export links only to pages it
holds; anything else is shown as text.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from evalstream._verdicts.links import check_page
from evalstream._view.lists import Filters


class Links:
    """The server's links: relative paths from a page ``depth`` folders below the site's
    root. The server's root is a path holding its token (``/TOKEN/``), so a relative link
    carries the token without any page naming it."""

    forms = True  # filters are a form sent with GET

    def __init__(self, depth: int = 0) -> None:
        self.up = "../" * depth

    def at(self, depth: int) -> Links:
        """The same links from a page ``depth`` folders down."""
        return Links(depth)

    def home(self) -> str:
        return self.up or "./"

    def list(self, name: str, filters: Filters, page: int = 1) -> str | None:
        query = filters.items() + ([("page", str(page))] if page > 1 else [])
        return f"{self.up}list/{quote(name)}" + (f"?{urlencode(query)}" if query else "")

    def rejects(self, file: str | None = None, kind: str | None = None,
                page: int = 1) -> str | None:
        query = [(k, v) for k, v in (("file", file), ("kind", kind)) if v is not None]
        if page > 1:
            query.append(("page", str(page)))
        return f"{self.up}rejects" + (f"?{urlencode(query)}" if query else "")

    def check(self, case_id: str, rubric_id: str) -> str | None:
        return f"{self.up}check?" + urlencode([("case", case_id), ("rubric", rubric_id)])

    def raw(self, role: str, offset: int) -> str | None:
        return f"{self.up}raw/{quote(role)}/{offset}"


class ExportLinks(Links):
    """An export's links: relative file paths from a page ``depth`` folders down, to the
    pages the export holds."""

    forms = False

    def __init__(self, depth: int, checks: set[str], lists: dict[tuple[str, str, str], str],
                 rejects: dict[tuple[str, str], str]) -> None:
        super().__init__(depth)
        self.checks = checks  # file names (checks/HASH.html) of the check pages written
        self.lists = lists  # (list, dimension, value) -> file name; ("", "") for all
        self.reject_pages = rejects  # (dimension, value) -> file name

    def at(self, depth: int) -> ExportLinks:
        return ExportLinks(depth, self.checks, self.lists, self.reject_pages)

    def home(self) -> str:
        return self.up + "index.html"

    def list(self, name: str, filters: Filters, page: int = 1) -> str | None:
        chosen = filters.items()
        if page != 1 or len(chosen) > 1:
            return None
        dim, value = chosen[0] if chosen else ("", "")
        found = self.lists.get((name, dim, value))
        return None if found is None else self.up + found

    def rejects(self, file: str | None = None, kind: str | None = None,
                page: int = 1) -> str | None:
        if page != 1 or (file is not None and kind is not None):
            return None
        key: tuple[str, str] = (("file", file) if file is not None else
                                ("kind", kind) if kind is not None else ("", ""))
        found = self.reject_pages.get(key)
        return None if found is None else self.up + found

    def check(self, case_id: str, rubric_id: str) -> str | None:
        name = check_page(case_id, rubric_id)
        return self.up + name if name in self.checks else None

    def raw(self, role: str, offset: int) -> str | None:
        return None
