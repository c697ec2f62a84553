"""The one request builder: a judge state and its question -> the exact bytes sent to a judge.

The system message is the state's question (which opens with the untrusted-data preamble)
and a fixed answer instruction; the user message is the judge state as JSON, exactly as
``build`` wrote it. The provider (``JudgeConfig.api``, from ``evalstream._judge.providers``)
gives the body its shape and asks for the answer with structured output: an OpenAI
``response_format`` JSON schema in strict mode, or an Anthropic tool the model is forced to
call. The body is encoded once, deterministically (msgspec, fields in declaration order);
those bytes, with the provider's name and URL, are what is hashed into the store key; they
are printed by ``--show-request`` and sent. Nothing here knows about HTTP: batch files reuse
it.

A pairwise state (``build --pair-with``) is asked with its own answer instruction and schema
(``PAIR_ANSWER_INSTRUCTION``, ``answer.PREFERENCE``): ``JudgeConfig.pairwise`` is the same
judge config asking in that form, and ``JudgeConfig.of`` picks the config of a state.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import msgspec
import xxhash

# The answer instructions and the system text are written once, beside the preamble, where
# build's budget counts them too (``_checks.state``).
from evalstream._checks.state import ANSWER_INSTRUCTION as ANSWER_INSTRUCTION
from evalstream._checks.state import PAIR_ANSWER_INSTRUCTION as PAIR_ANSWER_INSTRUCTION
from evalstream._checks.state import system_text as system_text
from evalstream._checks.tokens import DEFAULT_OUTPUT
from evalstream._judge.answer import FORMS, PREFERENCE, VERDICT, Parsed
from evalstream._judge.providers import DEFAULT, NAMES, Provider, get
from evalstream.errors import UsageError

if TYPE_CHECKING:
    from evalstream._verdicts.records import JudgeInfo

DEFAULT_MAX_OUTPUT_TOKENS = DEFAULT_OUTPUT
# The settings a provider may read beyond the shared ones (``Provider.settings``).
SETTINGS = ("reasoning_effort", "thinking_budget", "deployment", "api_version", "region")
DEFAULT_TEMPERATURE = 0.0


@dataclass(frozen=True)
class JudgeConfig:
    """Who is asked, and how: everything besides the state that shapes a request."""

    model: str
    provider: str = DEFAULT  # a name of the registry (evalstream._judge.providers)
    base_url: str = ""  # empty: the provider's public endpoint
    temperature: float | None = DEFAULT_TEMPERATURE  # None: not sent (some models refuse it)
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    # How the answer is asked for: "" is the provider's default (its response_formats[0]).
    response_format: str = ""
    reasoning_effort: str | None = None  # OpenAI's (and Azure's) reasoning models
    thinking_budget: int | None = None  # Anthropic's extended thinking, Gemini's thinking
    deployment: str = ""  # Azure: the deployment ("": named as the model)
    api_version: str = ""  # Azure: the api-version ("": the provider's default)
    region: str = ""  # Bedrock: the AWS region ("": AWS_REGION, else the provider's)
    # --confidence (issue 29): ask for the tokens' log probabilities where the provider can
    # (``Provider.logprobs``); the body, so the store key, changes only when it is asked.
    confidence: bool = False
    encoder: msgspec.json.Encoder = field(default_factory=msgspec.json.Encoder, repr=False,
                                          compare=False)
    # Whether `na` may be answered: false for a rubric with `allows_na = false` (its judge
    # states say so), whose requests leave `na` out of the instruction and of the schema
    # every provider asks for (``answering``).
    allows_na: bool = True
    # The form of the answer asked for (answer.FORMS): a pointwise verdict, or a pairwise
    # state's preference (``pairwise``). Part of every body, and so of ``hash``.
    answer: str = VERDICT.name

    def __post_init__(self) -> None:
        if self.provider not in NAMES:
            raise UsageError(f"--provider must be one of {', '.join(NAMES)}, not "
                             f"{self.provider!r}.")
        api = self.api
        formats = api.response_formats
        if not self.response_format:
            object.__setattr__(self, "response_format", formats[0])
        elif self.response_format not in formats:
            raise UsageError(f"--response-format {self.response_format} is not one --provider "
                             f"{self.provider} takes: {', '.join(formats)} (default "
                             f"{formats[0]}).")
        for setting in SETTINGS:
            if getattr(self, setting) not in (None, "") and setting not in api.settings:
                takers = [p for p in NAMES if setting in get(p).settings]
                raise UsageError(f"--{setting.replace('_', '-')} applies to --provider "
                                 f"{', '.join(takers)} only, not {self.provider}.")
        if not self.model.strip():
            raise UsageError("--model must name a model (e.g. gpt-4.1-mini).")
        if self.max_output_tokens <= 0:
            raise UsageError("--max-output-tokens must be positive.")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise UsageError(f"--temperature must be between 0 and 2, not {self.temperature}.")
        assert self.answer in FORMS, self.answer
        base_url = self.base_url or api.default_base_url(self)
        if not base_url:
            raise UsageError(f"--provider {self.provider} needs --base-url: {api.base_url_help}.")
        object.__setattr__(self, "base_url", check_base_url(base_url, api.url_query))
        api.check(self)

    @cached_property
    def api(self) -> Provider:
        """The provider's module: everything that differs between providers' APIs."""
        return get(self.provider)

    @cached_property
    def pairwise(self) -> JudgeConfig:
        """This judge, asked in the pairwise form (the states of ``build --pair-with``), whose
        answer never has ``na`` (a tie is ``"tie"``), nor a pass/fail/na status token to read
        a confidence from: ``--confidence`` asks it nothing more (its bodies, so its store
        keys, are as without it), and a pair's verdict carries no confidence (issue 29)."""
        return replace(self, answer=PREFERENCE.name, allows_na=False, confidence=False)

    def of(self, state: Any) -> JudgeConfig:
        """The config that asks a judge state (read by ``inputs``): its pairwise twin for a
        state with a ``pair``, else this one as the state's rubric allows ``na`` or not."""
        return self.answering(state.allows_na) if state.pair is None else self.pairwise

    def parse(self, body: bytes) -> Parsed:
        """A stored answer to one of this config's requests, read in its form."""
        return self.api.parse(body, FORMS[self.answer])

    @cached_property
    def url(self) -> str:
        """Where requests are sent."""
        return self.api.url(self)

    @property
    def host(self) -> str:
        """The server's host (and port, when given): what a verdict records of the URL."""
        parts = urlsplit(self.base_url)
        assert parts.hostname is not None
        return parts.hostname + (f":{parts.port}" if parts.port else "")

    @cached_property
    def hash(self) -> str:
        """xxh3-128 of everything besides the state and question that shapes a request: the
        provider, URL, model, parameters, answer instruction and schema."""
        template = self.body("", "{}")
        return xxhash.xxh3_128(f"{self.provider}\n{self.url}\n".encode() + template).hexdigest()

    def settings(self) -> dict[str, object]:
        """The provider's settings this config gives (what a batch manifest keeps of them)."""
        given = {name: getattr(self, name) for name in SETTINGS}
        return {"response_format": self.response_format,
                **{k: v for k, v in given.items() if v not in (None, "")}}

    @cached_property
    def info(self) -> JudgeInfo:
        """Who judged, as every verdict of this config records it (the temperature the body
        carries: None where the provider sends none, as to a reasoning model)."""
        from evalstream._verdicts.records import JudgeInfo

        return JudgeInfo(self.model, self.provider, self.host, self.api.sent_temperature(self),
                         self.hash)

    @cached_property
    def _key_prefix(self) -> hashlib._Hash:
        # The key's hash, fed the provider and URL once: a request copies it and adds its body
        # (urlsplit and the prefix's hashing once a request cost ~10 us of a batch prepare's
        # ~60 us a state).
        return hashlib.sha256(f"{self.provider}\n{self.url}\n".encode())

    def body(self, question: str, state: str) -> bytes:
        """The request body for one judge state (its JSON text) and its question."""
        return self.api.body(self, self.system(question), state)

    def system(self, question: str) -> str:
        """The system text of a request with this question: the answer instruction of this
        config's form (a pairwise preference, or a verdict with or without ``na``)."""
        return system_text(question, self.allows_na, self.answer == PREFERENCE.name)

    @cached_property
    def _without_na(self) -> JudgeConfig:
        return replace(self, allows_na=False)

    def answering(self, allows_na: bool) -> JudgeConfig:
        """This config for a judge state whose rubric does (or does not) allow ``na`` (a
        pairwise config never asks for ``na``: it is itself)."""
        if self.answer != VERDICT.name or allows_na == self.allows_na:
            return self
        return self._without_na


def check_base_url(url: str, query: tuple[str, ...] = ()) -> str:
    """``url`` without its trailing slashes, once it is known to be usable: http or https, a
    host whose name can be looked up, a port from 1 to 65535, no user, password, query or
    fragment, no space or invisible character. Raises UsageError otherwise, with a sentence
    that never repeats a user, password, query or fragment (any of them may hold a secret).
    ``query``: the parameters a provider's URL may carry (Azure's ``api-version``), each
    once, whose values are not secrets; any other is refused.

    This is the one check of a base URL, where it is read (``JudgeConfig``: judge, batch
    prepare, a batch's manifest): the port, the brackets of an IPv6 address and the host
    name are otherwise read only when the first request is sent, as an exception in it.
    """
    head, mark, tail = url.partition("?")
    url = head.rstrip("/") + mark + tail
    shown = shown_url(url)
    example = "such as http://127.0.0.1:8000/v1"
    if not url.isprintable() or any(c.isspace() for c in url):
        raise UsageError(f"--base-url {shown} holds a space or an invisible character; give the "
                         f"URL alone, {example}.")
    authority = (url.split("//", 1)[1] if "//" in url else url).split("/", 1)[0]
    if "@" in authority:  # before parsing: a URL that cannot be parsed may hold a password
        raise UsageError(f"--base-url {shown} must not carry a user or password: API keys are "
                         "read from the environment only (--api-key-env).")
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:
        raise UsageError(f"--base-url {shown} is not a URL (an IPv6 address is written in "
                         f"brackets, [::1]); give one {example}.") from None
    if parts.scheme not in ("http", "https") or not hostname:
        raise UsageError(f"--base-url must be an http:// or https:// URL {example}, not "
                         f"{shown}.")
    names = [name for name, _, _ in (pair.partition("=") for pair in parts.query.split("&"))
             if parts.query]
    if parts.fragment or any(names.count(n) > 1 or n not in query for n in names):
        allowed = f" other than {', '.join(query)}" if query else ""
        raise UsageError(f"--base-url {shown} must not carry a query{allowed} or fragment: "
                         "API keys are read from the environment only (--api-key-env).")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or parts.netloc.endswith(":"):
        raise UsageError(f"--base-url {shown}: the port must be a number from 1 to 65535.")
    if not parts.netloc.startswith("["):
        try:
            hostname.encode("idna")  # what the connection does with it
        except UnicodeError:
            raise UsageError(f"--base-url {shown} has no usable host name (a part of it is "
                             "empty or longer than 63 characters).") from None
    return url


def shown_url(url: str) -> str:
    """``url`` as a message may repeat it: quoted, without what a secret may hide in (anything
    before the last ``@`` but the scheme, the query, the fragment), cut to 200 characters.
    Works on text that is not a URL at all."""
    scheme, sep, rest = url.partition("//") if "//" in url else ("", "", url)
    if "@" in rest:
        rest = "\u2026@" + rest.rsplit("@", 1)[1]
    text = (scheme + sep + rest).split("?", 1)[0].split("#", 1)[0]
    if len(text) > 200:
        text = text[:199] + "\u2026"
    return repr(text)


class Request(NamedTuple):
    """The bytes sent for one judge state, and the store key they hash to."""

    body: bytes
    key: str


def request_key(config: JudgeConfig, body: bytes) -> str:
    """SHA-256 (hex, 64 characters: also a valid batch ``custom_id``) of the provider, the
    URL and the body: the same request is the same key whatever dataset it came from."""
    digest = config._key_prefix.copy()
    digest.update(body)
    return digest.hexdigest()


def sample_key(key: str, sample: int) -> str:
    """The store key of sample ``sample`` (from 0) of the request whose key is ``key``
    (issue 26): sample 0 is the request's own key, so single-judge runs and the stores they
    wrote are unchanged; sample i > 0 is SHA-256 of the key and ``#sample i``. Samples of one
    request are distinct store entries whether each was asked alone or all in one request
    with ``n`` (``Provider.samples_body``): the key says which sample, not how it was
    asked."""
    if sample == 0:
        return key
    return hashlib.sha256(f"{key}#sample {sample}".encode()).hexdigest()


def build(config: JudgeConfig, question: str, state: str, allows_na: bool = True) -> Request:
    """The request for one judge state (``allows_na``: whether its rubric allows ``na``)."""
    body = config.answering(allows_na).body(question, state)
    return Request(body, request_key(config, body))
