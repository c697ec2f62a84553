"""evalstream: turn LLM evaluation datasets of any size into exactly what each judge may see.

The Python API; the command line calls the same functions::

    import evalstream

    for item in evalstream.read_cases("data/samples/cases.jsonl"):
        if isinstance(item, evalstream.Reject):
            print(item.line, item.path, item.error)

    rubrics = evalstream.load_rubrics()            # the built-in set
    case = {"id": "c1", "input": "Book Thursday 2pm.", "output": "Booked!",
            "toolEvents": [{"id": "t1", "name": "book", "status": "failure"}]}
    for record in evalstream.judge_states([case], rubrics):
        print(record.rubric_id, record.exposure.shown)

    report = evalstream.build("data/samples/cases.jsonl", "states.jsonl", max_tokens=16_000)
    print(report.counts)

    verdicts = evalstream.judge("states.jsonl", "verdicts.jsonl", "gpt-4.1-mini")
    print(verdicts.by_status)                      # OPENAI_API_KEY from the environment

Every function takes typed keyword options, one per option of its command, and holds their
defaults (``evalstream._api``); the command line calls these functions. Every error
evalstream raises on purpose is an ``EvalstreamError``. Functions, records and reports are
imported when first used, so ``import evalstream`` stays cheap and a command loads only what it
calls.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evalstream._files.sniffed import Sniffed as _Sniffed
from evalstream._files.sniffed import install_way_in as _install_way_in
from evalstream._version import __version__

if TYPE_CHECKING:
    from evalstream._api.cases import build as build
    from evalstream._api.cases import convert as convert
    from evalstream._api.cases import convert_cases as convert_cases
    from evalstream._api.cases import count_tokens as count_tokens
    from evalstream._api.cases import judge_states as judge_states
    from evalstream._api.cases import load_rubrics as load_rubrics
    from evalstream._api.cases import read_cases as read_cases
    from evalstream._api.cases import rubrics as rubrics
    from evalstream._api.cases import validate as validate
    from evalstream._api.judging import JudgeRequest as JudgeRequest
    from evalstream._api.judging import batch_collect as batch_collect
    from evalstream._api.judging import batch_prepare as batch_prepare
    from evalstream._api.judging import batch_status as batch_status
    from evalstream._api.judging import batch_submit as batch_submit
    from evalstream._api.judging import judge as judge
    from evalstream._api.judging import judge_dry_run as judge_dry_run
    from evalstream._api.judging import judge_request as judge_request
    from evalstream._api.judging import judge_verdicts as judge_verdicts
    from evalstream._api.reports import agree as agree
    from evalstream._api.reports import agree_judges as agree_judges
    from evalstream._api.reports import compare as compare
    from evalstream._api.reports import panel_agreement as panel_agreement
    from evalstream._api.reports import read_report as read_report
    from evalstream._api.reports import render_stats as render_stats
    from evalstream._api.reports import stats as stats
    from evalstream._api.viewing import export_view as export_view
    from evalstream._api.viewing import serve_view as serve_view
    from evalstream._build.states import InvalidCaseError
    from evalstream._cases.rejects import Reject
    from evalstream._cases.schema import Case, Label, Message, Passage, ToolEvent
    from evalstream._checks.listing import RubricEntry
    from evalstream._checks.report import RunReport
    from evalstream._checks.rubrics import Rubric, RubricSet
    from evalstream._checks.state import CheckRecord, ExactVerdict, Exposure, Sizes, Tokens
    from evalstream._convert.report import ConvertReport
    from evalstream._judge.batch.remote import BatchSummary
    from evalstream._judge.batch.report import CollectReport, PrepareReport
    from evalstream._judge.dryrun import DryRun
    from evalstream._judge.report import JudgeReport
    from evalstream._judge.request import JudgeConfig
    from evalstream._stats.stats import DatasetStats
    from evalstream._verdicts.agree import AgreeReport
    from evalstream._verdicts.compare import CompareReport
    from evalstream._verdicts.judges import JudgesReport
    from evalstream._verdicts.panel import RubricPanel
    from evalstream._verdicts.records import JudgeVerdict
    from evalstream._view.export import ExportReport
    from evalstream.errors import (
        EvalstreamError,
        InputError,
        OutputError,
        RubricError,
        SetupError,
        UnknownOptionError,
        UsageError,
        WrongFileError,
    )

__all__ = [
    "__version__",
    # functions, named for their commands
    "read_cases", "load_rubrics", "rubrics", "judge_states", "count_tokens", "convert", "build",
    "validate", "stats", "render_stats", "read_report", "judge", "judge_dry_run",
    "judge_request", "batch_prepare", "batch_submit", "batch_status", "batch_collect", "agree",
    "agree_judges", "panel_agreement", "compare", "export_view", "serve_view",
    # the names before issue 24
    "convert_cases", "judge_verdicts",
    # records
    "Case", "Message", "Passage", "ToolEvent", "Label", "Reject", "Rubric", "RubricSet",
    "RubricEntry",
    "CheckRecord", "ExactVerdict", "Exposure", "Tokens", "Sizes", "JudgeConfig", "JudgeVerdict",
    "JudgeRequest",
    # reports
    "RunReport", "DatasetStats", "AgreeReport", "JudgesReport", "RubricPanel", "CompareReport",
    "ConvertReport",
    "JudgeReport", "DryRun", "PrepareReport", "CollectReport", "BatchSummary", "ExportReport",
    # errors
    "EvalstreamError", "UsageError", "UnknownOptionError", "RubricError", "InputError",
    "WrongFileError", "OutputError", "SetupError", "InvalidCaseError",
]

# Where each public name lives, imported on first use (PEP 562): ``import evalstream`` loads
# none of the API's modules, so a command pays only for what it calls (`evalstream build`
# never loads the judge's). mypy and dir() see them all, through the imports above and
# __all__.
_LAZY = {
    # functions, by family of commands
    **dict.fromkeys(["read_cases", "load_rubrics", "rubrics", "judge_states", "count_tokens",
                     "convert", "convert_cases", "build", "validate"], "evalstream._api.cases"),
    **dict.fromkeys(["judge", "judge_verdicts", "judge_dry_run", "judge_request",
                     "JudgeRequest", "batch_prepare", "batch_submit", "batch_status",
                     "batch_collect"], "evalstream._api.judging"),
    **dict.fromkeys(["stats", "render_stats", "read_report", "agree", "agree_judges",
                     "panel_agreement", "compare"], "evalstream._api.reports"),
    **dict.fromkeys(["export_view", "serve_view"], "evalstream._api.viewing"),
    # records, reports and errors
    "Case": "evalstream._cases.schema", "Message": "evalstream._cases.schema",
    "Passage": "evalstream._cases.schema", "ToolEvent": "evalstream._cases.schema",
    "Label": "evalstream._cases.schema", "Reject": "evalstream._cases.rejects",
    "Rubric": "evalstream._checks.rubrics", "RubricSet": "evalstream._checks.rubrics",
    "RubricEntry": "evalstream._checks.listing",
    "CheckRecord": "evalstream._checks.state", "ExactVerdict": "evalstream._checks.state",
    "Exposure": "evalstream._checks.state", "Tokens": "evalstream._checks.state",
    "Sizes": "evalstream._checks.state",
    "RunReport": "evalstream._checks.report", "DatasetStats": "evalstream._stats.stats",
    "AgreeReport": "evalstream._verdicts.agree", "CompareReport": "evalstream._verdicts.compare",
    "JudgesReport": "evalstream._verdicts.judges", "RubricPanel": "evalstream._verdicts.panel",
    "ConvertReport": "evalstream._convert.report",
    "JudgeConfig": "evalstream._judge.request", "JudgeVerdict": "evalstream._verdicts.records",
    "JudgeReport": "evalstream._judge.report", "DryRun": "evalstream._judge.dryrun",
    "PrepareReport": "evalstream._judge.batch.report",
    "CollectReport": "evalstream._judge.batch.report",
    "BatchSummary": "evalstream._judge.batch.remote",
    "ExportReport": "evalstream._view.export",
    "EvalstreamError": "evalstream.errors", "UsageError": "evalstream.errors",
    "RubricError": "evalstream.errors", "InputError": "evalstream.errors",
    "WrongFileError": "evalstream.errors", "OutputError": "evalstream.errors",
    "SetupError": "evalstream.errors", "UnknownOptionError": "evalstream.errors",
    "InvalidCaseError": "evalstream._build.states",
}


def _way_in(found: _Sniffed) -> str | None:
    """How a file of another format becomes cases, for the wrong-file sentence of any command:
    convert's registry of formats says (loaded only when a wrong file is met). Installed
    here, in the one module every process imports first, because the commands that say it
    (build, validate, stats, view) sit beside convert, and the sniffer below it."""
    from evalstream._convert.formats import way_in

    return way_in(found)


_install_way_in(_way_in)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evalstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


