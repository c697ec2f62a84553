"""The command line only parses arguments and calls the API: found by walking the parser, every
option of every command is a parameter of the API function the command calls, its default is
the API's (the parser adds none, and the help shows the API's), and a command passes on only
the options it was given."""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream._cli import common, main
from evalstream.errors import UsageError
from tests.cli.test_options import _commands
from tests.helpers import SAMPLES

# The API functions each command calls (a mode of a command is a function of its own).
CALLS: dict[str, list[Callable[..., Any]]] = {
    "build": [evalstream.build], "validate": [evalstream.validate],
    "stats": [evalstream.stats, evalstream.render_stats],
    "agree": [evalstream.agree, evalstream.agree_judges], "compare": [evalstream.compare],
    "convert": [evalstream.convert],
    "judge": [evalstream.judge, evalstream.judge_dry_run, evalstream.judge_request],
    "batch prepare": [evalstream.batch_prepare], "batch submit": [evalstream.batch_submit],
    "batch status": [evalstream.batch_status], "batch collect": [evalstream.batch_collect],
    "view": [evalstream.serve_view, evalstream.export_view],
    "rubrics": [evalstream.load_rubrics, evalstream.rubrics],
}
# What steers the command line only, and why: never an option of a function.
STEERS = {
    ("*", "quiet"): "what the command line prints on stderr",
    ("build", "paths"): "the inputs and the output, the last of them unless -o says",
    ("build", "output_option"): "build's `output`, given apart from the inputs",
    ("judge", "dry_run"): "calls judge_dry_run, with the same options",
    ("judge", "show_request"): "calls judge_request, with the same options",
    ("convert", "list_formats"): "lists the formats of the registry",
    ("stats", "full"): "the table's every section: sections=None",
    ("batch submit", "format"): "how the summary is printed",
    ("batch status", "format"): "how the summary is printed",
    ("rubrics", "show_builtin"): "prints the built-in rubric file",
    ("rubrics", "list"): "calls rubrics(), with the same files",
    ("rubrics", "json"): "how the list is printed",
    ("agree", "files"): "VERDICTS CASES (agree), or several runs with --cases (agree_judges)",
}
# Where the command line shows its result on stdout unless told otherwise, and the API
# writes or shows nothing unless asked: the command passes these itself.
OWN_DEFAULTS = {("validate", "format"): "table", ("stats", "output"): "-",
                ("agree", "output"): "-", ("compare", "output"): "-"}
STATED = re.compile(r"(?:\(|; )default:? ([^\s;:)]+)")


def _actions() -> list[tuple[str, argparse.Action]]:
    return [(name, action) for name, command in _commands().items()
            for action in command._actions if not isinstance(action, argparse._HelpAction)]


def _steers(command: str, dest: str) -> bool:
    return (command, dest) in STEERS or ("*", dest) in STEERS


def _parameter(command: str, dest: str) -> tuple[Callable[..., Any], inspect.Parameter]:
    for function in CALLS[command]:
        parameters = inspect.signature(function).parameters
        if dest in parameters:
            return function, parameters[dest]
    raise AssertionError(f"`{command}`'s {dest} is no parameter of "
                         f"{', '.join(f.__name__ for f in CALLS[command])}")


def test_every_command_calls_the_api() -> None:
    assert set(_commands()) == set(CALLS), "add the new command's API functions to CALLS"
    for command, dest in STEERS:  # no stale entry
        assert command == "*" or any(a.dest == dest for c, a in _actions() if c == command)


@pytest.mark.parametrize(("command", "action"), _actions(),
                         ids=lambda x: x if isinstance(x, str) else x.dest)
def test_every_option_is_a_parameter_with_the_api_default(command: str,
                                                          action: argparse.Action) -> None:
    if _steers(command, action.dest):
        return
    function, parameter = _parameter(command, action.dest)
    if not action.option_strings:
        return  # a positional argument: always given
    # The parser adds no default: the option is absent unless given, and the API's applies.
    assert action.default is argparse.SUPPRESS, (command, action.option_strings)
    if parameter.default is inspect.Parameter.empty:
        return  # a required argument of the function (--model, view's --export DIR)
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        assert action.const is (not parameter.default), (command, action.dest)
        return
    if (command, action.dest) in OWN_DEFAULTS or parameter.default in (None, "", ()):
        return  # the help says in words what the command decides (the provider's URL...)
    # Where the help names the default, it is the API's.
    expected = common.default(function, action.dest)
    said = STATED.search(action.help or "")
    assert (said.group(1) == expected) if said else expected in (action.help or ""), (
        command, action.help, expected)


def test_no_default_is_written_in_the_command_line() -> None:
    # 256 << 20 was written seven times, 32_000 three times (issue 24).
    root = Path(evalstream.__file__).parent / "_cli"
    for path in root.glob("*.py"):
        text = path.read_text()
        for literal in ("256 << 20", "32_000", "32000", "1024", "default=0.0", "default=600",
                        "default=120", "default=16", "default=5,", "default=20,",
                        "default=0.95", "default=100", "default=60"):
            assert literal not in text, f"{path.name} writes {literal}"


def _recorded(monkeypatch: pytest.MonkeyPatch, name: str,
              returned: Any = None) -> list[dict[str, Any]]:
    """``evalstream.NAME`` replaced by a recorder of its calls that returns ``returned``, or
    ends the command with a usage error (exit 2) when it is None."""
    calls: list[dict[str, Any]] = []
    real = getattr(evalstream, name)

    def record(*args: Any, **kwargs: Any) -> Any:
        calls.append({"args": args, **kwargs})
        if returned is None:
            raise UsageError("recorded")
        return returned

    record.__kwdefaults__ = real.__kwdefaults__  # type: ignore[attr-defined]  # the help's
    monkeypatch.setattr(evalstream, name, record)
    return calls


def test_a_command_passes_on_only_the_options_given(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    report = evalstream.validate(SAMPLES / "cases.jsonl")
    calls = _recorded(monkeypatch, "build", report)
    assert main(["build", "in.jsonl", "out.jsonl", "-q"]) == 0
    assert calls == [{"args": (["in.jsonl"], "out.jsonl"), "on_progress": None}]
    calls.clear()
    assert main(["build", "a.jsonl", "b.jsonl", "-o", "out.jsonl", "-q", "--max-tokens", "9",
                 "--rubrics", "r.toml", "--exact-tokens"]) == 0
    assert calls == [{"args": (["a.jsonl", "b.jsonl"], "out.jsonl"), "on_progress": None,
                      "max_tokens": 9, "rubric_files": ["r.toml"], "exact_tokens": True}]
    calls = _recorded(monkeypatch, "agree", evalstream.agree(SAMPLES / "verdicts.jsonl",
                                                             SAMPLES / "cases.jsonl"))
    assert main(["agree", "v.jsonl", "c.jsonl", "--by", "scenario"]) == 0
    assert calls == [{"args": ("v.jsonl", "c.jsonl"), "output": "-", "by": "scenario"}]
    calls = _recorded(monkeypatch, "judge_dry_run")
    assert main(["judge", "s.jsonl", "v.jsonl", "--model", "m", "--rpm", "60", "--dry-run",
                 "--store", "s.sqlite"]) == 2
    assert calls == [{"args": ("s.jsonl", "v.jsonl", "m"), "rpm": 60.0, "store": "s.sqlite"}]


@pytest.mark.parametrize("spelling", ["--store", "--cache"])
def test_the_answer_store_has_one_name_and_its_old_one_is_read(
        monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    for command in (["judge", "s.jsonl", "v.jsonl", "--model", "m", "--dry-run"],
                    ["batch", "collect", "b", "v.jsonl", "-q"],
                    ["batch", "prepare", "s.jsonl", "b", "--model", "m", "-q"]):
        name = {"judge": "judge_dry_run", "collect": "batch_collect",
                "prepare": "batch_prepare"}[command[1] if command[0] == "batch" else "judge"]
        calls = _recorded(monkeypatch, name)
        assert main([*command, spelling, "s.sqlite"]) == 2
        assert calls[0]["store"] == "s.sqlite", command
        assert "cache" not in calls[0]
