"""Result files read through the one read loop (``cases.reading.RecordReader``): each line is a
result of this batch, a blank (counted) or a reject with its line, JSON path and a sentence:
a line that is not JSON, not of the provider's result format (a request line, the other
provider's result), or whose ``custom_id`` is not a request of this batch."""

from __future__ import annotations

import msgspec

from evalstream._cases import rejects
from evalstream._cases.reading import Problem, RecordKind
from evalstream._cases.rejects import Reject, raw_text
from evalstream._files.lines import LongLine
from evalstream._judge.batch import formats
from evalstream._judge.batch.manifest import Manifest
from evalstream._judge.providers.base import Provider

NOT_A_RESULT = "not a result"
UNKNOWN = "unknown custom_id"
SHAPE = rejects.Shape(
    noun="batch result",
    required=("custom_id",),
    fields={"$": ("id", "custom_id", "response", "error", "result"),
            "$.response": ("status_code", "request_id", "body"),
            "$.result": ("type", "message", "error")},
    allowed={"$.result.type": ", ".join(formats.RESULT_TYPES)},
    id_field="custom_id",
    too_long="raise --max-line-bytes to read it",
)


def _shown(custom_id: str) -> str:
    return custom_id if len(custom_id) <= 80 else f"{custom_id[:80]}... ({len(custom_id):,} " \
        "characters)"


def kind(api: Provider, manifest: Manifest, folder: str) -> RecordKind[formats.ResultLine]:
    """How result lines of a batch prepared for the provider ``api`` are read."""
    requests = manifest.count("requests")

    def reject(line_no: int, offset: int, line: bytes, exc: BaseException) -> Problem:
        return (rejects.reject(line_no, offset, line, exc, SHAPE),
                rejects.reject_kind(exc, line, SHAPE))

    def too_long(item: LongLine, limit: int) -> Reject:
        return rejects.long_line_reject(item, limit, SHAPE)

    def check(result: formats.ResultLine, line_no: int, line: bytes) -> Problem | None:
        wrong = api.result_problem(result)
        if wrong is not None:
            return Reject(line_no, 0, _shown(result.custom_id), wrong[0], wrong[1],
                          raw_text(line)), NOT_A_RESULT
        custom_id = result.custom_id
        if not manifest.has_request(custom_id):
            why = ("so this one belongs to another batch (or was edited)"
                   if custom_id == custom_id.lower() or not manifest.has_request(
                       custom_id.lower()) else
                   "exactly as prepare wrote them, in lower case: this one differs from one "
                   "of them in letter case only (edited?)")
            return Reject(line_no, 0, _shown(custom_id), "$.custom_id", (
                f"`custom_id` {_shown(custom_id)!r} is not a request of this batch "
                f"({folder} holds {requests:,} requests); results are matched by custom_id, "
                f"{why}."), raw_text(line)), UNKNOWN
        return None

    return RecordKind(decode=msgspec.json.Decoder(formats.ResultLine).decode, reject=reject,
                      too_long=too_long, check=check)
