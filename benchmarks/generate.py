"""Deterministic generator of realistic evaluation cases (JSONL, one compact object a line).

Usage: ``python -m benchmarks generate OUT.jsonl --size 100MB [--profile normal|long] [--seed 0]``

Determinism: case ``i`` is built from its own ``random.Random`` seeded from ``(seed, i)`` and
cases are written in order until the file reaches ``--size`` (the last case may overshoot).
So a smaller file is an exact byte prefix of a larger one with the same seed and profile, and
the output never depends on the machine, the Python hash seed or the size asked for.

Distribution of one case (``normal`` profile; lengths are in characters and drawn
log-uniformly, so short values are more common than long ones):

* ``id``: ``case-00000042`` (the index); always valid under the baselines' rules.
* ``input``: 20-400 characters; ``output``: 50-3,000.
* ``messages``: absent or empty for ~35% of cases, else 1-30 messages: an optional system
  prompt (30%), then user/assistant turns, plus ``tool`` turns when the case has tool events.
  Content: system 100-1,200, user 20-600, assistant 50-1,500, tool 20-800 characters.
* ``context``: absent for ~30%, else 1-8 passages of 200-2,000 characters.
* ``policy``: on ~50% of cases, 100-1,500 characters.
* ``toolEvents``: absent for ~40%, else 1-10 events over a dozen tool names; ~15% fail (with an
  ``error`` string and usually no output). ``input`` is an object of mixed values (strings,
  ints, 2-decimal floats, booleans, nulls, lists, nested objects); ``output`` is an object
  (50%), a string (20%), a list (15%), a number (10%), a boolean (3%) or ``null`` (2%).
* ~10% of cases write all their text from a vocabulary mixing English with accented words,
  CJK words and emoji; the rest are plain ASCII.
* ``metadata`` (95%): ``scenario`` (one of 12) and ``split`` (``dev`` 30% / ``test`` 70%).
* ``expected`` (80%): 1-4 of the rubric ids tool-backed-claims, claim-support, policy-compliance,
  escalation, each ``{status: pass 60% | fail 30% | na 10%, source: synthetic 50% | human 30%
  | imported 20%}``.

``long`` profile: each case is a normal one, except ~20% are "big": 20-60 long messages and
6-12 long passages with a text budget of 28,000-48,000 tokens at ~5.3 characters a token.
Measured with cl100k on the JSON of the state fields (first 2,000 cases, seed 0): ASCII big
cases hold 28,000-51,000 tokens (median ~38,600; ~86% over 32,000), non-ASCII ones (denser
in tokens) 43,000-75,000. The non-big cases of the long profile are identical to the normal
profile's cases at the same index.

Sizes and speed (seed 0): 100 MB is ~12,000 normal or ~1,900 long cases; generation runs at
~17-20 MB/s on one core (1 GB in about a minute) in ~30 MiB of memory.

Text is words drawn with Zipf-like weights from a fixed vocabulary (support/travel domain),
cut into capitalised sentences; it is meant to look like prose, not to mean anything.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

from benchmarks.spec import CASE_KEYS, RUBRIC_IDS

JSON = Any

PROFILES: Final = ("normal", "long")
GENERATOR_VERSION: Final = 2  # bump whenever the bytes generated for a (seed, profile) change
_INDEX_BITS: Final = 40
_FLUSH_BYTES: Final = 4 << 20

_ENGLISH: Final = """
the to and a of you your for is we that this in it be on with have will can please booking
flight hotel reservation refund ticket policy customer agent request check confirm cancel
change date time travel trip passenger seat fare fee baggage luggage upgrade room night stay
airport gate departure arrival delay delayed cancellation cancelled voucher credit card payment
charge charged amount total price receipt invoice email phone number account profile loyalty
points miles status member support team help assist issue problem sorry apologize understand
thank thanks let me know if there any other questions about our as per according terms rules
conditions eligible eligibility window hours days within before after until when because
however also only not no yes all some more than less free additional extra standard premium
economy business first class window aisle checked carry-on allowance weight limit kilogram
bag bags item items lost found claim claims report file submit form document documents
passport visa id identification name last first middle spelling correct correction update
updated new old original rebook rebooking alternative option options available availability
schedule scheduled itinerary segment connection connecting layover direct nonstop route
destination origin city country local international domestic service services support agent
manager supervisor escalate escalation review reviewed approve approved deny denied pending
processing processed business days weeks month year today tomorrow yesterday morning evening
would could should might must may need needs want wants like would like asked ask tell told
said say see look looked find found get got give given make made take taken send sent receive
received provide provided include included require required allow allowed offer offered
was were has had been being are is am do does did done going go went come came back again
still already just now then soon later recently currently previously usually typically often
our their his her its my me us them they he she i it's don't can't won't we're you're i'm
customer's agent's booking's reference code confirmation number record locator pnr
compensation goodwill gesture exception exceptions waiver waived penalty penalties non-refundable
refundable partial full balance difference remaining original payment method bank transfer
""".split()

_NAMES: Final = """
Paris London Tokyo Berlin Madrid Lisbon Rome Dublin Oslo Vienna Prague Warsaw Chicago Denver
Boston Seattle Toronto Sydney Singapore Dubai Nairobi Lima Bogota Mumbai Delhi Seoul Osaka
Alice Bob Carol David Emma Farid Grace Hiro Ines Jonas Keiko Liam Maria Noah Olga Priya
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January March June September December
""".split()

_FOREIGN: Final = """
café résumé naïve déjà señor niño mañana jalapeño façade fiancée über straße größe müssen
réservation billet remboursement annulation vol hôtel bagages retard correspondance
reserva vuelo equipaje cancelación devolución política aeropuerto llegada salida
予約 航空券 払い戻し キャンセル 空港 出発 到着 荷物 ホテル 遅延 変更 確認 ありがとうございます
预订 机票 退款 取消 机场 行李 酒店 航班 延误 改签 确认 谢谢 客服 政策
예약 항공권 환불 취소 공항 수하물 호텔 감사합니다
✈️ 🧳 🏨 😊 🙏 👍 ⏰ 💳 📧 ✅ ❌ 🌍
""".split()

_SCENARIOS: Final = (
    "flight-cancellation",
    "refund-request",
    "baggage-claim",
    "seat-upgrade",
    "hotel-booking",
    "loyalty-points",
    "visa-question",
    "payment-dispute",
    "name-correction",
    "delay-compensation",
    "itinerary-change",
    "accessibility-request",
)
_TOOLS: Final = (
    "search_flights",
    "get_booking",
    "cancel_booking",
    "issue_refund",
    "lookup_policy",
    "send_email",
    "check_availability",
    "get_weather",
    "update_profile",
    "escalate_ticket",
    "calculate_fare",
    "translate_text",
)
_KEYS: Final = (
    "booking_id",
    "passenger_count",
    "origin",
    "destination",
    "date",
    "amount",
    "currency",
    "refundable",
    "fare_class",
    "segments",
    "notes",
    "reason",
    "customer_id",
    "priority",
    "promo_code",
    "seat",
    "status",
    "tags",
    "options",
    "query",
    "limit",
    "score",
)
_ERRORS: Final = (
    "TimeoutError: upstream reservation service did not answer within 30s",
    "PermissionDenied: agent role cannot issue refunds above the limit",
    "NotFound: no booking matches the given reference",
    "ValidationError: date must be in the future",
    "RateLimited: too many requests, retry after 12 seconds",
)


class _Vocabulary:
    """A word list with Zipf-like cumulative weights and its mean word length (plus a space)."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        weights = [1.0 / (rank + 8) for rank in range(len(words))]
        self.cum_weights = list(itertools.accumulate(weights))
        self.mean_len = sum((len(w) + 1) * wt for w, wt in zip(words, weights, strict=True))
        self.mean_len /= self.cum_weights[-1]


def _interleave(base: list[str], extra: list[str], every: int) -> list[str]:
    """Return ``base`` with one word of ``extra`` (cycled) after each ``every`` base words."""
    out: list[str] = []
    extras = itertools.cycle(extra)
    for i, word in enumerate(base):
        out.append(word)
        if i % every == every - 1:
            out.append(next(extras))
    return out


_ASCII_WORDS: Final = [*dict.fromkeys(_ENGLISH), *_NAMES]
ASCII_VOCAB: Final = _Vocabulary(_ASCII_WORDS)
INTL_VOCAB: Final = _Vocabulary(_interleave(_ASCII_WORDS, _FOREIGN, 2))
_ENDINGS: Final = "......?!"


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    """Return an int in ``[lo, hi]`` drawn log-uniformly (small values are more likely)."""
    return min(hi, int(lo * math.exp(rng.random() * math.log((hi + 1) / lo))))


def text(rng: random.Random, vocab: _Vocabulary, lo: int, hi: int) -> str:
    """Return sentence-like prose of ``lo``-``hi`` characters (log-uniform length)."""
    return prose(rng, vocab, _log_uniform(rng, lo, hi), lo)


def prose(rng: random.Random, vocab: _Vocabulary, length: int, lo: int = 1) -> str:
    """Return capitalised sentences of vocabulary words, at least ``lo`` and at most ``length``
    characters long (cut at a word boundary when that keeps ``lo``)."""
    k = int(length / vocab.mean_len * 1.25) + 4
    words = rng.choices(vocab.words, cum_weights=vocab.cum_weights, k=k)
    _punctuate(rng, words)
    out = " ".join(words)
    if len(out) <= length:
        return out
    cut = out.rfind(" ", lo, length)
    return out[:cut] if cut > 0 else out[:length]


def _punctuate(rng: random.Random, words: list[str]) -> None:
    """Cut ``words`` in place into sentences of 4-17 words: capitalise each first word and
    end each sentence with a full stop, a question or an exclamation mark."""
    rand = rng.random
    start, n = 0, len(words)
    while start < n:
        words[start] = words[start].capitalize()
        end = start + 4 + int(rand() * 14)
        if end > n:
            end = n
        words[end - 1] += _ENDINGS[int(rand() * len(_ENDINGS))]
        start = end


def _scalar(rng: random.Random) -> JSON:
    """Return a random JSON scalar: a string, an int, a 2-decimal float, a bool or null."""
    r = rng.random()
    if r < 0.40:
        return " ".join(rng.choices(ASCII_VOCAB.words, k=1 + int(rng.random() * 4)))
    if r < 0.65:
        return int(rng.random() * 10_000)
    if r < 0.85:
        return round(0.5 + rng.random() * 5_000, 2)
    if r < 0.95:
        return rng.random() < 0.5
    return None


def _value(rng: random.Random, depth: int) -> JSON:
    """Return a random JSON value: mostly scalars, sometimes lists or objects (to ``depth``)."""
    r = rng.random()
    if depth > 0 and r < 0.12:
        return [_scalar(rng) for _ in range(int(rng.random() * 6))]
    if depth > 0 and r < 0.20:
        return _object(rng, depth - 1, 1, 4)
    return _scalar(rng)


def _object(rng: random.Random, depth: int, lo: int, hi: int) -> dict[str, JSON]:
    """Return a JSON object of ``lo``-``hi`` distinct keys with mixed-type values."""
    keys = rng.sample(_KEYS, rng.randint(lo, hi))
    return {key: _value(rng, depth) for key in keys}


def _tool_output(rng: random.Random, vocab: _Vocabulary) -> JSON:
    """Return a tool output: an object, a string, a list, a number, a boolean or null."""
    r = rng.random()
    if r < 0.50:
        return _object(rng, 2, 1, 8)
    if r < 0.70:
        return text(rng, vocab, 20, 600)
    if r < 0.85:
        return [_object(rng, 1, 1, 4) for _ in range(rng.randint(0, 6))]
    if r < 0.95:
        return round(rng.random() * 1_000, 2) if rng.random() < 0.5 else rng.randint(0, 99_999)
    if r < 0.98:
        return rng.random() < 0.5
    return None


def _tool_events(rng: random.Random, vocab: _Vocabulary, count: int) -> list[dict[str, JSON]]:
    """Return ``count`` tool events; ~15% fail with an error and (usually) no output."""
    events: list[dict[str, JSON]] = []
    for i in range(count):
        failed = rng.random() < 0.15
        event: dict[str, JSON] = {
            "id": f"t{i + 1}",
            "name": rng.choice(_TOOLS),
            "status": "failure" if failed else "success",
            "input": _object(rng, 2, 1, 6),
        }
        if not failed or rng.random() < 0.2:
            event["output"] = _tool_output(rng, vocab)
        if failed:
            event["error"] = rng.choice(_ERRORS)
        events.append(event)
    return events


_ROLE_LENGTHS: Final = {
    "system": (100, 1_200),
    "user": (20, 600),
    "assistant": (50, 1_500),
    "tool": (20, 800),
}


def _roles(rng: random.Random, count: int, with_tools: bool) -> list[str]:
    """Return ``count`` roles: maybe a system prompt, then user/assistant turns with ``tool``
    turns after some assistant turns when the case used tools."""
    roles = ["system"] if count and rng.random() < 0.3 else []
    turn = "user"
    while len(roles) < count:
        roles.append(turn)
        if turn == "assistant" and with_tools and rng.random() < 0.4:
            roles.append("tool")
        turn = "assistant" if turn == "user" else "user"
    return roles[:count]


def _messages(
    rng: random.Random, vocab: _Vocabulary, count: int, with_tools: bool
) -> list[dict[str, str]]:
    """Return ``count`` messages with role-dependent content lengths."""
    return [
        {"id": f"m{i + 1}", "role": role, "content": text(rng, vocab, *_ROLE_LENGTHS[role])}
        for i, role in enumerate(_roles(rng, count, with_tools))
    ]


def _passages(
    rng: random.Random, vocab: _Vocabulary, count: int, lo: int, hi: int
) -> list[dict[str, str]]:
    """Return ``count`` reference passages of ``lo``-``hi`` characters."""
    return [{"id": f"p{i + 1}", "text": text(rng, vocab, lo, hi)} for i in range(count)]


def _expected(rng: random.Random) -> dict[str, dict[str, str]]:
    """Return labels for 1-4 rubric ids with mixed status and source."""
    rubrics = rng.sample(RUBRIC_IDS, rng.randint(1, len(RUBRIC_IDS)))
    return {
        rubric: {
            "status": rng.choices(("pass", "fail", "na"), cum_weights=(60, 90, 100))[0],
            "source": rng.choices(("synthetic", "human", "imported"), cum_weights=(5, 8, 10))[0],
        }
        for rubric in rubrics
    }


def _optional_list(rng: random.Random, items: list[Any]) -> list[Any] | None:
    """Return ``items``, or for an empty list either ``None`` (absent, 80%) or ``[]``."""
    if items or rng.random() < 0.2:
        return items
    return None


def normal_case(rng: random.Random, index: int, vocab: _Vocabulary) -> dict[str, JSON]:
    """Return the normal-profile case number ``index`` drawn from ``rng``, written in ``vocab``."""
    n_tools = 0 if rng.random() < 0.40 else rng.randint(1, 10)
    n_messages = 0 if rng.random() < 0.35 else rng.randint(1, 30)
    n_passages = 0 if rng.random() < 0.30 else rng.randint(1, 8)
    case: dict[str, JSON] = {
        "id": f"case-{index:08d}",
        "input": text(rng, vocab, 20, 400),
        "output": text(rng, vocab, 50, 3_000),
        "messages": _optional_list(rng, _messages(rng, vocab, n_messages, n_tools > 0)),
        "context": _optional_list(rng, _passages(rng, vocab, n_passages, 200, 2_000)),
        "policy": text(rng, vocab, 100, 1_500) if rng.random() < 0.5 else None,
        "toolEvents": _optional_list(rng, _tool_events(rng, vocab, n_tools)),
    }
    if rng.random() < 0.95:
        split = "dev" if rng.random() < 0.3 else "test"
        case["metadata"] = {"scenario": rng.choice(_SCENARIOS), "split": split}
    if rng.random() < 0.80:
        case["expected"] = _expected(rng)
    return {key: value for key, value in case.items() if value is not None}


CHARS_PER_TOKEN: Final = 5.3  # measured with cl100k on this generator's ASCII prose


def make_big(rng: random.Random, case: dict[str, JSON], vocab: _Vocabulary) -> dict[str, JSON]:
    """Replace the messages and passages of ``case`` so its judge state holds about
    28,000-48,000 tokens of text: 75% in 20-60 messages, 25% in 6-12 passages."""
    budget = rng.uniform(28_000, 48_000) * CHARS_PER_TOKEN
    n_messages, n_passages = rng.randint(20, 60), rng.randint(6, 12)
    roles = _roles(rng, n_messages, "toolEvents" in case)
    per_message = 0.75 * budget / n_messages
    per_passage = 0.25 * budget / n_passages
    case["messages"] = [
        {
            "id": f"m{i + 1}",
            "role": role,
            "content": prose(rng, vocab, int(per_message * rng.uniform(0.6, 1.4))),
        }
        for i, role in enumerate(roles)
    ]
    case["context"] = [
        {"id": f"p{i + 1}", "text": prose(rng, vocab, int(per_passage * rng.uniform(0.6, 1.4)))}
        for i in range(n_passages)
    ]
    return case


def make_case(seed: int, index: int, profile: str) -> dict[str, JSON]:
    """Return case ``index`` of ``profile`` for ``seed``; a pure function of its arguments."""
    rng = random.Random((seed << _INDEX_BITS) | index)
    big = rng.random() < 0.20 and profile == "long"
    vocab = INTL_VOCAB if rng.random() < 0.10 else ASCII_VOCAB
    case = normal_case(rng, index, vocab)
    if big:
        case = make_big(rng, case, vocab)
    return {key: case[key] for key in CASE_KEYS if key in case}


def iter_lines(seed: int, profile: str) -> Iterator[bytes]:
    """Yield the encoded lines (with their newline) of an endless case stream."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    if not 0 <= seed < 1 << 20:
        raise ValueError("seed must be in [0, 2**20)")
    encoder = msgspec.json.Encoder()
    for index in itertools.count():
        yield encoder.encode(make_case(seed, index, profile)) + b"\n"


def generate(path: Path, size: int, *, profile: str = "normal", seed: int = 0) -> tuple[int, int]:
    """Write cases to ``path`` until it holds at least ``size`` bytes; return (cases, bytes).

    The file is written to a temporary name and renamed into place when complete.
    """
    tmp = path.with_name(path.name + ".partial")
    written = cases = 0
    chunk: list[bytes] = []
    chunk_bytes = 0
    with open(tmp, "wb") as out:
        for line in iter_lines(seed, profile):
            if written >= size:
                break
            chunk.append(line)
            chunk_bytes += len(line)
            written += len(line)
            cases += 1
            if chunk_bytes >= _FLUSH_BYTES:
                out.write(b"".join(chunk))
                chunk, chunk_bytes = [], 0
        out.write(b"".join(chunk))
    os.replace(tmp, path)
    return cases, written


_UNITS: Final = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
}


def parse_size(value: str) -> int:
    """Parse ``100MB``, ``1GB``, ``1.5GiB`` or ``12345`` into bytes (KB/MB/GB are decimal)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", value)
    unit = match.group(2).upper() if match else ""
    if not match or unit not in _UNITS:
        raise ValueError(f"bad size {value!r}; try 100MB, 1GB or 512MiB")
    return int(float(match.group(1)) * _UNITS[unit])


def format_size(size: int) -> str:
    """Return ``size`` bytes as the shortest exact decimal label: ``100MB``, ``1GB``, ``1234B``."""
    for unit in ("GB", "MB", "KB"):
        if size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return f"{size}B"
