"""HTTP/1.1 by hand, for tests that decide how much of a request body is sent and when:
a body announced by Content-Length or sent chunked, sent piece by piece while watching
for the server's answer; and how much a server process has spooled to disk meanwhile."""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PIECE = 64 * 1024


@dataclass(frozen=True)
class RawAnswer:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RawRequest:
    """One request on a connection of its own. `length` None sends the body chunked."""

    def __init__(
        self, base: str, method: str, path: str, *, headers: dict[str, str] | None = None, length: int | None
    ) -> None:
        address = urlsplit(base)
        self.chunked = length is None
        self.sent = 0
        self.socket = socket.create_connection((address.hostname, address.port), timeout=30)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {address.netloc}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        lines.append("Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}")
        self.socket.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

    def answered(self, wait: float = 0.0) -> bool:
        """Whether the server has answered (or closed) already."""
        readable, _, _ = select.select([self.socket], [], [], wait)
        return bool(readable)

    def send(self, data: bytes) -> bool:
        """Send a piece of the body; False when the server no longer takes it."""
        frame = f"{len(data):x}\r\n".encode() + data + b"\r\n" if self.chunked else data
        try:
            self.socket.sendall(frame)
        except (BrokenPipeError, ConnectionResetError):
            return False
        self.sent += len(data)
        return True

    def send_until_answered(self, *, total: int, piece: bytes = b"\0" * PIECE, each: Any = None) -> int:
        """Send the body piece by piece until the server answers or `total` bytes went;
        `each()` runs after every piece (a probe). Returns the bytes sent."""
        while self.sent < total and not self.answered():
            if not self.send(piece[: total - self.sent]):
                break
            if each is not None:
                each()
        return self.sent

    def finish(self) -> None:
        """End a chunked body."""
        self.socket.sendall(b"0\r\n\r\n")

    def answer(self, timeout: float = 20.0) -> RawAnswer:
        """The server's answer, within `timeout` seconds (else socket.timeout)."""
        self.socket.settimeout(timeout)
        response = http.client.HTTPResponse(self.socket)
        response.begin()
        body = response.read()
        return RawAnswer(response.status, {name.lower(): value for name, value in response.getheaders()}, body)

    def close(self) -> None:
        self.socket.close()


def multipart(content: bytes, *, file_name: str = "book.pdf") -> tuple[bytes, str]:
    """A multipart/form-data body with `content` as the part `file`; the body and its
    Content-Type."""
    boundary = "bts-test-boundary"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
    head += "Content-Type: application/octet-stream\r\n\r\n"
    return head.encode() + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def spooled_bytes(*, pid: int, folder: Path) -> int:
    """The bytes held on disk under `folder` for the process `pid`: its open files there
    (deleted ones too, as Python's unnamed temporary files are) or, if more, the files
    in the folder."""
    held = 0
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir() if fds.exists() else []:
        try:
            if os.readlink(fd).startswith(str(folder)):
                held += os.stat(fd).st_size
        except OSError:  # closed meanwhile
            continue
    in_folder = sum(entry.stat().st_size for entry in folder.iterdir() if entry.is_file())
    return max(held, in_folder)
