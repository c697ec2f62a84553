"""The transport's helpers against what a hostile server sends (issue 23): every form of an
echoed key found, the JSON around it kept readable; a key that cannot be a header refused with
a sentence; a ``Retry-After`` that cannot be read is no wait, never an exception."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._judge.transport import (
    MAX_BACKSLASHES,
    REDACTED,
    Secret,
    answer_bytes,
    check_key,
    retry_after,
)
from evalstream.errors import UsageError
from tests.judge.fake_server import ABSURD_DATE
from tests.judge.support import FAKE_KEY, holds_key

# A key inside the marker that replaces it ("[redacte") would be written again by the
# redaction itself: no real key is, and hypothesis found that one.
KEYS = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters='"\\'),
               min_size=8, max_size=40).filter(lambda key: key not in REDACTED)


def _form(key: str, choices: list[str]) -> str:
    """The key as a JSON string's content: each character raw (escaped as JSON must) or as a
    ``\\u`` escape in lower or upper case."""
    out = []
    for c, choice in zip(key, choices, strict=True):
        if choice == "raw":
            out.append(json.dumps(c)[1:-1])
        else:
            digits = f"{ord(c):04x}"
            out.append("\\u" + (digits if choice == "lower" else digits.upper()))
    return "".join(out)


@given(key=KEYS, data=st.data())
def test_every_json_form_of_the_key_is_redacted_and_the_json_stays_readable(
        key: str, data: st.DataObject) -> None:
    choice = st.sampled_from(["raw", "lower", "upper"])

    def form() -> str:
        return _form(key, data.draw(st.lists(choice, min_size=len(key), max_size=len(key))))

    def text() -> str:  # any text, as JSON writes it (a trailing backslash included)
        return json.dumps(data.draw(st.text(max_size=12)))[1:-1]

    # Escaped once in the body (an id), and inside the answer's JSON (escaped twice).
    inner = '{"status": "pass", "reason": "' + text() + form() + text() + '"}'
    body = ('{"id": "' + text() + form() + '", "content": ' + json.dumps(inner)
            + ', "raw": ' + json.dumps(text() + key) + "}")
    assert holds_key(body.encode(), key)  # the check has teeth
    redacted = Secret(key).redact(body.encode())
    assert not holds_key(redacted, key)
    if key[0] in "0123456789abcdefABCDEFu":
        return  # a match may start inside an escape: the key goes, the JSON may not stay
    read = json.loads(redacted)
    assert json.loads(read["content"])["status"] == "pass"
    assert "[redacted]" in read["id"] and "[redacted]" in json.loads(read["content"])["reason"]


@given(key=KEYS, text=st.text(max_size=40))
def test_text_without_the_key_is_unchanged(key: str, text: str) -> None:
    if key not in text and "\\" not in text:
        assert Secret(key).redact_text(text) == text
        assert Secret(key).redact(text.encode()) == text.encode()


def test_lone_surrogates_in_a_header_survive_redaction() -> None:
    secret = Secret(FAKE_KEY)
    assert secret.redact_text("caf\udce9 " + FAKE_KEY) == "caf\udce9 [redacted]"
    assert Secret(None).redact(b"x" + FAKE_KEY.encode()) == b"x" + FAKE_KEY.encode()


@pytest.mark.parametrize("run", [MAX_BACKSLASHES + 1, 1000])
def test_a_form_under_more_backslashes_than_any_reader_decodes_is_still_redacted(
        run: int) -> None:
    # Then the backslashes before it are not all taken: the key goes, the JSON may not stay.
    deep = "\\" * run + "u0073" + FAKE_KEY[1:]
    redacted = Secret(FAKE_KEY).redact(deep.encode())
    assert redacted == b"\\" * (run - MAX_BACKSLASHES) + b"[redacted]"


@pytest.mark.parametrize(("key", "said"), [
    (FAKE_KEY + "\r", "holds a carriage return (CR) at its end"),
    (FAKE_KEY + "\n", "holds a line feed (LF) at its end"),
    ("Bearer " + FAKE_KEY, "holds a space at character 7 of"),
    (FAKE_KEY[:5] + "\t" + FAKE_KEY[5:], "holds a tab at character 6"),
    (FAKE_KEY[:5] + "\x00" + FAKE_KEY[5:], "holds the character U+0000 at character 6"),
    (FAKE_KEY[:5] + "\u00e9" + FAKE_KEY[5:], "holds the character U+00E9"),
    (FAKE_KEY[:5] + "\\" + FAKE_KEY[5:], "holds a backslash at character 6"),
    ('"' + FAKE_KEY + '"', "holds a double quote at character 1"),
])
def test_a_key_no_header_can_carry_is_a_sentence(key: str, said: str) -> None:
    with pytest.raises(UsageError, match=re.escape(said)) as caught:
        check_key("OPENAI_API_KEY", key)
    message = str(caught.value)
    assert message.startswith("OPENAI_API_KEY holds") and FAKE_KEY[6:] not in message


@pytest.mark.parametrize("value", [ABSURD_DATE, "Wed, 21 Oct 99999 07:28:00 GMT",
                                   "Wed, 21 Oct 2015 07:28:00 -9999", "0, 0 0 0 0:0:0", "",
                                   "nan", "-5", "Wed, 32 Oct 2015 07:28:00 GMT"])
def test_a_retry_after_that_cannot_be_read_is_no_wait(value: str) -> None:
    assert retry_after({"retry-after": value}) is None


@given(st.text(max_size=60))
def test_retry_after_never_raises(value: str) -> None:
    for name in ("retry-after", "retry-after-ms"):
        wait = retry_after({name: value})
        assert wait is None or wait >= 0


def test_the_answer_bound_follows_max_output_tokens() -> None:
    assert answer_bytes(1024) == (1 << 20) + 1024 * 1024
    assert answer_bytes(16) < answer_bytes(17)
