"""Model weights packed for a wheel: the safetensors file, its bytes regrouped by position in
each 4-byte word, each group compressed on its own.

float32 weights hardly compress as they are, but their sign-and-exponent bytes do once they
sit together: all-MiniLM-L6-v2's 90.9 MB pack into 76.1 MB, which keeps the default install
under 700 MB. The three mantissa groups are near-random, so zlib's fastest level is as good
as its best on them; the sign-and-exponent group gets level 6, within 3% of level 9's size in
a quarter of its time (level 9 on every group took 15 s). Unpacking takes under a second,
once, when the model is first written as ONNX.

Standard library only: setup.py loads this file by path to pack the weights at build time.
"""

from __future__ import annotations

import struct
import zlib

#: The packed weights' file name in a model directory.
PACKED_WEIGHTS = "model.safetensors.packed"
_MAGIC = b"DOXAPACK2\n"
#: zlib's level for each of the four byte groups, least significant byte first.
_LEVELS = (1, 1, 1, 6)
#: The raw length after the magic, and each group's compressed length before it.
_LENGTH = struct.Struct("<Q")


class PackError(ValueError):
    """The bytes are not weights packed by ``pack_weights``."""


def pack_weights(raw: bytes) -> bytes:
    """The packed form of a safetensors file's bytes."""
    padded = raw + b"\0" * (-len(raw) % 4)
    parts = [_MAGIC, _LENGTH.pack(len(raw))]
    for i, level in enumerate(_LEVELS):
        compressed = zlib.compress(padded[i::4], level)
        parts += [_LENGTH.pack(len(compressed)), compressed]
    return b"".join(parts)


def unpack_weights(packed: bytes) -> bytes:
    """The safetensors bytes ``pack_weights`` packed."""
    if not packed.startswith(_MAGIC):
        raise PackError("the packed weights have an unknown header")
    groups: list[bytes] = []
    try:
        (length,) = _LENGTH.unpack_from(packed, len(_MAGIC))
        at = len(_MAGIC) + _LENGTH.size
        for _ in _LEVELS:
            (size,) = _LENGTH.unpack_from(packed, at)
            at += _LENGTH.size
            groups.append(zlib.decompress(packed[at : at + size]))
            at += size
    except (struct.error, zlib.error) as error:
        raise PackError(f"the packed weights are damaged: {error!r}") from error
    quarter = len(groups[0])
    fits = at == len(packed) and 0 <= 4 * quarter - length < 4
    if not fits or any(len(group) != quarter for group in groups):
        raise PackError("the packed weights are damaged: their groups do not fit together")
    raw = bytearray(4 * quarter)
    for i, group in enumerate(groups):
        raw[i::4] = group
    return bytes(raw[:length])
