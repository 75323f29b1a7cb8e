"""A local webhook receiver: a threaded http.server on 127.0.0.1 (plain HTTP, or HTTPS with
a certificate for `localhost` made here) that verifies every request with the official
Standard Webhooks package (`standardwebhooks`), never with our own code, and answers with
what the test programmed.

`answers` is a list the receiver takes from, one per request (then `default` for the rest);
an Answer may carry headers (Retry-After, Location), hang until the receiver is closed (the
delivery times out), or trickle its answer a byte at a time (no single read times out).
"""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

HANG_LIMIT_SECONDS = 30  # a hanging answer is released when the receiver closes, or after this


@dataclass(frozen=True)
class Answer:
    status: int = 204
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    hang: bool = False
    trickle: bool = False  # the status line a byte at a time, never finished: each read is quick


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    payload: Any  # what standardwebhooks returned; None when it refused the request
    refusal: str  # standardwebhooks' reason for refusing; empty when verified

    @property
    def verified(self) -> bool:
        return not self.refusal


class Receiver:
    def __init__(self, *, tls_certificate: Path | None = None, tls_key: Path | None = None) -> None:
        self.secret: str | None = None
        self.answers: list[Answer] = []
        self.default = Answer()
        self.received: list[Received] = []
        self.sni_names: list[str | None] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls_certificate is not None and tls_key is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls_certificate, tls_key)
            context.sni_callback = self._sni_seen
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, host: str = "127.0.0.1", path: str = "/hook") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def close(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def _sni_seen(self, connection: ssl.SSLObject, name: str | None, context: ssl.SSLContext) -> None:
        self.sni_names.append(name)

    def _next_answer(self) -> Answer:
        with self._lock:
            return self.answers.pop(0) if self.answers else self.default

    def _verify(self, body: bytes, headers: dict[str, str]) -> tuple[Any, str]:
        if self.secret is None:
            return None, "the receiver has no secret"
        try:
            return Webhook(self.secret).verify(body, headers), ""
        except WebhookVerificationError as error:
            return None, str(error) or "refused"

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                payload, refusal = receiver._verify(body, headers)
                with receiver._lock:
                    receiver.received.append(Received(self.path, headers, body, payload, refusal))
                answer = receiver._next_answer()
                if answer.hang:
                    receiver._released.wait(HANG_LIMIT_SECONDS)
                    return
                if answer.trickle:
                    for byte in b"HTTP/1.1 200 OK, slowly" * 100:
                        if receiver._released.wait(0.2):
                            return
                        try:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        except OSError:  # the sender gave up
                            return
                    return
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

        return Handler


@contextmanager
def running_receiver(**options: Any) -> Iterator[Receiver]:
    receiver = Receiver(**options).start()
    try:
        yield receiver
    finally:
        receiver.close()


def self_signed_certificate(folder: Path, host_name: str = "localhost") -> tuple[Path, Path]:
    """A certificate for `host_name` (only: not for 127.0.0.1) that is its own CA, and its
    key; returns (certificate path, key path). The certificate file doubles as the CA bundle."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host_name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    certificate_path, key_path = folder / "receiver.pem", folder / "receiver.key"
    certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return certificate_path, key_path
