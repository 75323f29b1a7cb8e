"""Editing zips at the byte level, for hostile-input tests: find an entry's central
directory header, and mark an entry encrypted."""

from __future__ import annotations

import struct


def central_header_at(data: bytes, name: str) -> int:
    """The offset of `name`'s central directory header in the zip `data`."""
    at = data.index(b"PK\x01\x02")
    while True:
        name_length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_length] == name.encode():
            return at
        at = data.index(b"PK\x01\x02", at + 4)


def encrypted_flag_set(data: bytes, name: str) -> bytes:
    """The zip with `name` marked encrypted (bit 0 of the flags, local and central headers)."""
    edited = bytearray(data)
    central = central_header_at(data, name)
    local = struct.unpack_from("<I", data, central + 42)[0]
    for offset in (central + 8, local + 6):
        struct.pack_into("<H", edited, offset, struct.unpack_from("<H", data, offset)[0] | 0x1)
    return bytes(edited)
