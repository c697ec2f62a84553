"""Judge states in memory: what ``build`` writes, for cases a program holds (a notebook, a
judge loop), without files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from evalstream._build.records import RecordEncoder
from evalstream._cases import schema
from evalstream._cases.reading import case_kind
from evalstream._cases.rejects import Reject
from evalstream._checks import encodings, tokens
from evalstream._checks.checker import Checker
from evalstream._checks.rubrics import RubricSet, load_rubrics
from evalstream._checks.state import CheckRecord, ExactVerdict
from evalstream.errors import UsageError


class InvalidCaseError(UsageError):
    """A case given to ``judge_states`` is not a valid case; the message says why."""

    def __init__(self, reject: Reject) -> None:
        where = f"case {reject.id!r}" if reject.id else f"case {reject.line}"
        super().__init__(f"{where}: {reject.error} (at {reject.path})")
        self.reject = reject


def judge_states(cases: Iterable[schema.Case | dict[str, Any]], rubrics: RubricSet | None = None,
                 max_tokens: int = tokens.DEFAULT_BUDGET, tokenizer: str = encodings.DEFAULT,
                 exact_tokens: bool = False, max_output_tokens: int = tokens.DEFAULT_OUTPUT,
                 ) -> Iterator[CheckRecord | ExactVerdict]:
    """The records ``build`` writes for these cases (``Case`` structs, or dicts in the wire
    format), in order: a ``CheckRecord`` per judge check that fits the budget, an
    ``ExactVerdict`` per exact check. ``question`` and ``state`` are the JSON bytes written
    (``msgspec.Raw``; ``msgspec.json.decode(record.state)`` gives the object), so
    ``state_hash`` can be checked against them. An invalid case raises InvalidCaseError
    (case ids are not checked for duplicates here; ``read_cases`` does that).
    ``tokenizer``, ``exact_tokens`` and ``max_output_tokens`` as for ``build``."""
    checker = Checker(rubrics or load_rubrics(), max_tokens, tokenizer=tokenizer,
                      exact_tokens=exact_tokens, max_output_tokens=max_output_tokens)
    encoder = RecordEncoder()
    kind = case_kind()
    decode_judge = msgspec.json.Decoder(CheckRecord).decode
    decode_exact = msgspec.json.Decoder(ExactVerdict).decode
    encode = msgspec.json.Encoder().encode
    for n, given in enumerate(cases, 1):
        case = given if isinstance(given, schema.Case) else _case(given, n, kind, encode)
        checks = checker.check(case, n)
        lines: list[bytes] = []
        encoder.add(case.id, checks, lines)
        written = [check for check in checks if check.reason is None]
        for check, line in zip(written, lines, strict=True):
            yield decode_exact(line) if check.passed is not None else decode_judge(line)


def _case(given: dict[str, Any], n: int, kind: Any, encode: Any) -> schema.Case:
    line = encode(given)
    try:
        case = kind.decode(line)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise InvalidCaseError(kind.reject(n, 0, line, exc)[0]) from None
    problem = kind.check(case, n, line) if kind.check else None
    if problem is not None:
        raise InvalidCaseError(problem[0])
    return case
