"""The corpus converters (../shared/corpus/convert_*.py) as oracles: the same small raw tables
go through the real converter script and through ``convert --map``, and the cases agree.

The raw tables are made here (nothing is copied from the corpus); the scripts write into a
temporary folder (their output folder is patched), never into the corpus.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.convert.support import convert, validate_accepts
from tests.helpers import CORPUS

pytestmark = pytest.mark.skipif(not (CORPUS / "convert_begin.py").is_file(),
                                reason=f"the shared corpus is not at {CORPUS}")


def _run_converter(name: str, raw: Path, out: Path, monkeypatch: pytest.MonkeyPatch
                   ) -> list[dict[str, Any]]:
    monkeypatch.syspath_prepend(str(CORPUS))
    common = importlib.import_module("corpus_common")
    monkeypatch.setattr(common, "CORPUS_DIR", str(out))
    module = importlib.import_module(f"convert_{name}")
    monkeypatch.setattr(sys, "argv", [f"convert_{name}.py", "--raw", str(raw)])
    module.main()
    return [json.loads(x) for x in (out / f"{name}.jsonl").read_text().splitlines()]


HALUEVAL = [
    {"ID": "1", "user_query": "Name three primary colours.", "chatgpt_response": "Red, yellow, blue.",
     "hallucination": "no", "hallucination_spans": []},
    {"ID": "2", "user_query": "Who wrote \"Hamlet\"?\nBe brief.", "chatgpt_response": "Charles Dickens, in 1850.",
     "hallucination": "yes", "hallucination_spans": ["Charles Dickens", "1850"]},
    {"ID": "3", "user_query": "Summarise, in one line:\tthe tides.", "chatgpt_response": "The moon pulls the sea. 🌊",
     "hallucination": "no", "hallucination_spans": []},
]
HALUEVAL_CMD = dict(
    format="jsonl", id_from="halueval.general.{ID}",
    maps=["input=user_query,output=chatgpt_response,expected.claim-support.status=hallucination",
          "metadata.source_row_id=ID,metadata.hallucination=hallucination",
          "metadata.hallucination_spans=hallucination_spans"],
    values=["expected.claim-support.status=yes:fail,no:pass"],
    sets=["expected.claim-support.source=human", "metadata.split=all",
          "metadata.source_dataset=HaluEval", "metadata.source_path=data/general_data.json"],
)


def test_halueval_general_by_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = tmp_path / "raw" / "halueval"
    raw.mkdir(parents=True)
    (raw / "general_data.json").write_text("".join(json.dumps(r) + "\n" for r in HALUEVAL))
    qa = {"knowledge": "K.", "question": "Q?", "right_answer": "R.", "hallucinated_answer": "H."}
    for part in ("qa_one-turn_data.json", "qa_multi-turn_data.json"):
        (raw / part).write_text(json.dumps(qa) + "\n")
    (tmp_path / "oracle").mkdir()
    oracle = [c for c in _run_converter("halueval", tmp_path / "raw", tmp_path / "oracle",
                                        monkeypatch) if ".general." in c["id"]]
    ours = convert(tmp_path, raw / "general_data.json", **HALUEVAL_CMD)
    validate_accepts(ours.out)
    assert len(ours.cases) == len(oracle) == 3
    for mine, theirs in zip(ours.cases, oracle, strict=True):
        assert {k: mine[k] for k in ("id", "input", "output", "expected")} == \
            {k: theirs[k] for k in ("id", "input", "output", "expected")}
        for key, value in mine["metadata"].items():
            assert theirs["metadata"][key] == value, key
    # What --map cannot reach: the source line number and the constant notes.
    assert set(oracle[0]["metadata"]) - set(ours.cases[0]["metadata"]) == {
        "scenario", "source_repo", "source_commit", "source_line", "label_note"}


BEGIN_HEADER = ["model_name", "data_source", "knowledge", "message", "response", "begin_label"]
BEGIN = [
    ["gpt2", "wow", "Paris is the capital of France.", "what 's the capital ?", "paris , i think .",
     "Fully attributable"],
    ["t5", "wow", "The Nile is long.", "tell me about rivers", "the amazon is the \"longest\" river .",
     "Not fully attributable"],
    ["doha", "wow", "Cats sleep a lot.", "do you like cats ?", "i do !", "Generic"],
]
BEGIN_CMD = dict(
    format="tsv", quoting=False, id_from="begin.{data_source}.dev.row-{#}",
    maps=["input=message,output=response,context=knowledge",
          "expected.claim-support.status=begin_label,metadata.response_model=model_name",
          "metadata.data_source=data_source,metadata.begin_label=begin_label"],
    values=["expected.claim-support.status=Fully attributable:pass,"
            "Not fully attributable:fail,Generic:"],
    sets=["expected.claim-support.source=human", "metadata.split=dev",
          "metadata.source_dataset=BEGIN", "metadata.source_path=wow/begin_dev_wow.tsv"],
)


def test_begin_by_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = tmp_path / "raw" / "begin"
    raw.mkdir(parents=True)
    table = "".join("\t".join(r) + "\n" for r in [BEGIN_HEADER, *BEGIN])
    for name in ("begin_dev_wow.tsv", "begin_test_wow.tsv", "begin_dev_cmu.tsv",
                 "begin_dev_tc.tsv"):
        (raw / name).write_text(table if name == "begin_dev_wow.tsv" else
                                "\t".join(BEGIN_HEADER) + "\n")
    (tmp_path / "oracle").mkdir()
    oracle = _run_converter("begin", tmp_path / "raw", tmp_path / "oracle", monkeypatch)
    ours = convert(tmp_path, raw / "begin_dev_wow.tsv", **BEGIN_CMD)
    validate_accepts(ours.out)
    assert len(ours.cases) == len(oracle) == 3
    for mine, theirs in zip(ours.cases, oracle, strict=True):
        assert {k: mine[k] for k in ("id", "input", "output", "context")} == \
            {k: theirs[k] for k in ("id", "input", "output", "context")}
        # "Generic" has no label: the corpus writes `expected: {}`, convert leaves it out.
        assert mine.get("expected", {}) == theirs["expected"]
        for key, value in mine["metadata"].items():
            assert theirs["metadata"][key] == value, key
    assert ours.report.labels == {"claim-support": {"absent": 1, "fail": 1, "pass": 1}}
