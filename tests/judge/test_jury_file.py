"""The jury file (issue 26): what it reads, and every way it can be wrong, each a sentence
naming the file, the juror and the key, before any state is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstream._judge.jury import JUROR_KEYS, parse, read, single
from evalstream._judge.request import JudgeConfig
from evalstream.errors import JuryError, UsageError

GOOD = """
rule = "unanimous-pass"
name = "small-panel"

[[judge]]
name = "mini"
model = "gpt-4.1-mini"
price_in = 0.4
price_out = 1.6

[[judge]]
model = "claude-haiku-4-5"
provider = "anthropic"
samples = 3
temperature = 0.7

[[judge]]
name = "qwen"
model = "qwen2.5-7b"
base_url = "http://127.0.0.1:8000/v1/"
temperature = "none"
api_key_env = "LOCAL_KEY"
max_output_tokens = 300
"""


def test_a_jury_file_reads_every_juror_with_its_config() -> None:
    jury = parse(GOOD, "jury.toml")
    assert (jury.rule, jury.name, jury.path) == ("unanimous-pass", "small-panel", "jury.toml")
    mini, haiku, qwen = jury.jurors
    assert (mini.name, mini.config, mini.samples, mini.price_in, mini.price_out) == (
        "mini", JudgeConfig(model="gpt-4.1-mini"), 1, 0.4, 1.6)
    assert (haiku.name, haiku.config.provider, haiku.samples, haiku.config.temperature) == (
        "claude-haiku-4-5", "anthropic", 3, 0.7)
    assert qwen.config == JudgeConfig(model="qwen2.5-7b", base_url="http://127.0.0.1:8000/v1",
                                      temperature=None, max_output_tokens=300)
    assert qwen.api_key_env == "LOCAL_KEY"
    assert jury.votes == 5 and jury.panel and not jury.priced
    info = jury.info()
    assert (info.model, info.provider, info.config_hash) == ("small-panel", "jury", jury.hash)
    # The hash changes with what shapes the votes, and only with that.
    assert parse(GOOD.replace("samples = 3", "samples = 4"), "j").hash != jury.hash
    assert parse(GOOD, "elsewhere.toml").hash == jury.hash


def test_model_alone_is_a_jury_of_one_whose_verdicts_are_as_before() -> None:
    config = JudgeConfig(model="gpt-4.1-mini")
    one = single(config)
    assert not one.panel and one.votes == 1 and one.jurors[0].name == "gpt-4.1-mini"
    sampled = single(config, samples=5)
    assert sampled.panel and sampled.votes == 5
    info = sampled.info()  # the judge's own, with the panel's hash
    assert (info.model, info.provider, info.base_url) == ("gpt-4.1-mini", "openai",
                                                          "api.openai.com")
    assert info.config_hash != config.hash
    with pytest.raises(UsageError, match="--samples must be from 1 to 100, not 101"):
        single(config, samples=101)


@pytest.mark.parametrize(("text", "said"), [
    ("rule = [", r"jury.toml: not valid TOML"),
    ("rule = 'majority'", r"jury.toml: no \[\[judge\]\] tables: give one per juror"),
    ("jurors = 1\n[[judge]]\nmodel = 'm'", r"jury.toml: unknown top-level key `jurors`"),
    ("rule = 'mode'\n[[judge]]\nmodel = 'm'",
     r"jury.toml: `rule` must be one of `majority`, `unanimous-pass`, `any-fail`"),
    ("[[judge]]\nname = 'a'", r"jury.toml: judge 1 \(`a`\): `model` is missing"),
    ("[[judge]]\nmodel = 'm'\nmodle = 'x'",
     r"jury.toml: judge 1: unknown key `modle`\. Did you mean `model`\?"),
    ("[[judge]]\nmodel = 'm'\n[[judge]]\nmodel = 'm'",
     r"jury.toml: judge 2: the name `m` is given twice"),
    ("[[judge]]\nmodel = 'm'\nsamples = 0", r"judge 1: `samples` must be from 1 to 100, not 0"),
    ("[[judge]]\nmodel = 'm'\nsamples = 2.5", r"judge 1: `samples` must be a whole number"),
    ("[[judge]]\nmodel = 'm'\ntemperature = 3",
     r"jury.toml: judge 1: `temperature` must be between 0 and 2, not 3.0"),
    ("[[judge]]\nmodel = 'm'\ntemperature = 'hot'",
     r"judge 1: `temperature` must be a number from 0 to 2, or \"none\""),
    ("[[judge]]\nmodel = 'm'\ntemperature = nan", r"judge 1: `temperature` must be"),
    ("[[judge]]\nmodel = 'm'\nprovider = 'mistral'",
     r"judge 1: `provider` must be one of openai, anthropic"),
    ("[[judge]]\nmodel = 'm'\nregion = 'eu-west-1'",
     r"judge 1: `region` applies to `provider` bedrock only, not openai"),
    ("[[judge]]\nmodel = 'm'\nbase_url = 'http://u:secret@h/v1'",
     r"judge 1: `base_url` 'http://…@h/v1' must not carry a user or password"),
    ("[[judge]]\nmodel = 'm'\nprice_in = 1", r"judge 1: give both `price_in` and `price_out`"),
    ("[[judge]]\nmodel = 'm'\nprice_in = -1\nprice_out = 1",
     r"judge 1: `price_in` must be more than 0"),
    ("[[judge]]\nmodel = 'm'\napi_key_env = 'MY KEY'",
     r"judge 1: `api_key_env` names an environment variable"),
    ("[[judge]]\nmodel = 'm'\nname = ' padded'", r"judge 1 \(` padded`\): `name` must be text"),
    ("name = ''\n[[judge]]\nmodel = 'm'", r"jury.toml: `name` must be text of 1 to 64"),
    ("[[judge]]\nmodel = 'm'\nmodel_x = 1\nmax_output_tokens = 'x'", r"unknown key `model_x`"),
    ("[[judge]]\nmodel = 'm'\nmax_output_tokens = 'x'",
     r"judge 1: `max_output_tokens` must be a whole number, not 'x'"),
    ("judge = 'm'", r"no \[\[judge\]\] tables"),
    ("[judge]\nmodel = 'm'", r"no \[\[judge\]\] tables"),
])
def test_every_mistake_is_a_sentence_naming_file_juror_and_key(text: str, said: str) -> None:
    with pytest.raises(JuryError, match=said) as e:
        parse(text, "jury.toml")
    assert e.value.exit_code == 2
    assert "--" not in str(e.value)  # the file's words, never the command line's flags
    assert "secret" not in str(e.value)


def test_a_jury_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(JuryError, match=r"missing.toml: cannot read the jury file"):
        read(str(tmp_path / "missing.toml"))
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"name = '\xe9'\n")
    with pytest.raises(JuryError, match=r"latin.toml: the jury file is not UTF-8"):
        read(str(latin))
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000)
    with pytest.raises(JuryError, match=r"deep.toml: (arrays or tables nest too deeply|not "
                                        r"valid TOML)"):
        read(str(deep))


def test_every_juror_key_is_documented() -> None:
    from tests.helpers import ROOT

    docs = (ROOT / "docs" / "judge.md").read_text()
    section = docs[docs.index("## A jury of judges"):]
    for key in JUROR_KEYS:
        assert f"`{key}`" in section, key
