"""The README's screenshots of ``evalstream view``, made from the sample data in headless
Chromium: ``python -m tests.view.screenshots docs/`` (``tests/view/test_screenshots.py``
runs it too, into a temporary folder).

- ``view-list.png``: the disagreements list (server)
- ``view-filters.png``: every verdict, filtered by rubric and status with the form (server)
- ``view-check.png``: the check page of a missed fail (server)
- ``view-export.png``: a list of the static export, opened from file://
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from evalstream._cli import main as evalstream
from tests.browser import open_tab
from tests.helpers import ROOT
from tests.view.support import no_proxy, server

WIDTH, HEIGHT = 1200, 760
# Paths as a user types them in the repository (the pages show them).
VERDICTS, VERDICTS_B, CASES = (f"data/samples/{name}.jsonl"
                               for name in ("verdicts", "verdicts-b", "cases"))


def make(folder: Path) -> list[Path]:
    """Write the four screenshots into ``folder``; return their paths."""
    no_proxy()
    folder.mkdir(parents=True, exist_ok=True)
    shots = []
    with server(str(VERDICTS), "--cases", str(CASES), "--compare", str(VERDICTS_B)) as s:
        with open_tab(f"{s.base}list/disagreements", width=WIDTH, height=HEIGHT) as tab:
            shots.append(_save(tab.screenshot(), folder / "view-list.png"))
            tab.navigate(f"{s.base}list/verdicts")
            tab.follow("""(() => { const form = document.querySelector('form.filters');
              form.querySelector('select[name=rubric]').value = 'policy-compliance';
              form.querySelector('select[name=kind]').value = 'fail';
              form.submit(); })()""")
            shots.append(_save(tab.screenshot(), folder / "view-filters.png"))
            tab.navigate(f"{s.base}check?case=case-02&rubric=tool-backed-claims")
            shots.append(_save(tab.screenshot(), folder / "view-check.png"))
            assert tab.errors == [], tab.errors
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "review"
        here = Path.cwd()
        os.chdir(ROOT)
        try:
            assert evalstream(["view", VERDICTS, "--cases", CASES, "--compare", VERDICTS_B,
                               "--export", str(export), "-q"]) == 0
        finally:
            os.chdir(here)
        with open_tab(export / "lists" / "flips.html", width=WIDTH, height=HEIGHT) as tab:
            shots.append(_save(tab.screenshot(), folder / "view-export.png"))
            assert tab.errors == [], tab.errors
    return shots


def _save(png: bytes, path: Path) -> Path:
    path.write_bytes(png)
    return path


if __name__ == "__main__":
    for written in make(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(f"{written} ({written.stat().st_size:,} bytes)")
