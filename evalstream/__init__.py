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

    report = evalstream.build("data/samples/cases.jsonl", "states.jsonl")
    print(report.counts)

    verdicts = evalstream.judge_verdicts("states.jsonl", "verdicts.jsonl", "gpt-4.1-mini")
    print(verdicts.by_status)                      # OPENAI_API_KEY from the environment

Every error evalstream raises on purpose is an ``EvalstreamError``. Names are imported when
first used, so ``import evalstream`` stays cheap.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from evalstream._files.sniffed import Sniffed as _Sniffed
from evalstream._files.sniffed import install_way_in as _install_way_in
from evalstream._version import __version__

if TYPE_CHECKING:
    from evalstream._build.states import InvalidCaseError
    from evalstream._cases.rejects import Reject
    from evalstream._cases.schema import Case, Label, Message, Passage, ToolEvent
    from evalstream._checks.report import RunReport
    from evalstream._checks.rubrics import Rubric, RubricSet
    from evalstream._checks.state import CheckRecord, ExactVerdict, Exposure, Sizes, Tokens
    from evalstream._convert.report import ConvertReport
    from evalstream._judge.batch.remote import BatchSummary
    from evalstream._judge.batch.report import CollectReport, PrepareReport
    from evalstream._judge.report import JudgeReport
    from evalstream._judge.request import JudgeConfig
    from evalstream._stats.stats import DatasetStats
    from evalstream._verdicts.agree import AgreeReport
    from evalstream._verdicts.compare import CompareReport
    from evalstream._view.export import ExportReport
    from evalstream.errors import (
        EvalstreamError,
        InputError,
        OutputError,
        RubricError,
        SetupError,
        UsageError,
        WrongFileError,
    )

__all__ = [
    "__version__",
    # functions
    "read_cases", "load_rubrics", "judge_states", "count_tokens", "build", "validate", "stats",
    "agree", "compare", "convert_cases", "judge_verdicts", "batch_prepare", "batch_submit",
    "batch_status", "batch_collect", "export_view", "serve_view",
    # records
    "Case", "Message", "Passage", "ToolEvent", "Label", "Reject", "Rubric", "RubricSet",
    "CheckRecord", "ExactVerdict", "Exposure", "Tokens", "Sizes", "JudgeConfig", "JudgeVerdict",
    # reports
    "RunReport", "DatasetStats", "AgreeReport", "CompareReport", "ConvertReport",
    "JudgeReport", "PrepareReport", "CollectReport", "BatchSummary", "ExportReport",
    # errors
    "EvalstreamError", "UsageError", "RubricError", "InputError", "WrongFileError",
    "OutputError", "SetupError", "InvalidCaseError",
]

_LAZY = {
    "Case": "evalstream._cases.schema", "Message": "evalstream._cases.schema",
    "Passage": "evalstream._cases.schema", "ToolEvent": "evalstream._cases.schema",
    "Label": "evalstream._cases.schema", "Reject": "evalstream._cases.rejects",
    "Rubric": "evalstream._checks.rubrics", "RubricSet": "evalstream._checks.rubrics",
    "CheckRecord": "evalstream._checks.state", "ExactVerdict": "evalstream._checks.state",
    "Exposure": "evalstream._checks.state", "Tokens": "evalstream._checks.state",
    "Sizes": "evalstream._checks.state",
    "RunReport": "evalstream._checks.report", "DatasetStats": "evalstream._stats.stats",
    "AgreeReport": "evalstream._verdicts.agree", "CompareReport": "evalstream._verdicts.compare",
    "ConvertReport": "evalstream._convert.report",
    "JudgeConfig": "evalstream._judge.request", "JudgeVerdict": "evalstream._verdicts.records",
    "JudgeReport": "evalstream._judge.report",
    "PrepareReport": "evalstream._judge.batch.report",
    "CollectReport": "evalstream._judge.batch.report",
    "BatchSummary": "evalstream._judge.batch.remote",
    "ExportReport": "evalstream._view.export",
    "EvalstreamError": "evalstream.errors", "UsageError": "evalstream.errors",
    "RubricError": "evalstream.errors", "InputError": "evalstream.errors",
    "WrongFileError": "evalstream.errors", "OutputError": "evalstream.errors",
    "SetupError": "evalstream.errors",
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
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)


def _checked(**values: Any) -> dict[str, Any]:
    """The named arguments of an API call, each by its rule (``evalstream._options``)."""
    from evalstream._options import check

    return {name: check(name, value) for name, value in values.items()}


def _path(name: str, value: Any) -> str:
    """A path argument (``input``, ``output``, ``folder``...), checked as a path."""
    from evalstream._options import check

    return str(check(name, value))


def _given(command: str, options_type: Any, given: dict[str, Any], *set_here: str,
             **rules: Any) -> dict[str, Any]:
    """The keyword options of ``command`` for its ``options_type`` (a dataclass), each
    checked by its rule (``evalstream._options``; ``rules`` where the command reads one
    otherwise): a bad value or an option the command does not take is a UsageError in the
    command line's words, never a stray TypeError or an empty result."""
    import dataclasses

    from evalstream._options import check

    fields = {f.name: f for f in dataclasses.fields(options_type) if f.name not in set_here}
    checked = {}
    for name, value in given.items():
        if name not in fields:
            from evalstream._cases.rejects import did_you_mean
            from evalstream.errors import UsageError

            raise UsageError(f"{command}() has no option {name!r}.{did_you_mean(name, fields)}"
                             f" Its options: {', '.join(sorted(fields))}.")
        # None passes where the option's default is None (not given: the command decides).
        checked[name] = check(name, value, fields[name].default is None, rules.get(name))
    return checked


def read_cases(source: str | os.PathLike[str] | Iterable[bytes | str], *,
               allow_unknown_fields: bool = False,
               max_line_bytes: int = 256 << 20) -> Iterator[Case | Reject]:
    """The cases of a JSONL file (a path, ``-`` for stdin, ``.gz``/``.zst``) or of lines given
    one by one, read exactly as ``build`` reads them: each line becomes a ``Case`` or a
    ``Reject`` (line, offset, id, JSON path, a sentence); blank lines are skipped."""
    from evalstream._cases.reading import read_cases as read

    return read(source, **_checked(allow_unknown_fields=allow_unknown_fields,
                                   max_line_bytes=max_line_bytes))


def load_rubrics(paths: Iterable[str | os.PathLike[str]] | None = None) -> RubricSet:
    """The rubrics of these TOML files, in order, or the built-in set when ``paths`` is None
    or empty. A file that cannot be used raises RubricError naming the file, rubric and key."""
    from evalstream._checks.rubrics import load_rubrics as load

    return load(_checked(paths=paths)["paths"] if paths else None)


def judge_states(cases: Iterable[Case | dict[str, Any]], rubrics: RubricSet | None = None,
                 max_tokens: int = 32_000, tokenizer: str = "o200k_base",
                 exact_tokens: bool = False) -> Iterator[CheckRecord | ExactVerdict]:
    """The records ``build`` writes for these cases (``Case`` structs or dicts in the wire
    format), in order; see ``evalstream._build.states.judge_states``."""
    from evalstream._build.states import judge_states as states
    from evalstream._checks.rubrics import RubricSet
    from evalstream.errors import UsageError

    if rubrics is not None and not isinstance(rubrics, RubricSet):
        raise UsageError(f"rubrics: {rubrics!r} is not a RubricSet; give "
                         "rubrics=evalstream.load_rubrics([...]) (or None: the built-in set).")
    given = _checked(max_tokens=max_tokens, tokenizer=tokenizer, exact_tokens=exact_tokens)
    return states(cases, rubrics, **given)


def count_tokens(text: str, tokenizer: str = "o200k_base") -> int:
    """The exact number of tokens of ``text`` in ``tokenizer`` (``o200k_base`` or
    ``cl100k_base``), as tiktoken's ``encode_ordinary`` counts them; nothing is downloaded."""
    from evalstream._checks.encodings import count

    return count(text, _checked(tokenizer=tokenizer)["tokenizer"])


Inputs = str | os.PathLike[str] | list[str | os.PathLike[str]]


def _inputs(input: Inputs) -> dict[str, Any]:
    """``input`` and ``inputs`` of the options: one path, glob or URL, or a list of them
    (read in order as one input)."""
    if isinstance(input, (list, tuple)):
        names = [_path("input", x) for x in input]
        return {"input": " ".join(names), "inputs": names if len(names) > 1 else []}
    return {"input": _path("input", input)}


def build(input: Inputs, output: str | os.PathLike[str], **options: Any) -> RunReport:
    """Run ``build``: judge states from ``input`` (a path, glob or URL, or a list of them) to
    ``output``, with the rejects and the run report beside it (or where ``rejects=`` and
    ``report=`` say). Options as the command's: ``rubric_files``, ``max_tokens``,
    ``tokenizer``, ``exact_tokens``, ``max_line_bytes``, ``allow_unknown_fields``,
    ``workers``, ``engine`` (``"local"`` or ``"dask"``), ``scheduler``. Returns the run
    report; files appear only if the whole run succeeds."""
    from evalstream._build.run import Options, run

    given = _given("build", Options, options, "input", "inputs", "output")
    report, _ = run(Options(**_inputs(input), output=_path("output", output),
                            **given))
    return report


def validate(input: Inputs, **options: Any) -> RunReport:
    """Run ``validate``: read and check the cases as ``build`` does, writing nothing but the
    files asked for (``rejects=``, ``report=``). Returns the run report."""
    from evalstream._build.run import Options, run

    report, _ = run(Options(**_inputs(input), **_given("validate", Options, options, "input",
                                                         "inputs", "output")))
    return report


def stats(path: Inputs, by: str | list[str] | None = None,
          **options: Any) -> DatasetStats:
    """What a dataset holds (``evalstream stats``): groups by the metadata keys ``by``
    (default ``scenario``), sizes, labels, checks, metadata keys. Options as
    ``evalstream._stats.stats.StatsOptions``."""
    from evalstream._stats.stats import StatsOptions, collect, parse_by

    # A list of keys is read as the command line's "a,b": one way to read them.
    keys = parse_by(",".join(_checked(by=by)["by"])) if by else ["scenario"]
    return collect(StatsOptions(**_inputs(path), by=keys,
                                **_given("stats", StatsOptions, options, "input", "inputs",
                                           "by")))


def agree(verdicts: str | os.PathLike[str], cases: str | os.PathLike[str],
          **options: Any) -> AgreeReport:
    """How well a judge's verdicts agree with the cases' expected labels (``evalstream
    agree``). Options as ``evalstream._verdicts.agree.AgreeOptions``."""
    from evalstream._options import ONE_KEY
    from evalstream._verdicts.agree import AgreeOptions, run

    given = _given("agree", AgreeOptions, options, "verdicts", "cases", by=ONE_KEY)
    return run(AgreeOptions(verdicts=_path("verdicts", verdicts), cases=_path("cases", cases),
                            **given))


def compare(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str],
            **options: Any) -> CompareReport:
    """What changed between two judge runs, pair by pair (``evalstream compare``). Options
    as ``evalstream._verdicts.compare.CompareOptions``."""
    from evalstream._verdicts.compare import CompareOptions, run

    given = _given("compare", CompareOptions, options, "run_a", "run_b")
    return run(CompareOptions(run_a=_path("run_a", run_a), run_b=_path("run_b", run_b), **given))


def convert_cases(input: str | os.PathLike[str], output: str | os.PathLike[str],
                  **options: Any) -> ConvertReport:
    """Run the ``convert`` command (``evalstream._convert`` is its package): cases at
    ``output`` from another format at ``input`` (OpenAI chats, tables, inspect_ai logs,
    Hugging Face datasets on disk), with the rejects and the report beside it. Options as the
    command's: ``format`` (``--from``), ``maps``, ``sets``, ``values``, ``id_from``,
    ``parse_json``, ``keep_unmapped``, ``tool_failure_when``, ``split``, ``separator``,
    ``quoting``, ``rejects``, ``report``, ``max_line_bytes``. Returns the report; files
    appear only if the whole run succeeds."""
    from evalstream._convert import Options, run

    given = _given("convert_cases", Options, options, "input", "output")
    report, _ = run(Options(input=_path("input", input), output=_path("output", output), **given))
    return report


def judge_verdicts(input: str | os.PathLike[str], output: str | os.PathLike[str], model: str,
                   *, provider: str = "openai", base_url: str = "",
                   temperature: float | None = 0.0, max_output_tokens: int = 1024,
                   **options: Any) -> JudgeReport:
    """Run ``judge`` (``evalstream._judge`` is its package): a verdict at ``output`` for every
    judge state of ``input`` (a ``build`` output), asked of ``model`` at ``provider``
    (``openai`` or ``anthropic``; ``base_url`` for any compatible server), with every answer
    kept in the store beside the output (``cache=`` to share one). The API key is read from
    the environment (``api_key_env=`` names the variable). Options as the command's:
    ``max_connections``, ``max_attempts``, ``timeout``, ``rpm``, ``tpm``, ``price_in``,
    ``price_out``, ``max_cost``, ``max_requests``, ``retry_unscored``, ``max_unscored_rate``,
    ``rejects``, ``report``, ``max_line_bytes``. Returns the report (``exit_code`` 3: stopped
    by a limit, run again to continue); files appear only if the whole run succeeds."""
    from evalstream._judge.live import Options, run

    given = _given("judge_verdicts", Options, options, "input", "output", "config")
    return run(Options(input=_path("input", input), output=_path("output", output),
                       config=_judge_config(model, provider, base_url, temperature,
                                            max_output_tokens), **given))


def _judge_config(model: str, provider: str, base_url: str, temperature: float | None,
                  max_output_tokens: int) -> Any:
    from evalstream._judge.providers import NAMES
    from evalstream._judge.request import JudgeConfig
    from evalstream._options import check, choice

    return JudgeConfig(**_checked(model=model, base_url=base_url,
                                  max_output_tokens=max_output_tokens),
                       provider=check("provider", provider, rule=choice(*NAMES)),
                       temperature=check("temperature", temperature, optional=True))


def batch_prepare(input: str | os.PathLike[str], folder: str | os.PathLike[str], model: str,
                  *, provider: str = "openai", base_url: str = "",
                  temperature: float | None = 0.0, max_output_tokens: int = 1024,
                  **options: Any) -> PrepareReport:
    """Run ``batch prepare``: request files for ``model`` at ``provider`` (``openai``: also
    vllm run-batch; ``anthropic``), a manifest, the rejects and the report in the new folder
    ``folder``, from the judge states of ``input``. Options as the command's:
    ``max_requests_per_file``, ``max_bytes_per_file``, ``only_missing``, ``cache``,
    ``max_line_bytes``."""
    from evalstream._judge.batch.prepare import Options, run

    given = _given("batch_prepare", Options, options, "input", "folder", "config")
    return run(Options(input=_path("input", input), folder=_path("folder", folder),
                       config=_judge_config(model, provider, base_url, temperature,
                                            max_output_tokens), **given))


def batch_submit(folder: str | os.PathLike[str], **options: Any) -> BatchSummary:
    """Run ``batch submit``: upload the request files of a prepared folder and create their
    batches (the key from the environment). Options: ``api_key_env``, ``timeout``,
    ``max_attempts``, ``resubmit_unconfirmed``."""
    from evalstream._judge.batch.remote import Options, submit

    return submit(Options(folder=_path("folder", folder),
                          **_given("batch_submit", Options, options, "folder")))


def batch_status(folder: str | os.PathLike[str], **options: Any) -> BatchSummary:
    """Run ``batch status``: each batch's state; the results of ended batches downloaded into
    ``folder/results/``. Options: ``wait``, ``poll``, ``download``, ``api_key_env``,
    ``timeout``, ``max_attempts``."""
    from evalstream._judge.batch.remote import Options, status

    return status(Options(folder=_path("folder", folder),
                          **_given("batch_status", Options, options, "folder")))


def batch_collect(folder: str | os.PathLike[str], output: str | os.PathLike[str],
                  results: Iterable[str | os.PathLike[str]] = (),
                  **options: Any) -> CollectReport:
    """Run ``batch collect``: a verdict at ``output`` for every judge state of the prepared
    ``folder``, from the result files (default ``folder/results/*.jsonl``), every answer kept
    in the live judge's store. Options as the command's: ``cache``, ``missing``,
    ``price_in``, ``price_out``, ``max_unscored_rate``, ``rejects``, ``report``,
    ``max_line_bytes``, ``force``. Returns the report (``exit_code`` 3: judge states still
    missing)."""
    from evalstream._judge.batch.collect import Options, run

    given = _given("batch_collect", Options, options, "folder", "output", "results")
    return run(Options(folder=_path("folder", folder), output=_path("output", output),
                       results=_checked(results=list(results) if isinstance(
                           results, (tuple, list)) else results)["results"], **given))


def _view_options(command: str, verdicts: str | os.PathLike[str],
                  cases: str | os.PathLike[str], options: dict[str, Any]) -> Any:
    from evalstream._checks.rubrics import load_rubrics as load
    from evalstream._options import ONE_KEY
    from evalstream._view.index import Options

    files = _checked(rubric_files=options.pop("rubric_files", []))["rubric_files"]
    given = _given(command, Options, options, "verdicts", "cases", "rubrics", by=ONE_KEY)
    return Options(verdicts=_path("verdicts", verdicts), cases=_path("cases", cases),
                   rubrics=load(files) if files else None, **given)


def export_view(verdicts: str | os.PathLike[str], cases: str | os.PathLike[str],
                folder: str | os.PathLike[str], *, limit: int = 100, force: bool = False,
                **options: Any) -> ExportReport:
    """Write the pages of ``evalstream view`` as a static folder (``--export``): the lists
    with their first ``limit`` entries, a page for each, from ``file://``. Options as the
    command's: ``states``, ``compare``, ``rubric_files``, ``max_tokens``, ``by``,
    ``max_line_bytes``, ``allow_unknown_fields``, ``keep_index``. Returns the report
    (``exit_code`` 1 when lines were rejected); the folder appears only if the whole export
    succeeds, and replaces only an earlier export holding nothing else (``force``: any
    folder without an input)."""
    from evalstream._view.run import export_view as export

    return export(_view_options("export_view", verdicts, cases, options), _path("folder", folder),
                  _checked(limit=limit)["limit"], force=force)


def serve_view(verdicts: str | os.PathLike[str], cases: str | os.PathLike[str], *,
               host: str = "127.0.0.1", port: int | None = None, open_browser: bool = True,
               **options: Any) -> int:
    """Serve the pages of ``evalstream view`` until Ctrl-C (then return 0); the address to
    open, with its access token, is printed on stderr. ``port`` None: the first free of
    8765-8774. Options as ``export_view``'s."""
    import sys

    from evalstream._view.run import serve_view as serve

    def announce(url: str) -> None:
        print(f"view: serving at {url}  (Ctrl-C stops it)", file=sys.stderr, flush=True)

    from evalstream._options import check

    given = _checked(host=host, open_browser=open_browser)
    return serve(_view_options("serve_view", verdicts, cases, options), given["host"],
                 check("port", port, optional=True), given["open_browser"], announce=announce)
