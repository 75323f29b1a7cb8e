"""Small valid PDFs written byte by byte, so tests need no PDF library.

`pdf_bytes(3, text=lambda n: f"Page {n}")` is a 3-page PDF whose page n (1-based) shows
that line in Helvetica (pdftotext reads it back); without `text` each page only draws a
rectangle, so it has no text layer. `encrypted_pdf_bytes()` adds the standard security
handler (RC4, 40-bit, revision 2): with a user password poppler refuses to open it, with
an empty one it opens and reports `Encrypted: yes`.
"""

from __future__ import annotations

import hashlib
import textwrap
from collections.abc import Callable

# The padding string of the PDF standard security handler (ISO 32000-1, 7.6.3.3).
_PASSWORD_PAD = bytes.fromhex("28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a")
_FILE_ID = hashlib.md5(b"tests.support.pdfs", usedforsecurity=False).digest()
_PERMISSIONS = -4  # everything allowed; only the password matters here


def pdf_bytes(pages: int, text: Callable[[int], str] | None = None, size: tuple[int, int] = (612, 792)) -> bytes:
    """A PDF of `pages` pages of `size` points; `text(n)` is drawn on page n (1-based)."""
    return _pdf(pages, text, size, encryption=None)


def encrypted_pdf_bytes(
    pages: int = 1,
    text: Callable[[int], str] | None = None,
    *,
    user_password: str = "secret",
    owner_password: str = "owner",
) -> bytes:
    """A PDF encrypted with the standard security handler (RC4 40-bit).

    A non-empty `user_password` is needed to open it; with "" anyone can open it, and it
    still says it is encrypted (an owner password restricting what readers may do).
    """
    return _pdf(pages, text, (612, 792), encryption=_Encryption(user_password, owner_password))


def _pdf(pages: int, text: Callable[[int], str] | None, size: tuple[int, int], encryption: _Encryption | None) -> bytes:
    width, height = size
    font_id = 3
    page_ids = [4 + 2 * index for index in range(pages)]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % page for page in page_ids) + b"] /Count %d >>" % pages,
        font_id: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for number, page_id in enumerate(page_ids, start=1):
        content_id = page_id + 1
        objects[page_id] = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] " % (
            width,
            height,
        ) + b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font_id, content_id)
        stream = _page_content(text(number) if text else None, height)
        if encryption is not None:
            stream = encryption.encrypt(content_id, stream)
        objects[content_id] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    trailer = b"/Root 1 0 R /ID [<%s> <%s>]" % (_FILE_ID.hex().encode(), _FILE_ID.hex().encode())
    if encryption is not None:
        encrypt_id = max(objects) + 1
        objects[encrypt_id] = encryption.dictionary()
        trailer += b" /Encrypt %d 0 R" % encrypt_id
    return pdf_assemble(objects, trailer)


def _page_content(line: str | None, height: int) -> bytes:
    if line is None:
        return b"0.5 w 72 72 m 300 72 l 300 300 l 72 300 l h S"  # a drawing, no text
    rows = [row for paragraph in line.splitlines() for row in (textwrap.wrap(paragraph, 75) or [""])]
    shown = b" T* ".join(b"(" + _pdf_string(row) + b") Tj" for row in rows)
    return b"BT /F1 12 Tf 14 TL 72 %d Td " % (height - 72) + shown + b" ET"


def _pdf_string(value: str) -> bytes:
    raw = value.encode("cp1252", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def pdf_assemble(objects: dict[int, bytes], trailer_entries: bytes) -> bytes:
    """A PDF of these numbered objects with a cross-reference table that points at each (a
    number left out points at 0, as a damaged file's would) and this trailer."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref_at = len(out)
    count = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % count
    for number in range(1, count):
        out += b"%010d 00000 n \n" % offsets.get(number, 0)
    out += b"trailer\n<< /Size %d " % count + trailer_entries + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


class _Encryption:
    """The standard security handler, revision 2 (Algorithms 2, 3 and 4 of ISO 32000-1)."""

    def __init__(self, user_password: str, owner_password: str) -> None:
        user = _padded(user_password)
        owner_key = hashlib.md5(_padded(owner_password or user_password), usedforsecurity=False).digest()[:5]
        self.owner_entry = _rc4(owner_key, user)
        digest = hashlib.md5(
            user + self.owner_entry + _PERMISSIONS.to_bytes(4, "little", signed=True) + _FILE_ID,
            usedforsecurity=False,
        )
        self.key = digest.digest()[:5]
        self.user_entry = _rc4(self.key, _PASSWORD_PAD)

    def encrypt(self, object_number: int, data: bytes) -> bytes:
        object_key = hashlib.md5(
            self.key + object_number.to_bytes(3, "little") + (0).to_bytes(2, "little"), usedforsecurity=False
        ).digest()[:10]
        return _rc4(object_key, data)

    def dictionary(self) -> bytes:
        return b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P %d >>" % (
            self.owner_entry.hex().encode(),
            self.user_entry.hex().encode(),
            _PERMISSIONS,
        )


def _padded(password: str) -> bytes:
    return (password.encode("latin-1") + _PASSWORD_PAD)[:32]


def _rc4(key: bytes, data: bytes) -> bytes:
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) % 256])
    return bytes(out)
