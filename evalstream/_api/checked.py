"""The arguments of an API call, checked before anything is read: each option by its rule
(``evalstream._options``, the command line's words), the paths as paths, and the one judge
config of ``judge``, ``batch prepare`` and their modes."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, ParamSpec, TypeVar

from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from evalstream._judge.request import JudgeConfig

Path = str | os.PathLike[str]
Inputs = Path | Sequence[Path]  # one path, glob or URL, or several read in order as one
Tokenizer = Literal["o200k_base", "cl100k_base"]
Engine = Literal["local", "dask"]
ReportFormat = Literal["table", "json", "markdown"]
Progress = Callable[[int, int | None], None]  # (bytes read, bytes in all, when known)

P = ParamSpec("P")
R = TypeVar("R")
RENAMED = {"cache": "store"}  # an option's name before issue 24: its name now

# The defaults several functions share, each written once (tests/test_api.py checks that every
# default of the API is the library's own).
MAX_LINE_BYTES: Final = DEFAULT_MAX_LINE_BYTES  # 256 MiB
MAX_TOKENS: Final = 32_000  # _checks.tokens.DEFAULT_BUDGET (not imported: it loads msgspec)
# The judge's bound on its answer (judge, batch prepare), which build, stats and view hold
# back in the budget: _checks.tokens.DEFAULT_OUTPUT.
MAX_OUTPUT_TOKENS: Final = 1_024
TOKENIZER: Final = "o200k_base"


def front_door(function: Callable[P, R]) -> Callable[P, R]:
    """A public function of the API: called with a keyword it does not take (``max_token=``),
    it raises UnknownOptionError, a UsageError and a TypeError naming the nearest option and
    every one, before anything is read (mypy reports it too, from the signature)."""
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        refuse_unknown(function, kwargs)
        return function(*args, **kwargs)

    functools.update_wrapper(call, function)  # its name, doc, types, and its signature
    call.__kwdefaults__ = function.__kwdefaults__  # the defaults --help shows
    return call


def refuse_unknown(function: Callable[..., Any], given: dict[str, Any],
                   called: str | None = None) -> None:
    """UnknownOptionError for the first keyword of ``given`` that ``function`` does not take
    (``called``: the name it was called by, a mode of it)."""
    code = getattr(function, "__wrapped__", function).__code__
    positional, keywords = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames[:positional + keywords]
    for keyword in given:
        if keyword not in names:
            from evalstream._cases.rejects import did_you_mean
            from evalstream.errors import UnknownOptionError

            hint = f" It is `{RENAMED[keyword]}` now." if RENAMED.get(keyword) in names else \
                did_you_mean(keyword, names)
            raise UnknownOptionError(
                f"{called or function.__name__}() has no option {keyword!r}.{hint} Its "
                f"options: {', '.join(sorted(names[positional:]))}.")


def options(function: Callable[..., Any], given: dict[str, Any], *,
            rules: dict[str, tuple[str | None, Callable[[str, Any], Any]]] | None = None,
            ) -> dict[str, Any]:
    """The keyword options of a call to ``function`` (``given``: its ``locals()`` as it
    starts), each checked by its rule (``evalstream._options.RULES``; ``rules``: the flag and
    rule of a keyword this command reads otherwise): a bad value is a UsageError naming the
    option's flag in the command line's words, never a stray TypeError or an empty result.
    None passes where the option's type allows it (a default of None: the command decides).
    Positional arguments and hooks (``on_...``) are left out; the options are named as the
    library's options name them (the caller takes out those it reads itself)."""
    from evalstream._options import check

    defaults = function.__kwdefaults__ or {}
    types = function.__annotations__
    rules = rules or {}
    checked = {}
    for name, value in given.items():
        if name in defaults and not name.startswith("on_"):
            flag, rule = rules.get(name, (None, None))
            optional = defaults[name] is None or _takes_none(types[name])
            checked[name] = check(name, value, optional, rule, flag)
    return checked


def _takes_none(annotation: str) -> bool:
    """Whether a parameter's type (its text: the API's modules postpone annotations) says
    None, as ``temperature: float | None = 0.0`` does."""
    return "None" in (part.strip() for part in annotation.split("|"))


def path(name: str, value: Any) -> str:
    """A path argument (``input``, ``output``, ``folder``...), checked as a path."""
    from evalstream._options import check

    return str(check(name, value))


def inputs(given: Any) -> dict[str, Any]:
    """``input`` and ``inputs`` of a library run's options: one path, glob or URL, or a list
    of them (read in order as one)."""
    return _one_or_many(given, "input", "inputs")


def case_inputs(cases: Any) -> dict[str, Any]:
    """``cases`` and ``case_inputs`` of the options of agree and view: one path or glob, or
    several read in order as one."""
    return _one_or_many(cases, "cases", "case_inputs")


def _one_or_many(given: Any, one: str, many: str) -> dict[str, Any]:
    """``one``: the path, or several joined by spaces (as the report names them); ``many``:
    the several, in order, when there are more than one."""
    if isinstance(given, (list, tuple)):
        names = [path(one, x) for x in given]
        return {one: " ".join(names), many: names if len(names) > 1 else []}
    return {one: path(one, given)}


# The judge config's options: the shared ones, then the provider's settings (each provider
# says which it takes; JudgeConfig refuses one given to a provider that does not).
JUDGE_CONFIG = ("provider", "base_url", "temperature", "max_output_tokens", "response_format",
                "reasoning_effort", "thinking_budget", "deployment", "api_version", "region")


def judge_config(model: str, checked: dict[str, Any], confidence: bool = False) -> JudgeConfig:
    """The judge config (who is asked, and how), made here only, for every function that asks
    a judge or prepares its requests: ``model`` and the config's options, taken out of
    ``checked`` (what ``options`` returned); ``provider`` is checked against the registry, and
    the provider's settings by the provider (``JudgeConfig``)."""
    from evalstream._judge.providers import NAMES
    from evalstream._judge.request import JudgeConfig
    from evalstream._options import check, choice

    settings = {name: checked.pop(name) for name in JUDGE_CONFIG}
    settings["provider"] = check("provider", settings["provider"], rule=choice(*NAMES))
    return JudgeConfig(model=check("model", model), confidence=confidence, **settings)
