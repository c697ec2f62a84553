"""Coverage-guided fuzz target (atheris) for the line decoder.

Each input is one line of a dataset. The target asserts what the reliability tests assert
for generated data: a line decodes into a case that re-encodes, or it becomes a reject
that encodes as JSON, names a JSON path and is a full sentence in evalstream's words; and
the reader accounts for every line of the input whatever the block size.

    python fuzz/fuzz_decode.py -max_total_time=600 -dict=fuzz/json.dict fuzz-corpus/

Any libFuzzer flag works (-runs=N, -jobs=N, -max_len=N). See fuzz/README.md.
"""

from __future__ import annotations

import io
import sys

import atheris

with atheris.instrument_imports():
    import msgspec

    from evalstream._cases import rejects, schema
    from evalstream._files import lines

DECODE = schema.decoder(False).decode
ENCODE = msgspec.json.Encoder().encode
RAW_MSGSPEC = ("Input data was truncated", "Expected `", "JSON is malformed", "Object contains",
               "Object missing", "Invalid enum value", "- at `$")


def check_line(line: bytes) -> None:
    """A line is a case that re-encodes, or a reject a person can act on."""
    try:
        case = DECODE(line)
    except (msgspec.DecodeError, RecursionError) as exc:
        rej = rejects.reject(1, 0, line, exc)
        rejects.reject_kind(exc, line)
        ENCODE(rej)  # must not raise (lone surrogates, odd keys)
        error = rej.error
        assert error.endswith("."), error
        assert error[:1].isupper() or error.startswith("`$"), error
        assert not any(p in error for p in RAW_MSGSPEC), error
        assert rej.path is not None and rej.path.startswith("$"), rej
        return
    again = DECODE(ENCODE(case))
    assert again == case, (case, again)


def check_reader(data: bytes) -> None:
    """read_chunks gives back exactly the input's lines, for a block size and limit
    taken from the input's first bytes."""
    if len(data) < 2:
        return
    block, limit, body = data[0] % 16 + 1, data[1] % 32 + 1, data[2:]
    expected = body.removeprefix(lines.BOM).split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    got: list[tuple[int, int]] = []
    for item in lines.read_chunks(io.BytesIO(body), limit, block_size=block):
        if isinstance(item, lines.Chunk):
            got += [(item.line + i, len(line)) for i, line in enumerate(item.lines)]
        else:
            got.append((item.line, item.size))
    assert got == [(n, len(x)) for n, x in enumerate(expected, 1)], (got, expected)


def test_one_input(data: bytes) -> None:
    if data[:1] == b"\x00":  # one input in 256 exercises the reader instead
        check_reader(data[1:])
    else:
        check_line(data)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
