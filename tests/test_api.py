"""The public Python API, used as a notebook or a judge loop would: no CLI, files optional."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import xxhash

import evalstream
from tests.helpers import ROOT, SAMPLES


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in evalstream.__all__:
        value = getattr(evalstream, name)
        if callable(value) and not isinstance(value, type):
            assert value.__doc__, name
    with pytest.raises(AttributeError):
        evalstream.NoSuchThing  # noqa: B018


def test_every_public_name_is_lazy_and_seen_by_the_type_checker() -> None:
    # The three lists of the lazy API name the same names: __all__ (dir, `import *`), where
    # each is imported on first use, and the imports mypy reads (else `evalstream.X` is Any).
    import ast

    tree = ast.parse((ROOT / "evalstream" / "__init__.py").read_text())
    typed = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.If)
             for imp in node.body if isinstance(imp, ast.ImportFrom) for alias in imp.names}
    public = set(evalstream.__all__) - {"__version__"}
    assert set(evalstream._LAZY) == public
    assert typed == public


def test_import_is_cheap() -> None:
    # `python -m evalstream --help` imports the package: the API must not load its work, nor
    # its own modules (each loads when one of its names is first used: a command pays only
    # for the functions it calls).
    code = ("import sys, evalstream; heavy = {'msgspec', 'polars', 'rich', 'numpy', 'tiktoken'};"
            "print(sorted(heavy & set(sys.modules)), "
            "sorted(m for m in sys.modules if m.startswith('evalstream._api')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=True).stdout
    assert out.strip() == "[] []"


def test_every_public_name_is_listed_and_loaded_on_first_use() -> None:
    assert dir(evalstream) == sorted(evalstream.__all__)
    code = ("import sys, evalstream; before = 'evalstream._api.judging' in sys.modules;"
            "judge = evalstream.judge; print(before, 'evalstream._api.judging' in sys.modules,"
            " judge is evalstream.judge_verdicts, judge.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=True).stdout
    assert out.split() == ["False", "True", "True", "evalstream._api.judging"]


def test_read_cases_from_a_file_and_from_lines() -> None:
    items = list(evalstream.read_cases(SAMPLES / "bad.jsonl"))
    rejects = [i for i in items if isinstance(i, evalstream.Reject)]
    cases = [i for i in items if isinstance(i, evalstream.Case)]
    assert len(rejects) == 21 and len(cases) == 1
    assert rejects[0].line == 1 and rejects[0].path == "$"

    lines = ['{"id":"a","input":"i","output":"o"}', "", "nope\n",
             b'{"id":"a","input":"i","output":"o"}']
    got = list(evalstream.read_cases(lines))
    assert isinstance(got[0], evalstream.Case) and got[0].id == "a"
    assert [(r.line, r.path) for r in got[1:]] == [(3, "$"), (4, "$.id")]
    assert "already used on line 1" in got[2].error


def test_judge_states_match_what_build_writes(tmp_path: Path) -> None:
    cases = [json.loads(line) for line in (SAMPLES / "cases.jsonl").read_text().splitlines()]
    records = list(evalstream.judge_states(cases))
    written = (ROOT / "tests" / "golden" / "samples.states.jsonl").read_bytes().splitlines()
    assert [msgspec.json.encode(r) for r in records] == written
    judge = next(r for r in records if isinstance(r, evalstream.CheckRecord))
    assert xxhash.xxh3_128_hexdigest(bytes(judge.state)) == judge.state_hash
    assert set(msgspec.json.decode(judge.state)) == set(judge.exposure.shown)
    # Decoded cases give the same records as dicts.
    decoded = [c for c in evalstream.read_cases(SAMPLES / "cases.jsonl")]
    assert list(evalstream.judge_states(decoded)) == records


def test_judge_states_refuses_an_invalid_case_with_the_reject_sentence() -> None:
    with pytest.raises(evalstream.InvalidCaseError, match=r"`\$.input` must be a string"):
        list(evalstream.judge_states([{"id": "c1", "input": 5, "output": "o"}]))
    bad = {"id": "c2", "input": "i", "output": "o",
           "messages": [{"id": "m", "role": "user", "content": "a"},
                        {"id": "m", "role": "user", "content": "b"}]}
    with pytest.raises(evalstream.InvalidCaseError, match="repeats the message id") as caught:
        list(evalstream.judge_states([bad]))
    assert isinstance(caught.value, evalstream.EvalstreamError)
    assert caught.value.reject.path == "$.messages[1].id"


def test_load_rubrics_builtin_and_files() -> None:
    builtin = evalstream.load_rubrics()
    assert "claim-support" in builtin.ids
    mine = evalstream.load_rubrics([SAMPLES / "rubrics.toml"])
    assert mine.sources == (str(SAMPLES / "rubrics.toml"),)
    with pytest.raises(evalstream.RubricError):
        evalstream.load_rubrics([SAMPLES / "cases.jsonl"])
    records = list(evalstream.judge_states(
        [{"id": "c1", "input": "i", "output": "o", "context": [{"id": "p", "text": "t"}]}],
        mine, max_tokens=32_000))
    assert {r.rubric_id for r in records} <= set(mine.ids)


def test_build_validate_stats_agree_compare(tmp_path: Path) -> None:
    report = evalstream.build(SAMPLES / "cases.jsonl", tmp_path / "states.jsonl")
    assert report.counts.cases == 48 and report.exit_code == 0
    assert (tmp_path / "states.jsonl").read_bytes() == \
        (ROOT / "tests" / "golden" / "samples.states.jsonl").read_bytes()
    assert (tmp_path / "states.report.json").exists()

    checked = evalstream.validate(SAMPLES / "bad.jsonl")
    assert checked.counts.rejected == 21 and checked.exit_code == 1
    assert not list(tmp_path.glob("bad*"))  # validate writes nothing unless asked

    s = evalstream.stats(SAMPLES / "cases.jsonl", by="scenario,split")
    assert s.overview.cases == 48 and s.by == ["scenario", "split"]

    a = evalstream.agree(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl", by="scenario")
    assert a.by == "scenario" and a.verdicts.verdicts == a.verdicts.lines == 111
    assert {r.rubric for r in a.rubrics} <= set(evalstream.load_rubrics().ids)
    assert all(r.by_group for r in a.rubrics)
    c = evalstream.compare(SAMPLES / "verdicts.jsonl", SAMPLES / "verdicts-b.jsonl")
    assert c.summary.paired > 0 and c.run_a.path.endswith("verdicts.jsonl")

    with pytest.raises(evalstream.UsageError, match="build\\(\\) has no option 'no_such_option'"):
        evalstream.build(SAMPLES / "cases.jsonl", tmp_path / "x.jsonl", no_such_option=1)
    with pytest.raises(evalstream.UsageError):
        evalstream.build(SAMPLES / "cases.jsonl", SAMPLES / "cases.jsonl")


def test_batch_prepare_and_collect(tmp_path: Path) -> None:
    evalstream.build(SAMPLES / "cases.jsonl", tmp_path / "states.jsonl")
    prepared = evalstream.batch_prepare(tmp_path / "states.jsonl", tmp_path / "batch",
                                        "gpt-4.1-mini", max_requests_per_file=60)
    assert isinstance(prepared, evalstream.PrepareReport)
    assert (prepared.counts.judge_states, len(prepared.files), prepared.exit_code) == (236, 4, 0)
    # Results as the OpenAI Batch API writes them: every request answered `na`, which two of
    # the built-in rubrics do not allow (issue 25): those verdicts are unscored.
    answer = {"choices": [{"message": {"content": '{"status": "na", "reason": "n/a"}'},
                           "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    with open(tmp_path / "output.jsonl", "w") as out:
        for path in sorted((tmp_path / "batch").glob("requests-*.jsonl")):
            for line in path.read_text().splitlines():
                out.write(json.dumps({"custom_id": json.loads(line)["custom_id"], "response": {
                    "status_code": 200, "request_id": "req_1", "body": answer},
                    "error": None}) + "\n")
    collected = evalstream.batch_collect(tmp_path / "batch", tmp_path / "verdicts.jsonl",
                                         [tmp_path / "output.jsonl"], price_in=0.2,
                                         price_out=0.8)
    assert isinstance(collected, evalstream.CollectReport)
    assert collected.by_status["na"] + collected.by_status["unscored"] == 236
    assert collected.by_cause == {"na_not_allowed": collected.by_status["unscored"]} and \
        collected.by_status["na"] == 41 + 135 and collected.counts.exact_verdicts == 11
    assert collected.cost_usd == round((2360 * 0.2 + 472 * 0.8) / 1e6, 6)
    a = evalstream.agree(tmp_path / "verdicts.jsonl", SAMPLES / "cases.jsonl")
    assert a.verdicts.verdicts == 247
    with pytest.raises(evalstream.UsageError):
        evalstream.batch_prepare(tmp_path / "states.jsonl", tmp_path / "batch", "m")


def test_export_view(tmp_path: Path) -> None:
    report = evalstream.export_view(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl",
                                    tmp_path / "review", limit=5,
                                    compare=SAMPLES / "verdicts-b.jsonl")
    assert isinstance(report, evalstream.ExportReport) and report.exit_code == 0
    assert report.lists["disagreements"].entries == 8 and report.limit == 5  # with the na verdict (issue 25)
    assert (tmp_path / "review" / "index.html").is_file()
    assert len(list((tmp_path / "review" / "checks").iterdir())) == report.checks
    with pytest.raises(evalstream.UsageError, match="--limit: 0 must be positive"):
        evalstream.export_view(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl",
                               tmp_path / "other", limit=0)
    with pytest.raises(evalstream.RubricError):
        evalstream.export_view(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl",
                               tmp_path / "other", rubric_files=[SAMPLES / "cases.jsonl"])


# -- bad option values (issue 23, item 21) ------------------------------------------------------------
CASES = SAMPLES / "cases.jsonl"
VERDICTS = SAMPLES / "verdicts.jsonl"


def _calls(tmp: Path) -> dict[str, Any]:
    """Every API function, called with valid arguments and the options given."""
    return {
        "build": lambda **o: evalstream.build(CASES, tmp / "s.jsonl", **o),
        "validate": lambda **o: evalstream.validate(CASES, **o),
        "stats": lambda **o: evalstream.stats(CASES, **o),
        "agree": lambda **o: evalstream.agree(VERDICTS, CASES, **o),
        "compare": lambda **o: evalstream.compare(VERDICTS, SAMPLES / "verdicts-b.jsonl", **o),
        "convert_cases": lambda **o: evalstream.convert_cases(
            SAMPLES / "qa.csv", tmp / "c.jsonl", **{"maps": ["input=question,output=answer"],
                                                    **o}),
        "judge_states": lambda **o: list(evalstream.judge_states(
            [{"id": "c", "input": "i", "output": "o"}], **o)),
        "judge_verdicts": lambda **o: evalstream.judge_verdicts(
            tmp / "states.jsonl", tmp / "v.jsonl", "m", **o),
        "batch_prepare": lambda **o: evalstream.batch_prepare(
            tmp / "states.jsonl", tmp / "batch", "m", **o),
        "export_view": lambda **o: evalstream.export_view(VERDICTS, CASES, tmp / "view", **o),
        "batch_submit": lambda **o: evalstream.batch_submit(tmp / "batch", **o),
        "batch_status": lambda **o: evalstream.batch_status(tmp / "batch", **o),
    }


@pytest.mark.parametrize(("function", "options", "message"), [
    # The four of the issue: a stray TypeError or AttributeError, or nothing at all, before.
    ("build", {"rubric_files": "x.toml"}, "--rubrics: 'x.toml' is one path, not a list of "
                                          "paths; give rubric_files=['x.toml']."),
    # validate takes no rubrics (the old API took them and did nothing with them).
    ("validate", {"rubric_files": ["x.toml"]}, "validate() has no option 'rubric_files'."),
    ("stats", {"rubric_files": "x.toml"}, "--rubrics: 'x.toml' is one path"),
    ("export_view", {"rubric_files": "x.toml"}, "--rubrics: 'x.toml' is one path"),
    ("stats", {"by": ["scenario", None]}, "--by: item 2: None is not text."),
    # The command line's sentence, with the fix (the API said another before issue 24).
    ("stats", {"by": "scenario,,split"}, "--by 'scenario,,split': give metadata keys separated "
                                         "by commas, e.g. --by scenario,split"),
    ("agree", {"by": ["scenario", None]}, "--by: ['scenario', None] is a list, not text."),
    ("build", {"max_tokens": "32000"}, "--max-tokens: '32000' is text, not a whole number; "
                                       "give max_tokens=32000."),
    ("stats", {"max_tokens": "32000"}, "--max-tokens: '32000' is text, not a whole number"),
    ("build", {"max_tokens": -5}, "--max-tokens: -5 must be positive."),
    ("judge_states", {"max_tokens": -5}, "--max-tokens: -5 must be positive."),
    ("export_view", {"max_tokens": -5}, "--max-tokens: -5 must be positive."),
    # The same rules for every option of every function.
    ("judge_states", {"max_tokens": True}, "--max-tokens: True is true or false, not a whole"),
    ("judge_states", {"rubrics": ["r.toml"]}, "rubrics: ['r.toml'] is not a RubricSet"),
    ("build", {"workers": 0}, "--workers: 0 must be positive."),
    ("build", {"max_line_bytes": "256MiB"}, "--max-line-bytes: '256MiB' is text, not a size"),
    ("build", {"engine": "spark"}, "--engine: 'spark' is not one of local, dask."),
    ("build", {"exact_tokens": "yes"}, "--exact-tokens: 'yes' is text, not True or False."),
    ("build", {"max_token": 5}, "build() has no option 'max_token'. Did you mean `max_tokens`?"),
    ("batch_prepare", {"cache": "s.sqlite"}, "batch_prepare() has no option 'cache'. It is "
                                             "`store` now. Its options: "),
    # Another command's option: taken and ignored before issue 24.
    ("batch_submit", {"wait": True}, "batch_submit() has no option 'wait'."),
    ("batch_status", {"resubmit_unconfirmed": True}, "batch_status() has no option "
                                                     "'resubmit_unconfirmed'."),
    ("agree", {"confidence": 1.5}, "--confidence: 1.5 must be between 0 and 1 (e.g. 0.95)."),
    ("agree", {"max_ids": -1}, "--max-ids: -1 must be 0 or more."),
    ("compare", {"max_unscored_rate": 2}, "--max-unscored-rate: 2.0 must be between 0 and 1"),
    ("convert_cases", {"maps": "input=q"}, "--map: 'input=q' is one text, not a list; give "
                                           "maps=['input=q']."),
    ("convert_cases", {"parse_json": [""]}, "--parse-json: item 1: an empty value"),
    ("judge_verdicts", {"temperature": "hot"}, "--temperature: 'hot' is text, not a number."),
    ("judge_verdicts", {"max_connections": 0}, "--max-connections: 0 must be positive."),
    ("judge_verdicts", {"timeout": float("nan")}, "--timeout: nan must be a number above 0."),
    ("judge_verdicts", {"provider": "vertex"}, "--provider: 'vertex' is not one of openai"),
    ("batch_prepare", {"max_bytes_per_file": 0}, "--max-bytes-per-file: 0 must be a positive "
                                                 "size up to 4 EiB."),
    # The settings of issue 27's providers, and --max-wait: the same rules.
    ("judge_verdicts", {"max_wait": 0}, "--max-wait: 0.0 must be a number above 0."),
    ("judge_verdicts", {"max_wait": "60"}, "--max-wait: '60' is text, not a number."),
    ("judge_verdicts", {"thinking_budget": 0}, "--thinking-budget: 0 must be positive."),
    ("judge_verdicts", {"reasoning_effort": ""}, "--reasoning-effort: an empty value"),
    ("judge_verdicts", {"region": 5}, "--region: 5 is a number, not text."),
    ("judge_verdicts", {"deployment": "d"}, "--deployment applies to --provider azure only, "
                                            "not openai."),
    ("batch_prepare", {"response_format": "yaml"}, "--response-format yaml is not one "
                                                   "--provider openai takes"),
    ("batch_prepare", {"provider": "anthropic", "api_version": "v"}, "--api-version applies "
                                                                     "to --provider azure only"),
    ("export_view", {"limit": "5"}, "--limit: '5' is text, not a whole number; give limit=5."),
    ("export_view", {"states": 5}, "--states: 5 is a number, not a path."),
])
def test_a_bad_option_value_is_a_usage_error(tmp_path: Path, function: str,
                                             options: dict[str, Any], message: str) -> None:
    with pytest.raises(evalstream.UsageError) as caught:
        _calls(tmp_path)[function](**options)
    assert str(caught.value).startswith(message), str(caught.value)
    assert list(tmp_path.iterdir()) == []  # refused before anything was read or written


@pytest.mark.parametrize(("flag", "option", "text", "value"), [
    ("--max-tokens", "max_tokens", "-5", -5), ("--max-tokens", "max_tokens", "0", 0),
    ("--workers", "workers", "0", 0), ("--max-line-bytes", "max_line_bytes", "0", 0),
])
def test_the_api_and_the_command_line_say_the_same(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, option: str, text: str,
        value: Any) -> None:
    from evalstream._cli import main

    with pytest.raises(SystemExit):
        main(["build", str(CASES), str(tmp_path / "s.jsonl"), f"{flag}={text}"])
    said = capsys.readouterr().err.strip().splitlines()[-1]
    with pytest.raises(evalstream.UsageError) as caught:
        evalstream.build(CASES, tmp_path / "s.jsonl", **{option: value})
    cli = said.split(f"error: argument {flag}: ", 1)[1]
    assert str(caught.value) == f"{flag}: {cli}."


# -- the one front door (issue 24) ---------------------------------------------------------------
def _functions() -> dict[str, Any]:
    return {name: getattr(evalstream, name) for name in evalstream.__all__
            if callable(getattr(evalstream, name)) and not isinstance(getattr(evalstream, name),
                                                                    type)}


def test_no_function_takes_options_it_does_not_name() -> None:
    import inspect

    for name, function in _functions().items():
        if name == "judge_request":  # a mode of judge: a case id, a rubric id, judge's arguments
            assert function.__kwdefaults__ is evalstream.judge.__kwdefaults__
            with pytest.raises(evalstream.UsageError, match="no option 'max_token'"):
                function("c", "r", "s.jsonl", "v.jsonl", "m", max_token=5)
            continue
        for parameter in inspect.signature(function).parameters.values():
            assert parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL), \
                f"{name}(*{parameter.name})"


def test_every_option_of_the_api_has_a_rule() -> None:
    # The values of every keyword option are checked as the command line checks them.
    from evalstream import _options as options

    for name, function in _functions().items():
        for option in function.__kwdefaults__ or {}:
            assert option in options.RULES or option.startswith("on_"), (name, option)


def _library_defaults() -> dict[str, list[dict[str, Any]]]:
    """Each API function's library options and functions: their defaults, by option name."""
    import dataclasses
    import inspect

    from evalstream._build import states
    from evalstream._build.run import Options as BuildOptions
    from evalstream._cases import reading
    from evalstream._convert.run import Options as ConvertOptions
    from evalstream._judge.batch.collect import Options as CollectOptions
    from evalstream._judge.batch.prepare import Options as PrepareOptions
    from evalstream._judge.batch.remote import Options as RemoteOptions
    from evalstream._judge.live import Options as JudgeOptions
    from evalstream._judge.request import JudgeConfig
    from evalstream._stats.stats import StatsOptions
    from evalstream._verdicts import panel
    from evalstream._verdicts.agree import AgreeOptions
    from evalstream._verdicts.compare import CompareOptions
    from evalstream._verdicts.judges import JudgesOptions
    from evalstream._view import run as view
    from evalstream._view.index import Options as ViewOptions

    def fields(kind: Any) -> dict[str, Any]:
        return {f.name: f.default_factory() if f.default is dataclasses.MISSING else f.default
                for f in dataclasses.fields(kind) if f.default_factory is not dataclasses.MISSING
                or f.default is not dataclasses.MISSING}

    def defaults(function: Any) -> dict[str, Any]:
        return {n: p.default for n, p in inspect.signature(function).parameters.items()
                if p.default is not p.empty}

    judge = [fields(JudgeOptions), fields(JudgeConfig)]
    return {
        "read_cases": [defaults(reading.read_cases)],
        "judge_states": [defaults(states.judge_states)],
        "build": [fields(BuildOptions)], "validate": [fields(BuildOptions)],
        "stats": [fields(StatsOptions)], "agree": [fields(AgreeOptions)],
        "agree_judges": [fields(JudgesOptions)],
        "panel_agreement": [defaults(panel.panel_agreement)],
        "compare": [fields(CompareOptions)], "convert": [fields(ConvertOptions)],
        "judge": judge, "judge_dry_run": judge, "batch_prepare": [fields(PrepareOptions),
                                                                 fields(JudgeConfig)],
        "batch_submit": [fields(RemoteOptions)], "batch_status": [fields(RemoteOptions)],
        "batch_collect": [fields(CollectOptions)],
        "export_view": [fields(ViewOptions), defaults(view.export_view)],
        "serve_view": [fields(ViewOptions), defaults(view.serve_view)],
    }


def test_every_default_of_the_api_is_the_library_s() -> None:
    # The API's signatures hold the defaults users and the command line see; the library's
    # own (for its internal callers and tests) may never say otherwise.
    library = _library_defaults()
    for name, function in _functions().items():
        if name in ("convert_cases", "judge_verdicts", "judge_request", "render_stats",
                    "read_report", "load_rubrics", "rubrics", "count_tokens"):
            continue  # aliases, a mode whose options are judge's, no library options
        compared = 0
        for option, default in (function.__kwdefaults__ or {}).items():
            theirs = [d[option] for d in library[name] if option in d]
            if not theirs or option == "environ":
                continue  # the API's own (format, output, sections...); environ: os.environ
            ours = list(default) if isinstance(default, tuple) else default
            if (name, option) == ("stats", "by"):
                ours = [default]  # "scenario": the command line's text, read as a list
            assert ours == theirs[0], (name, option, default, theirs[0])
            compared += 1
        assert compared, name


def _signature(function: Any) -> str:
    """A function's signature as docs/api.md writes it: names and defaults (sizes in MiB as
    ``256 << 20``, text in double quotes)."""
    import inspect

    def shown(value: Any) -> str:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1 << 20:
            return f"{value >> 20} << 20"
        return f'"{value}"' if isinstance(value, str) else repr(value)

    parts, star = [], False
    for p in inspect.signature(function).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is p.empty else f"{p.name}={shown(p.default)}")
    return f"{function.__name__}({', '.join(parts)})"


def test_docs_api_shows_every_function_as_it_is() -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    modes = {"judge_dry_run": "judge_dry_run(input, output, model=None, *, ...judge's "
                              "options)",
             "judge_request": "judge_request(case_id, rubric_id, input, output, model=None, *, "
                              "...judge's options)"}
    for name, function in _functions().items():
        if name in ("convert_cases", "judge_verdicts"):
            assert f"`{name}`" in text, name  # the old names, said to be the new functions
            continue
        assert f"| `{modes.get(name) or _signature(function)}` |" in text, name
    for name in evalstream.__all__:
        if name[0].isupper() and name not in ("Case", "Message", "Passage", "ToolEvent", "Label",
                                              "Rubric", "Exposure", "Tokens", "Sizes",
                                              "JudgeConfig", "JudgeVerdict"):
            assert f"`{name}`" in text, name


def test_the_old_names_are_the_commands_functions() -> None:
    assert evalstream.convert_cases is evalstream.convert
    assert evalstream.judge_verdicts is evalstream.judge


def test_a_record_gives_its_state_and_question_as_python_values() -> None:
    cases = [json.loads(line) for line in (SAMPLES / "cases.jsonl").read_text().splitlines()]
    records = list(evalstream.judge_states(cases))
    written = (ROOT / "tests" / "golden" / "samples.states.jsonl").read_text().splitlines()
    with pytest.raises(TypeError):
        json.dumps(msgspec.structs.asdict(records[0]))  # msgspec.Raw: refused
    for record, line in zip(records, written, strict=True):
        values = record.to_builtins()
        assert values == json.loads(line)  # exactly what build writes, decoded
        assert json.loads(json.dumps(values)) == values
    judge = next(r for r in records if isinstance(r, evalstream.CheckRecord)).to_builtins()
    assert isinstance(judge["question"], str) and isinstance(judge["state"], dict)
    assert set(judge["state"]) == set(judge["exposure"]["shown"])


def test_stats_writes_its_report_and_page_with_the_rejects(tmp_path: Path) -> None:
    """The Python API writes what `evalstream stats` writes (before issue 24 the command line
    planned the report and page, so the API could not write the page with its rejects)."""
    from evalstream._cli import main

    bad = SAMPLES / "bad.jsonl"
    api, cli = tmp_path / "api", tmp_path / "cli"
    api.mkdir()
    cli.mkdir()
    result = evalstream.stats(bad, format="json", output=api / "s.json", html=api / "s.html",
                              rejects=api / "r.jsonl")
    assert result.overview.rejected == 21
    assert main(["stats", str(bad), "--format", "json", "-o", str(cli / "s.json"), "--html",
                 str(cli / "s.html"), "--rejects", str(cli / "r.jsonl"), "-q"]) == 1
    for name in ("s.json", "s.html", "r.jsonl"):
        assert (api / name).read_bytes() == (cli / name).read_bytes(), name
    # All or none: a page that cannot be written leaves no report and no rejects.
    with pytest.raises(evalstream.OutputError):
        evalstream.stats(bad, format="json", output=tmp_path / "t.json",
                         html=tmp_path / "no" / "t.html", rejects=tmp_path / "t.jsonl")
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "t.jsonl").exists()
    # A saved stats JSON, rendered again as the command line renders it.
    saved = evalstream.read_report(api / "s.json")
    assert isinstance(saved, evalstream.DatasetStats) and saved == result
    assert evalstream.read_report(SAMPLES / "cases.jsonl") is None
    again = evalstream.render_stats(api / "s.json", format="markdown", output=tmp_path / "s.md")
    assert again == result
    assert main(["stats", str(api / "s.json"), "--format", "markdown", "-o",
                 str(cli / "s.md")]) == 1
    assert (tmp_path / "s.md").read_bytes() == (cli / "s.md").read_bytes()


@pytest.mark.parametrize("function", ["agree", "compare"])
def test_agree_and_compare_write_what_the_command_line_writes(tmp_path: Path,
                                                              function: str) -> None:
    from evalstream._cli import main

    second = CASES if function == "agree" else SAMPLES / "verdicts-b.jsonl"
    for fmt, name in (("markdown", "r.md"), ("json", "r.json"), ("table", "r.txt")):
        report = getattr(evalstream, function)(VERDICTS, second, format=fmt,
                                               output=tmp_path / f"api-{name}",
                                               html=tmp_path / "api.html")
        assert report.exit_code == 0
        assert main([function, str(VERDICTS), str(second), "--format", fmt, "-o",
                     str(tmp_path / f"cli-{name}"), "--html", str(tmp_path / "cli.html")]) == 0
        assert (tmp_path / f"api-{name}").read_bytes() == (tmp_path / f"cli-{name}").read_bytes()
        assert (tmp_path / "api.html").read_bytes() == (tmp_path / "cli.html").read_bytes()


def test_the_modes_of_judge_take_its_options(tmp_path: Path,
                                            capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    from evalstream._cli import main

    evalstream.build(CASES, tmp_path / "states.jsonl")
    arguments = (tmp_path / "states.jsonl", tmp_path / "v.jsonl", "gpt-4.1-mini")
    plan = evalstream.judge_dry_run(*arguments, price_in=0.4, price_out=1.6,
                                    max_connections=4)
    assert isinstance(plan, evalstream.DryRun)
    assert (plan.judge_states, plan.to_send, plan.exact_verdicts) == (236, 236, 11)
    assert plan.cost_bound_usd is not None and plan.cost_bound_usd > 0
    with pytest.raises(evalstream.UsageError, match="judge_dry_run\\(\\) has no option "
                                                    "'max_conections'. Did you mean"):
        evalstream.judge_dry_run(*arguments, max_conections=4)  # type: ignore[call-arg]
    with pytest.raises(evalstream.UsageError, match="--max-connections: 0 must be positive"):
        evalstream.judge_dry_run(*arguments, max_connections=0)
    request = evalstream.judge_request("case-01", "tool-backed-claims", *arguments,
                                       provider="anthropic", api_key_env="MY_KEY")
    assert request.headers == {"x-api-key": "$MY_KEY"}  # the variable, never a key
    assert json.loads(request.body)["model"] == "gpt-4.1-mini" and "tools" in json.loads(request.body)
    capsysbinary.readouterr()
    assert main(["judge", *map(str, arguments[:2]), "--model", "gpt-4.1-mini", "--provider",
                 "anthropic", "--api-key-env", "MY_KEY", "--show-request", "case-01",
                 "tool-backed-claims"]) == 0
    shown = capsysbinary.readouterr()
    assert shown.out == request.body + b"\n"
    assert shown.err.decode() == (f"POST {request.url}  (x-api-key: $MY_KEY); store key "
                                  f"{request.key}\n")
    # Neither mode wrote anything: no verdicts, no store.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["states.jsonl", "states.report.json"]


def test_the_providers_settings_and_max_wait_go_through_the_front_door(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 27's options are parameters of judge (and its modes) and batch_prepare, checked
    # there and carried into the one judge config; the command line passes them as given.
    from evalstream._cli import main
    from evalstream._judge import live

    evalstream.build(CASES, tmp_path / "states.jsonl")
    arguments = (tmp_path / "states.jsonl", tmp_path / "v.jsonl", "gpt-4o-mini")
    azure = {"provider": "azure", "base_url": "https://example-resource.openai.azure.com",
             "deployment": "judge", "api_version": "2025-01-01-preview",
             "reasoning_effort": "low", "api_key_env": "MY_KEY"}
    request = evalstream.judge_request("case-01", "tool-backed-claims", *arguments, **azure)
    assert request.url == ("https://example-resource.openai.azure.com/openai/deployments/judge/"
                           "chat/completions?api-version=2025-01-01-preview")
    assert request.headers == {"api-key": "$MY_KEY"}
    sent = json.loads(request.body)
    assert sent["model"] == "judge" and sent["reasoning_effort"] == "low"
    assert "temperature" not in sent
    capsysbinary.readouterr()
    flags = [f"--{name.replace('_', '-')}={value}" for name, value in azure.items()]
    assert main(["judge", *map(str, arguments[:2]), "--model", "gpt-4o-mini", *flags,
                 "--show-request", "case-01", "tool-backed-claims"]) == 0
    assert capsysbinary.readouterr().out == request.body + b"\n"
    plain = evalstream.judge_request("case-01", "tool-backed-claims", *arguments,
                                     response_format="none")
    assert "response_format" not in json.loads(plain.body)
    thinking = evalstream.judge_dry_run(*arguments, provider="anthropic", thinking_budget=2048,
                                        max_output_tokens=4096)
    assert thinking.reasoning and not evalstream.judge_dry_run(*arguments).reasoning
    # max_wait reaches the run's options; the default is the library's.
    seen: list[live.Options] = []
    monkeypatch.setattr(live, "run", lambda opts, *rest: seen.append(opts) or 0)
    evalstream.judge(*arguments, max_wait=30, region="eu-west-1", provider="bedrock",
                     environ={"AWS_BEARER_TOKEN_BEDROCK": "k"})
    evalstream.judge(*arguments)
    assert [o.max_wait for o in seen] == [30.0, live.Options.max_wait]
    assert seen[0].config.region == "eu-west-1" and seen[0].config.host == \
        "bedrock-runtime.eu-west-1.amazonaws.com"
    # batch prepare takes them too, and says why Gemini has no batch form here.
    report = evalstream.batch_prepare(arguments[0], tmp_path / "batch", "gpt-4o-mini",
                                      **{k: v for k, v in azure.items() if k != "api_key_env"})
    assert report.exit_code == 0
    with pytest.raises(evalstream.UsageError, match="gemini"):
        evalstream.batch_prepare(arguments[0], tmp_path / "batch2", "gemini-2.0-flash",
                                 provider="gemini")
