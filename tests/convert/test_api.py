"""``evalstream.convert_cases``: the Python call the command makes."""

from __future__ import annotations

import json
from pathlib import Path

import evalstream
import evalstream._convert.run  # noqa: F401 - the package of that name must not hide the function
from tests.helpers import SAMPLES


def test_convert_from_python(tmp_path: Path) -> None:
    out = tmp_path / "qa-cases.jsonl"

    report = evalstream.convert_cases(SAMPLES / "qa.csv", out, id_from="id",
                                      maps=["input=question,output=answer,context=passage"])
    assert isinstance(report, evalstream.ConvertReport)
    assert (report.counts.rows, report.counts.cases, report.counts.rejected) == (4, 3, 1)
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["qa-1", "qa-2", "qa-3"]
    assert evalstream.validate(out).counts.rejected == 0
