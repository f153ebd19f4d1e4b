"""Model weights packed for a wheel: the safetensors file, its bytes regrouped by position in
each 4-byte word and deflated.

float32 weights hardly compress as they are, but their sign-and-exponent bytes do once they
sit together: all-MiniLM-L6-v2's 90.9 MB pack into 75.7 MB, which keeps the default install
under 700 MB. Unpacking takes about a second, once, when the model is first written as ONNX.

Standard library only: setup.py loads this file by path to pack the weights at build time.
"""

from __future__ import annotations

import struct
import zlib

#: The packed weights' file name in a model directory.
PACKED_WEIGHTS = "model.safetensors.packed"
_MAGIC = b"DOXAPACK1\n"


class PackError(ValueError):
    """The bytes are not weights packed by ``pack_weights``."""


def pack_weights(raw: bytes) -> bytes:
    """The packed form of a safetensors file's bytes."""
    padded = raw + b"\0" * (-len(raw) % 4)
    shuffled = b"".join(padded[i::4] for i in range(4))
    return _MAGIC + struct.pack("<Q", len(raw)) + zlib.compress(shuffled, 9)


def unpack_weights(packed: bytes) -> bytes:
    """The safetensors bytes ``pack_weights`` packed."""
    if not packed.startswith(_MAGIC):
        raise PackError("the packed weights have an unknown header")
    start = len(_MAGIC)
    (length,) = struct.unpack("<Q", packed[start : start + 8])
    try:
        shuffled = zlib.decompress(packed[start + 8 :])
    except zlib.error as error:
        raise PackError(f"the packed weights are damaged: {error}") from error
    quarter = len(shuffled) // 4
    raw = bytearray(len(shuffled))
    for i in range(4):
        raw[i::4] = shuffled[i * quarter : (i + 1) * quarter]
    return bytes(raw[:length])
