"""Asking a judge: ``judge`` and its two modes (``judge_dry_run``, ``judge_request``), and the
batch commands (``batch_prepare``, ``batch_submit``, ``batch_status``, ``batch_collect``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from evalstream._api.checked import (
    JUDGE_CONFIG,
    MAX_LINE_BYTES,
    Path,
    Tokenizer,
    front_door,
    judge_config,
    options,
    path,
    refuse_unknown,
)
from evalstream._options import ASK_CONFIDENCE

if TYPE_CHECKING:
    from evalstream._judge.batch.remote import BatchSummary
    from evalstream._judge.batch.report import CollectReport, PrepareReport
    from evalstream._judge.dryrun import DryRun
    from evalstream._judge.live import Options as JudgeOptions
    from evalstream._judge.live import Progress as JudgeProgress
    from evalstream._judge.report import JudgeReport

P = ParamSpec("P")
R = TypeVar("R")


@front_door
def judge(input: Path, output: Path, model: str | None = None, *, jury: Path | None = None,
          samples: int = 1, confidence: bool = False, provider: str = "openai",
          base_url: str = "", api_key_env: str | None = None, temperature: float | None = 0.0,
          max_output_tokens: int = 1024, response_format: str = "",
          reasoning_effort: str | None = None, thinking_budget: int | None = None,
          deployment: str = "", api_version: str = "", region: str = "",
          max_connections: int = 16, max_attempts: int = 5, timeout: float = 120.0,
          max_wait: float = 600.0, rpm: float | None = None, tpm: float | None = None,
          price_in: float | None = None, price_out: float | None = None,
          max_cost: float | None = None, max_requests: int | None = None,
          tokenizer: Tokenizer | None = None, store: Path | None = None,
          retry_unscored: bool = False, max_unscored_rate: float | None = 0.5,
          rejects: Path | None = None, report: Path | None = None,
          max_line_bytes: int = MAX_LINE_BYTES, force: bool = False,
          environ: Mapping[str, str] | None = None,
          on_progress: Callable[[JudgeProgress], None] | None = None) -> JudgeReport:
    """Run ``judge``: a verdict at ``output`` for every judge state of ``input`` (a ``build``
    output), asked of ``model`` at ``provider`` (a name of the registry: ``openai``,
    ``anthropic``, ``azure``, ``gemini``, ``bedrock``; ``base_url`` for any compatible server;
    ``temperature`` None sends none) ``samples`` times (their mode decides), or of the jury
    of the TOML file ``jury`` (each juror's model and options there, its rule deciding; the
    verdicts then carry ``votes`` and ``panel``; a panel refuses pairwise states), with every
    answer kept in the answer store (``store``; default beside the output:
    ``verdicts.judge.sqlite``), so that a run stopped anyhow and run again pays for nothing
    twice. The provider's settings (``response_format``: "" the provider's;
    ``reasoning_effort``, ``thinking_budget``; ``deployment`` and ``api_version`` for Azure,
    ``region`` for Bedrock; "" or None: the provider's own) are refused, with a sentence, by a
    provider that does not take them. ``max_wait``: the seconds a request may spend waiting as
    429s and 503s with Retry-After ask (such a wait is no failed attempt). The API key is read
    from ``environ`` (default the process's environment), from the provider's variable or
    ``api_key_env``. Each option as the command's; ``on_progress`` is told how the run goes.
    Returns the report (``exit_code`` 3: stopped by a limit, run again to continue; 1: lines
    rejected, or more than ``max_unscored_rate`` of the verdicts (a panel's, one a state)
    unscored, or every one: None sets no limit but that); files appear only if the whole run
    succeeds; the rejects only when a line is rejected (or ``rejects`` names them)."""
    from evalstream._judge import live

    opts = _judge_options(locals())
    targets = live.check(opts)
    try:
        return live.run(opts, on_progress, targets)
    except BaseException as exc:
        if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM: what came back is kept
            exc.add_note(f"answers received so far are kept in {live.store_path(opts)}; run "
                         "the same command again to continue.")
        raise


judge_verdicts = judge  # the name before issue 24 (docs/api.md)


def _judge_options(given: dict[str, Any]) -> JudgeOptions:
    """The library's options of a call with ``judge``'s arguments (``given``), checked."""
    from evalstream._judge.live import Options

    checked = options(judge, given, rules={"confidence": ASK_CONFIDENCE})
    jury_file = checked.pop("jury")
    ask = checked.pop("confidence")  # the status's probabilities (issue 29)
    if jury_file is None:
        if given["model"] is None:
            from evalstream.errors import UsageError

            raise UsageError("give --model (e.g. gpt-4.1-mini), or --jury FILE to ask several "
                             "judges.")
        config, jury = judge_config(given["model"], checked, confidence=ask), None
    else:
        config, jury = _jury(jury_file, given, checked)
    if checked["environ"] is None:
        del checked["environ"]  # the library reads the process's
    else:
        checked["environ"] = dict(checked["environ"])
    return Options(input=path("input", given["input"]), output=path("output", given["output"]),
                   config=config, jury=jury, confidence=ask, **checked)


# What a jury file says for each juror: given with --jury, each is refused.
JUROR_OPTIONS = ("model", *JUDGE_CONFIG, "samples", "price_in", "price_out", "api_key_env")


def _jury(jury_file: str, given: dict[str, Any], checked: dict[str, Any]) -> tuple[Any, Any]:
    """The jury of ``--jury FILE`` (its first juror's config, and the jury), once no option
    that each juror's table says was given too."""
    from evalstream._judge.jury import read
    from evalstream.errors import UsageError

    defaults = {"model": None, **(getattr(judge, "__kwdefaults__", None) or {})}
    clashing = [name for name in JUROR_OPTIONS if given[name] != defaults[name]]
    if clashing:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in clashing)
        raise UsageError(f"--jury {jury_file} names each juror's model and options; give "
                         f"{flags} in the jury file ([[judge]] keys: "
                         f"{', '.join(clashing)}), not beside --jury.")
    jury = read(jury_file)
    for name in JUDGE_CONFIG:
        checked.pop(name)
    return jury.jurors[0].config, jury


def _mode(command: Callable[..., Any], function: Callable[..., Any],
          leading: int) -> Callable[..., Any]:
    """``function`` called with its ``leading`` positional arguments and the rest bound to
    ``command``'s signature, as ``command``'s ``locals()`` (a misspelled option is refused as
    ``command`` refuses it)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        import inspect

        refuse_unknown(command, kwargs, function.__name__)
        bound = inspect.signature(command).bind(*args[leading:], **kwargs)
        bound.apply_defaults()
        return function(*args[:leading], bound.arguments)

    call.__name__ = call.__qualname__ = function.__name__
    call.__doc__ = function.__doc__
    call.__kwdefaults__ = command.__kwdefaults__  # the defaults the command line shows
    if not leading:
        call.__wrapped__ = command  # type: ignore[attr-defined]  # its signature, for help()
    return call


def _mode_of(command: Callable[P, Any]) -> Callable[[Callable[[dict[str, Any]], R]],
                                                     Callable[P, R]]:
    """A mode of ``command`` (``judge --dry-run``) takes exactly its arguments, the same
    parameters, types and defaults for mypy and at run time, written once."""
    return lambda function: _mode(command, function, 0)


def _state_mode_of(command: Callable[P, Any]) -> Callable[
        [Callable[[str, str, dict[str, Any]], R]], Callable[Concatenate[str, str, P], R]]:
    """A mode of ``command`` for one judge state: its case id and rubric id first, then
    exactly ``command``'s arguments."""
    return lambda function: _mode(command, function, 2)


@_mode_of(judge)
def judge_dry_run(given: dict[str, Any]) -> DryRun:
    """``judge --dry-run``: with ``judge``'s arguments, count the requests it would send, their
    exact input tokens and the cost bound (with ``price_in`` and ``price_out``); send nothing,
    write nothing. Returns the ``DryRun``."""
    from evalstream._judge import live
    from evalstream._judge.dryrun import dry_run

    opts = _judge_options(given)
    live.check(opts)
    return dry_run(opts)


@dataclass(frozen=True)
class JudgeRequest:
    """The request ``judge`` sends for one judge state: where (``url``), the headers that
    carry the key (the variable's name in its place, ``$OPENAI_API_KEY``: never the key), its
    key in the answer store, and the exact body."""

    url: str
    headers: dict[str, str]
    key: str
    body: bytes


@_state_mode_of(judge)
def judge_request(case_id: str, rubric_id: str, given: dict[str, Any]) -> JudgeRequest:
    """``judge --show-request CASE_ID RUBRIC_ID``: the request ``judge`` would send, given the
    rest of its arguments (``judge_request(case_id, rubric_id, input, output, model, ...)``),
    for the judge state of (case_id, rubric_id) in its input (a pairwise state's first
    order, run A's response first). Nothing is sent or written."""
    from evalstream._judge.live import first_state, held, request_of
    from evalstream.errors import UsageError

    opts = _judge_options(given)
    with held(opts) as source:
        state = first_state(source, case_id, rubric_id, opts.max_line_bytes)
    if state is None:
        raise UsageError(f"no judge state for case `{case_id}` and rubric `{rubric_id}` in "
                         f"{opts.input}.")
    sent = request_of(opts.config, state)
    api = opts.config.api
    shown = api.headers("$" + (opts.api_key_env or api.key_env))
    return JudgeRequest(opts.config.url, {name: shown[name] for name in api.credential_headers},
                        sent.key, sent.body)


@front_door
def batch_prepare(input: Path, folder: Path, model: str, *, provider: str = "openai",
                  base_url: str = "", temperature: float | None = 0.0,
                  max_output_tokens: int = 1024, response_format: str = "",
                  reasoning_effort: str | None = None, thinking_budget: int | None = None,
                  deployment: str = "", api_version: str = "", region: str = "",
                  confidence: bool = False, max_requests_per_file: int | None = None,
                  max_bytes_per_file: int | None = None, only_missing: Path | None = None,
                  store: Path | None = None,
                  max_line_bytes: int = MAX_LINE_BYTES) -> PrepareReport:
    """Run ``batch prepare``: request files for ``model`` at ``provider`` (the judge and the
    provider's settings as for ``judge``; ``gemini`` and ``bedrock`` have no batch form
    evalstream speaks, and are refused saying why), split at the provider's limits or lower
    ones, a manifest, the rejects and the report in the new folder ``folder``, from the judge
    states of ``input``; ``only_missing`` (a collected batch folder) or ``store`` (an answer
    store) leaves out what came back."""
    from evalstream._judge.batch.prepare import Options, run

    checked = options(batch_prepare, locals(), rules={"confidence": ASK_CONFIDENCE})
    config = judge_config(model, checked, confidence=checked.pop("confidence"))
    return run(Options(input=path("input", input), folder=path("folder", folder),
                       config=config, **checked))


Remote = Callable[..., "BatchSummary"]


@front_door
def batch_submit(folder: Path, *, api_key_env: str | None = None, timeout: float = 600.0,
                 max_attempts: int = 5, resubmit_unconfirmed: bool = False,
                 environ: Mapping[str, str] | None = None) -> BatchSummary:
    """Run ``batch submit``: upload the request files of a prepared folder and create their
    batches, every id saved in the manifest at once (run it again to continue); the key from
    ``environ`` (default the process's environment)."""
    from evalstream._judge.batch.remote import submit

    return _remote(submit, folder, options(batch_submit, locals()))


@front_door
def batch_status(folder: Path, *, api_key_env: str | None = None, timeout: float = 600.0,
                 max_attempts: int = 5, wait: bool = False, poll: float = 60.0,
                 max_wait: float = 90_000.0, download: bool = True,
                 environ: Mapping[str, str] | None = None) -> BatchSummary:
    """Run ``batch status``: each batch's state; the results of ended batches downloaded into
    ``folder/results/`` (``download=False``: none); ``wait`` polls every ``poll`` seconds
    until every batch has ended, or until ``max_wait`` seconds have passed (25 hours: the
    providers' 24-hour window and an hour to finalize), when ``exit_code`` is 3 and
    ``stopped`` says which batches did not end."""
    from evalstream._judge.batch.remote import status

    return _remote(status, folder, options(batch_status, locals()))


def _remote(action: Remote, folder: Path, checked: dict[str, Any]) -> BatchSummary:
    from evalstream._judge.batch.remote import Options

    if checked["environ"] is None:
        del checked["environ"]  # the library reads the process's
    summary: BatchSummary = action(Options(folder=path("folder", folder), **checked))
    return summary


@front_door
def batch_collect(folder: Path, output: Path, results: Sequence[Path] = (), *,
                  store: Path | None = None, missing: Literal["unscored", "skip"] = "unscored",
                  price_in: float | None = None, price_out: float | None = None,
                  max_unscored_rate: float | None = 0.5, rejects: Path | None = None,
                  report: Path | None = None, max_line_bytes: int = MAX_LINE_BYTES,
                  force: bool = False) -> CollectReport:
    """Run ``batch collect``: a verdict at ``output`` for every judge state of the prepared
    ``folder``, from the result files (default ``folder/results/*.jsonl``), every answer kept
    in the live judge's answer store (``store``; default the one prepare consulted, else
    beside the output). Returns the report (``exit_code`` 3: judge states still missing; 1 as
    ``judge``'s)."""
    from evalstream._judge.batch.collect import Options, run
    from evalstream._options import check

    checked = options(batch_collect, locals())
    return run(Options(folder=path("folder", folder), output=path("output", output),
                       results=check("results", list(results) if isinstance(
                           results, (tuple, list)) else results), **checked))
