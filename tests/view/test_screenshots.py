"""The README's screenshots are made by a script from the sample data: it runs, and each
image is a real page (not blank, not an error), small enough to commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import decode_png, require_chromium
from tests.helpers import ROOT
from tests.view.screenshots import make

pytestmark = pytest.mark.slow


def test_the_screenshot_script_makes_the_readme_images(tmp_path: Path) -> None:
    require_chromium()
    shots = make(tmp_path)
    assert [p.name for p in shots] == ["view-list.png", "view-filters.png", "view-check.png",
                                       "view-export.png"]
    readme = (ROOT / "README.md").read_text()
    view = (ROOT / "docs" / "view.md").read_text()
    for shot in shots:
        data = shot.read_bytes()
        width, height, rows = decode_png(data)
        assert (width, height) == (1200, 760)
        assert 20_000 < len(data) < 300_000
        assert len({row[x:x + 3] for row in rows[::20] for x in range(0, len(row), 60)}) > 10
        assert f"]({shot.name})" in view and (ROOT / "docs" / shot.name).is_file()
    assert "](docs/view-list.png)" in readme
