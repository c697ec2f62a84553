"""Cases in and judge states out: ``read_cases``, ``load_rubrics``, ``rubrics``,
``judge_states``, ``count_tokens``, ``build``, ``validate`` and ``convert``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from evalstream._api.checked import (
    MAX_LINE_BYTES,
    MAX_OUTPUT_TOKENS,
    MAX_TOKENS,
    TOKENIZER,
    Engine,
    Inputs,
    Path,
    Progress,
    Tokenizer,
    front_door,
    inputs,
    options,
    path,
)

if TYPE_CHECKING:
    from evalstream._cases.rejects import Reject
    from evalstream._cases.schema import Case
    from evalstream._checks.listing import RubricEntry
    from evalstream._checks.report import RunReport
    from evalstream._checks.rubrics import RubricSet
    from evalstream._checks.state import CheckRecord, ExactVerdict
    from evalstream._convert.report import ConvertReport


@front_door
def read_cases(source: Path | Iterable[bytes | str], *, allow_unknown_fields: bool = False,
               max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Case | Reject]:
    """The cases of a JSONL file (a path, ``-`` for stdin, ``.gz``/``.zst``) or of lines given
    one by one, read exactly as ``build`` reads them: each line becomes a ``Case`` or a
    ``Reject`` (line, offset, id, JSON path, a sentence); blank lines are skipped."""
    from evalstream._cases.reading import read_cases as read

    return read(source, **options(read_cases, locals()))


@front_door
def load_rubrics(paths: Sequence[Path] | None = None) -> RubricSet:
    """The rubrics of these TOML files, in order, or the built-in set when ``paths`` is None
    or empty. A file that cannot be used raises RubricError naming the file, rubric and key."""
    from evalstream._checks.rubrics import load_rubrics as load
    from evalstream._options import check

    return load(check("paths", paths) if paths else None)


@front_door
def rubrics(paths: Sequence[Path] | None = None) -> list[RubricEntry]:
    """What each rubric of these TOML files (or of the built-in set, when ``paths`` is None
    or empty) is, as ``evalstream rubrics --list`` shows it: id, kind, version (the rubric
    hash verdicts carry), the fields it reads, whether ``na`` is an answer, and the first
    line of its question. A file that cannot be used raises RubricError."""
    from evalstream._checks.listing import entries

    return entries(load_rubrics(paths))


@front_door
def judge_states(cases: Iterable[Case | dict[str, Any]], rubrics: RubricSet | None = None, *,
                 max_tokens: int = MAX_TOKENS, max_output_tokens: int = MAX_OUTPUT_TOKENS,
                 tokenizer: Tokenizer = TOKENIZER,
                 exact_tokens: bool = False) -> Iterator[CheckRecord | ExactVerdict]:
    """The records ``build`` writes for these cases (``Case`` structs or dicts in the wire
    format), in order: a ``CheckRecord`` per judge check that fits the budget, an
    ``ExactVerdict`` per exact check (``record.to_builtins()``: the record as Python values);
    see ``evalstream._build.states.judge_states``."""
    from evalstream._build.states import judge_states as states
    from evalstream._checks.rubrics import RubricSet
    from evalstream.errors import UsageError

    if rubrics is not None and not isinstance(rubrics, RubricSet):
        raise UsageError(f"rubrics: {rubrics!r} is not a RubricSet; give "
                         "rubrics=evalstream.load_rubrics([...]) (or None: the built-in set).")
    return states(cases, rubrics, **options(judge_states, locals()))


@front_door
def count_tokens(text: str, tokenizer: Tokenizer = TOKENIZER) -> int:
    """The exact number of tokens of ``text`` in ``tokenizer`` (``o200k_base`` or
    ``cl100k_base``), as tiktoken's ``encode_ordinary`` counts them; nothing is downloaded."""
    from evalstream._checks.encodings import count
    from evalstream._options import check

    return count(text, check("tokenizer", tokenizer))


@front_door
def build(input: Inputs, output: Path, *, rubric_files: Sequence[Path] = (),
          pair_with: Path | None = None,
          max_tokens: int = MAX_TOKENS, max_output_tokens: int = MAX_OUTPUT_TOKENS,
          tokenizer: Tokenizer = TOKENIZER,
          exact_tokens: bool = False, workers: int = 1, engine: Engine = "local",
          scheduler: str | None = None, rejects: Path | None = None, report: Path | None = None,
          allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
          force: bool = False, on_progress: Progress | None = None) -> RunReport:
    """Run ``build``: judge states from ``input`` (a path, glob or URL, or a list of them, read
    in order as one) to ``output``, with the rejects (written only when a line is rejected)
    and the run report beside it, unless ``rejects=`` and ``report=`` say where. Each option
    as the command's (``rubric_files`` is ``--rubrics``; ``max_tokens`` is the judge model's
    context, of which every judge request's texts, framing and ``max_output_tokens`` must
    fit); ``on_progress(done, total)`` is told the bytes read. With ``pair_with`` (run B's
    cases), the pairwise rubrics' states of each id in both files, in both orders (a
    ``PairRunReport``: the pairs, and the cases not judged). Returns the run report; files
    appear only if the whole run succeeds."""
    from evalstream._build.run import Options, run

    given = options(build, locals())
    written, _ = run(Options(**inputs(input), output=path("output", output), **given),
                     on_progress)
    return written


@front_door
def validate(input: Inputs, *, rejects: Path | None = None, report: Path | None = None,
             format: Literal["table", "json"] | None = None, workers: int = 1,
             engine: Engine = "local", scheduler: str | None = None,
             allow_unknown_fields: bool = False, max_line_bytes: int = MAX_LINE_BYTES,
             force: bool = False, on_progress: Progress | None = None) -> RunReport:
    """Run ``validate``: read and check the cases as ``build`` does, writing nothing but the
    files asked for (``rejects=``, ``report=``). ``format`` shows them on stdout as the
    command does: ``"table"`` the first problems and the totals, ``"json"`` every reject as
    JSONL (then ``rejects`` is stdout); None, the default, shows nothing. Returns the run
    report."""
    import sys

    from evalstream._build.run import Options, run
    from evalstream._options import VALIDATE_FORMAT
    from evalstream.errors import EXIT_PIPE, UsageError

    given = options(validate, locals(), rules={"format": VALIDATE_FORMAT})
    shown = given.pop("format")
    if shown == "json":
        if given["rejects"] not in (None, "-"):
            raise UsageError("--format json writes the rejects to stdout; drop --rejects.")
        given["rejects"] = "-"
    checked, first = run(Options(**inputs(input), **given), on_progress)
    if shown == "table" and checked.exit_code != EXIT_PIPE:
        from evalstream._render.validate_view import print_problems

        print_problems(checked, first, sys.stdout)
    return checked


@front_door
def convert(input: Path, output: Path, *, format: str | None = None, maps: Sequence[str] = (),
            sets: Sequence[str] = (), values: Sequence[str] = (), id_from: str | None = None,
            parse_json: Sequence[str] = (), keep_unmapped: bool = False,
            tool_failure_when: Sequence[str] = (), split: str | None = None,
            separator: str | None = None, quoting: bool = True, rejects: Path | None = None,
            report: Path | None = None, max_line_bytes: int = MAX_LINE_BYTES,
            force: bool = False) -> ConvertReport:
    """Run ``convert``: cases at ``output`` from another format at ``input`` (OpenAI chats,
    OpenTelemetry traces, tables, inspect_ai logs, Hugging Face datasets on disk), or another
    tool's judge as verdicts (``format`` ``"inspect-grades"``, ``"promptfoo-grades"``), with
    the rejects and the report beside it; ``-`` is stdin (for the formats read as a stream,
    with ``format``) or stdout. Each option as the command's: ``format`` is ``--from``
    (None: inferred from the file), ``maps`` ``--map``, ``sets`` ``--set``,
    ``quoting=False`` ``--no-quoting``. Returns the report; files appear only if the whole
    run succeeds."""
    from evalstream._convert import Options, run

    given = options(convert, locals())
    converted, _ = run(Options(input=path("input", input), output=path("output", output),
                               **given))
    return converted


convert_cases = convert  # the name before issue 24 (docs/api.md)
