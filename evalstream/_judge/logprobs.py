"""How sure the judge was of its status, from the status token's log probabilities (issue 29).

With ``--confidence``, a provider that can (``Provider.logprobs``: OpenAI chat completions,
and vLLM, llama.cpp's server and the other servers that speak them) is asked for each output
token's log probability and its ``TOP_LOGPROBS`` most likely alternatives. The status is read
from the answer by its place in the answer's structure: ``answer.status_at`` walks the answer
object to the first character of the status value, and the token whose bytes cover that
character is the status token (DeepEval's #3000 read a token of the reason by searching the
text for the word). Each alternative at that place that continues the same bytes before the
status value into the start of ``pass``, ``fail`` or ``na`` is that status's probability (the
three begin with different letters, so the first token decides, wherever the rest of the word
is cut); the three are normalised to sum to 1. Nothing is guessed (DeepEval's #1029 fell back
to the top token in silence); how each answer was read is counted (``READINGS``):

- ``read``: the status is the whole of its token (and perhaps the quote after it);
- ``split``: the status value runs over several tokens (read from the first);
- ``own_logprob``: the status token is not among its own top alternatives (a server that
  samples at a temperature can pick one below them): its own log probability is used beside
  them;
- ``alone``: no other status is among the status token's top alternatives: their
  probability is below the least one listed, unknown; given as 0 (the status's as 1);
- ``unaligned``: the tokens do not spell the answer's text, or the status token does not begin
  the status (an escaped value, ``"\\u0070ass"``): no confidence;
- a response without log probabilities: no confidence, and nothing read (None).

Stored with the answer: a re-run, ``--dry-run`` and ``batch collect`` read the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from msgspec import Struct

from evalstream._judge.answer import Parsed, status_at

if TYPE_CHECKING:
    from evalstream._verdicts.records import Confidence

TOP_LOGPROBS = 10  # alternatives asked for each token (OpenAI takes 0 to 20)
# A label's statuses (``_verdicts.records.LABEL_STATUSES``), written here: the providers'
# registry imports this module and every command line reads the registry, which must not
# load the verdict records or the case schema (tests/judge/test_providers.py);
# tests/verdicts/test_verdicts.py fails when the two differ.
STATUSES = ("pass", "fail", "na")
READINGS = ("read", "split", "own_logprob", "alone", "unaligned")


class Alternative(Struct, gc=False):
    """One of a token's most likely alternatives (OpenAI's ``top_logprobs`` item)."""

    token: str
    logprob: float
    bytes: list[int] | None = None


class Token(Struct, gc=False):
    """One output token with its log probability and alternatives (``logprobs.content``)."""

    token: str
    logprob: float
    bytes: list[int] | None = None
    top_logprobs: list[Alternative] = []


def _bytes(t: Token | Alternative) -> bytes:
    # The bytes are the truth where a token is part of a character (its text is then "\ufffd").
    return bytes(t.bytes) if t.bytes is not None else t.token.encode()


def _status_of(rest: bytes) -> str | None:
    """The status that a token's bytes from the status value's start (``rest``) begin, with
    the closing quote and what follows it allowed after a whole word."""
    if not rest:
        return None
    for status in STATUSES:
        whole = status.encode() + b'"'
        if whole.startswith(rest) or rest.startswith(whole):
            return status
    return None


def read(parsed: Parsed, content: str, tokens: Sequence[Token]) -> Parsed:
    """``parsed`` (a scored answer read from ``content``) with the status's confidence from
    the tokens' log probabilities, and how they were read."""
    from evalstream._verdicts.records import Confidence

    if parsed.status not in STATUSES or parsed.at is None:
        return parsed
    unaligned = parsed._replace(confidence_read="unaligned")
    inside = status_at(content[parsed.at:])
    spelled = b"".join(_bytes(t) for t in tokens)
    if inside is None or spelled != content.encode():
        return unaligned
    target = len(content[:parsed.at + inside].encode())
    start = 0
    for token in tokens:
        own = _bytes(token)
        if start + len(own) > target:
            break
        start += len(own)
    else:
        return unaligned
    before = own[:target - start]
    if _status_of(own[len(before):]) != parsed.status:
        return unaligned
    mass = dict.fromkeys(STATUSES, 0.0)
    seen = False
    for alt in token.top_logprobs:
        alt_bytes = _bytes(alt)
        seen = seen or alt_bytes == own
        if alt_bytes.startswith(before):
            status = _status_of(alt_bytes[len(before):])
            if status is not None:
                mass[status] += math.exp(alt.logprob)
    if not seen:
        mass[parsed.status] += math.exp(token.logprob)
    total = sum(mass.values())
    if total <= 0:
        return unaligned
    how = ("own_logprob" if not seen
           else "alone" if sum(1 for q in mass.values() if q > 0) == 1
           else "split" if len(own) - len(before) < len(parsed.status) else "read")
    confidence: Confidence = Confidence(mass["pass"] / total, mass["fail"] / total,
                                        mass["na"] / total, "logprobs")
    return parsed._replace(confidence=confidence, confidence_read=how)


def from_votes(statuses: Sequence[str]) -> Confidence | None:
    """A panel's confidence: the share of its scored votes of each status (``samples``);
    None without a scored vote."""
    from evalstream._verdicts.records import Confidence

    scored = [s for s in statuses if s in STATUSES]
    if not scored:
        return None
    passed, failed, na = (scored.count(s) / len(scored) for s in STATUSES)
    return Confidence(passed, failed, na, "samples")


class ConfidenceReport(Struct):
    """``--confidence`` in the judge's report: where the verdicts' confidence came from, how
    many carry one, how each scored answer's log probabilities were read (``none``: the
    answer had none), and, where none could come, why."""

    source: str | None  # "logprobs", "samples", or None: none could be read
    verdicts: int  # verdicts that carry a confidence
    by_reading: dict[str, int]
    note: str | None


class ConfidenceTally:
    """What a run's verdicts said of their confidence (the judge's pass 2 counts them)."""

    def __init__(self, asked: bool, provider: str = "", can: bool = True,
                 panel: bool = False) -> None:
        self.asked, self.provider, self.can, self.is_panel = asked, provider, can, panel
        self.by_reading = dict.fromkeys((*READINGS, "none"), 0)
        self.verdicts = 0
        self.pairs = 0  # a pair's verdicts (pairwise states): never a confidence

    def add(self, parsed: Parsed) -> None:
        """A single judge's answer, as read."""
        if self.asked and parsed.cause is None:
            self.by_reading[parsed.confidence_read or "none"] += 1
            self.verdicts += parsed.confidence is not None

    def pair(self) -> None:
        """A pair's verdict (issue 28): its preference has no pass/fail/na status token, and
        its requests ask for no log probabilities (``JudgeConfig.pairwise``)."""
        self.pairs += self.asked

    def panel(self, confidence: Confidence | None) -> None:
        """A panel's verdict's confidence (from its votes)."""
        self.verdicts += confidence is not None

    def report(self) -> ConfidenceReport | None:
        """The report's section (None: --confidence was not given)."""
        if not self.asked:
            return None
        if self.is_panel:
            return ConfidenceReport("samples", self.verdicts, {}, None)
        note = None
        if not self.can:
            note = (f"{self.provider} gives no log probabilities: no verdict carries a "
                    "confidence; --samples K (or a jury) gives one from the votes (source "
                    "samples)")
        elif self.by_reading["none"]:
            note = (f"{self.by_reading['none']:,} answers came without log probabilities (a "
                    "server that ignores `logprobs`): their verdicts carry no confidence")
        if self.pairs:
            pairs = (f"{self.pairs:,} pairwise verdicts carry none: a preference has no "
                     "pass/fail/na status token (their requests ask for no log probabilities)")
            note = pairs if note is None else f"{note}; {pairs}"
        return ConfidenceReport("logprobs" if self.can else None, self.verdicts,
                                self.by_reading if self.can else {}, note)
