"""Compressed inputs read to their end or not at all: a .gz or .zst file cut short, damaged or
followed by garbage is an InputError naming the file and the byte, never a shorter dataset."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._files.lines import open_input
from evalstream.errors import InputError

LINES = b"".join(b'{"id":"c%d","input":"%s","output":"y"}\n' % (i, b"x" * (i % 97))
                 for i in range(4_000))
SKIPPABLE = struct.pack("<II", 0x184D2A50, 5) + b"extra"  # a frame readers must skip


def _zst(data: bytes, checksum: bool = False) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=checksum).compress(data)


def _read(path: Path) -> bytes:
    with open_input(str(path)) as stream:
        return stream.read()


def _frames(data: bytes, cuts: list[int]) -> tuple[bytes, list[int]]:
    """``data`` compressed as one frame per piece between ``cuts``, and where frames end."""
    bounds = [0, *sorted(set(cuts)), len(data)]
    out, ends = b"", []
    for a, b in zip(bounds, bounds[1:], strict=False):
        out += _zst(data[a:b])
        ends.append(len(out))
    return out, ends


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, len(LINES)), max_size=4), st.booleans())
def test_every_frame_is_read(tmp_path_factory: pytest.TempPathFactory, cuts: list[int],
                             skippable: bool) -> None:
    packed, _ = _frames(LINES, cuts)
    if skippable:
        packed = SKIPPABLE + packed
    path = tmp_path_factory.mktemp("zst") / "x.jsonl.zst"
    path.write_bytes(packed)
    assert _read(path) == LINES


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, len(LINES)), max_size=3), st.data())
def test_a_cut_inside_any_frame_is_an_error(tmp_path_factory: pytest.TempPathFactory,
                                            cuts: list[int], data: st.DataObject) -> None:
    packed, ends = _frames(LINES, cuts)
    at = data.draw(st.integers(1, len(packed) - 1).filter(lambda n: n not in ends))
    path = tmp_path_factory.mktemp("zst") / "cut.jsonl.zst"
    path.write_bytes(packed[:at])
    with pytest.raises(InputError, match=rf"cannot read .*cut\.jsonl\.zst: the zstd data ends "
                                         rf"inside a frame, at byte {at:,} of the file"):
        _read(path)


def test_an_interrupted_append_is_an_error(tmp_path: Path) -> None:
    # One whole frame, then one cut short: the first half must not pass for the whole file.
    second = _zst(LINES)
    (tmp_path / "x.zst").write_bytes(_zst(LINES) + second[:len(second) // 2])
    with pytest.raises(InputError, match="ends inside a frame"):
        _read(tmp_path / "x.zst")


@pytest.mark.parametrize("tail", [b"\n", b"garbage after the frame", b"\x00" * 64])
def test_trailing_garbage_is_an_error(tmp_path: Path, tail: bytes) -> None:
    (tmp_path / "x.zst").write_bytes(_zst(LINES) + tail)
    with pytest.raises(InputError, match=r"x\.zst: (the zstd data ends inside a frame|a zstd "
                                         r"frame is damaged)"):
        _read(tmp_path / "x.zst")


def test_a_damaged_frame_is_an_error(tmp_path: Path) -> None:
    packed = bytearray(_zst(LINES, checksum=True))
    packed[len(packed) // 2] ^= 0x55  # caught by the frame's checksum if not before
    (tmp_path / "x.zst").write_bytes(bytes(packed))
    with pytest.raises(InputError, match=r"a zstd frame is damaged \(.+\), at byte [\d,]+ of "
                                         r"the file .*: the file is damaged"):
        _read(tmp_path / "x.zst")


def test_a_reserved_block_type_is_an_error(tmp_path: Path) -> None:
    packed = bytearray(_zst(b"x" * 1000))
    header = zstandard.frame_header_size(bytes(packed))  # magic number included
    packed[header] |= 0b110  # block type 3: reserved
    (tmp_path / "x.zst").write_bytes(bytes(packed))
    with pytest.raises(InputError, match="a zstd frame is damaged"):
        _read(tmp_path / "x.zst")


def test_gzip_members_are_all_read(tmp_path: Path) -> None:
    (tmp_path / "x.gz").write_bytes(gzip.compress(LINES[:1000]) + gzip.compress(LINES[1000:]))
    assert _read(tmp_path / "x.gz") == LINES


def test_a_cut_gzip_file_is_an_error(tmp_path: Path) -> None:
    packed = gzip.compress(LINES)
    (tmp_path / "x.gz").write_bytes(packed[:len(packed) * 3 // 5])
    with pytest.raises(InputError, match=r"x\.gz: the gzip data ends inside a member, at byte "):
        _read(tmp_path / "x.gz")


def test_a_zlib_error_is_an_input_error(tmp_path: Path) -> None:
    # A deflate block of the reserved type 3: zlib.error, which is not an OSError.
    packed = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x07" + b"\x00" * 16
    with pytest.raises(zlib.error):
        gzip.decompress(packed)
    (tmp_path / "x.gz").write_bytes(packed)
    with pytest.raises(InputError, match=r"x\.gz: the gzip data is damaged \(.*invalid block"):
        _read(tmp_path / "x.gz")


@pytest.mark.parametrize("tail", [b"garbage", gzip.compress(LINES)[:30]])
def test_gzip_trailing_garbage_is_an_error(tmp_path: Path, tail: bytes) -> None:
    (tmp_path / "x.gz").write_bytes(gzip.compress(LINES) + tail)
    with pytest.raises(InputError, match=r"x\.gz: the gzip data (is damaged|ends inside)"):
        _read(tmp_path / "x.gz")
