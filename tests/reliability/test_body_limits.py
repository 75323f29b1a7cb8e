"""Request bodies nobody may make the server hold (issue 15, item 3), on the real ASGI
application under uvicorn: a body the route does not take, or sent without a credential
the route needs, is answered before a byte of it is read; a body over the route's limit
is answered 413 from its Content-Length, or as soon as the limit passes when it is sent
chunked. Each time the test watches what the server process holds on disk in its
temporary folder (TMPDIR and FILE_UPLOAD_TEMP_DIR point there), and keeps sending while
it waits: before the fix, every one of these was spooled whole before its answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from accounts.services.api_keys import api_key_create, api_key_revoke
from accounts.services.users import token_issue
from core.uploads import MULTIPART_OVERHEAD_BYTES
from tests.e2e.processes import Services
from tests.factories import UserFactory
from tests.support.pdfs import pdf_bytes
from tests.support.raw_http import RawAnswer, RawRequest, multipart, spooled_bytes

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

UPLOAD_LIMIT = 1024 * 1024
ANNOUNCED = 1024**3  # what the refused requests claim to send
SENDS_AT_MOST = 48 * 1024 * 1024  # what the test sends of it while it waits for the answer
WEB_APP = "https://app.example.org"  # a web app on another origin (CORS_ALLOWED_ORIGINS)
SPOOL_IN_MEMORY = 64 * 1024  # FILE_UPLOAD_MAX_MEMORY_SIZE: past it, Django's spool is on disk


@dataclass
class Server:
    base: str
    pid: int
    spool: Path
    peak: int = 0
    tokens: dict[str, str] = field(default_factory=dict)

    def probe(self) -> None:
        self.peak = max(self.peak, spooled_bytes(pid=self.pid, folder=self.spool))

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"} if who != "nobody" else {}


@pytest.fixture
def server(services: Services, tmp_path: Path) -> Server:
    spool = tmp_path / "spool"
    spool.mkdir()
    base = services.api_server(
        TMPDIR=spool,
        FILE_UPLOAD_TEMP_DIR=spool,
        FILE_UPLOAD_MAX_MEMORY_SIZE=SPOOL_IN_MEMORY,
        UPLOAD_MAX_BYTES=UPLOAD_LIMIT,
        CORS_ALLOWED_ORIGINS=WEB_APP,
    )
    owner = UserFactory()
    revoked, revoked_secret = api_key_create(user=owner, name="revoked")
    api_key_revoke(key=revoked)
    tokens = {"owner": token_issue(user=owner).token, "revoked key": revoked_secret}
    return Server(base=base, pid=services.started[-1].process.pid, spool=spool, tokens=tokens)


def announced(server: Server, method: str, path: str, who: str, **headers: str) -> tuple[RawAnswer, int]:
    """A request announcing ANNOUNCED bytes of body; the body is sent while the test waits
    for the answer, which must come long before it ends. The answer and the bytes sent."""
    request = RawRequest(server.base, method, path, headers={**server.auth(who), **headers}, length=ANNOUNCED)
    try:
        sent = request.send_until_answered(total=SENDS_AT_MOST, each=server.probe)
        assert request.answered(wait=20), f"no answer after {sent} bytes of the body"
        return request.answer(), sent
    finally:
        request.close()


REFUSED_UNREAD = [
    pytest.param("POST", "/v1/uploads", "nobody", 401, "not_authenticated", id="upload-without-credential"),
    pytest.param("POST", "/v1/uploads", "revoked key", 401, "api_key_revoked", id="upload-with-revoked-key"),
    pytest.param("POST", "/v1/projects", "nobody", 401, "not_authenticated", id="json-without-credential"),
    pytest.param("POST", "/v1/meta", "nobody", 405, "method_not_allowed", id="route-without-body"),
    pytest.param("PUT", "/v1/uploads", "owner", 405, "method_not_allowed", id="method-without-body"),
    pytest.param("POST", "/v1/no-such-route", "nobody", 404, "not_found", id="no-such-route"),
    pytest.param("POST", "/nowhere", "nobody", 404, None, id="outside-the-api"),
]


@pytest.mark.parametrize(("method", "path", "who", "status", "code"), REFUSED_UNREAD)
def test_a_body_the_route_will_not_read_is_refused_before_any_of_it_is_read(
    server: Server, method: str, path: str, who: str, status: int, code: str | None
):
    answer, sent = announced(server, method, path, who, **{"Content-Type": "multipart/form-data; boundary=x"})

    assert answer.status == status, answer.body
    if code is not None:  # the API's own problem, exactly as without a body
        assert answer.headers["content-type"] == "application/problem+json"
        assert (answer.json()["code"], answer.json()["instance"]) == (code, path)
    assert answer.headers["connection"] == "close"
    assert sent < SENDS_AT_MOST
    assert server.peak == 0


@pytest.mark.parametrize(
    ("path", "content_type", "limit_field", "limit"),
    [
        ("/v1/uploads", "multipart/form-data; boundary=x", "maxFileSizeBytes", UPLOAD_LIMIT),
        ("/v1/projects", "application/json", "maxBodyBytes", settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
    ],
    ids=["upload", "json"],
)
def test_a_body_announced_over_the_route_limit_is_413_before_any_of_it_is_read(
    server: Server, path: str, content_type: str, limit_field: str, limit: int
):
    answer, sent = announced(
        server, "POST", path, "owner", **{"Content-Type": content_type, "Origin": WEB_APP, "X-Request-Id": "big-1"}
    )

    assert answer.status == 413
    # Made before Django, it still carries what Django's middleware would add: the request
    # id, and the CORS grant without which the web app's page could not read it.
    assert answer.headers["x-request-id"] == "big-1"
    assert answer.headers["access-control-allow-origin"] == WEB_APP
    assert "retry-after" in answer.headers["access-control-expose-headers"].lower()
    body = answer.json()
    assert (body["code"], body["status"], body["instance"], body[limit_field]) == (
        "request_too_large",
        413,
        path,
        limit,
    )
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["connection"] == "close"
    assert sent < SENDS_AT_MOST
    assert server.peak == 0


@pytest.mark.parametrize(
    ("path", "content_type", "limit"),
    [
        ("/v1/uploads", "multipart/form-data; boundary=x", UPLOAD_LIMIT + MULTIPART_OVERHEAD_BYTES),
        ("/v1/projects", "application/json", settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
    ],
    ids=["upload", "json"],
)
def test_a_chunked_body_stops_being_read_at_the_route_limit(server: Server, path: str, content_type: str, limit: int):
    request = RawRequest(
        server.base, "POST", path, headers={**server.auth("owner"), "Content-Type": content_type}, length=None
    )
    try:
        sent = request.send_until_answered(total=SENDS_AT_MOST, each=server.probe)
        answer = request.answer()
    finally:
        request.close()

    assert answer.status == 413
    assert answer.json()["code"] == "request_too_large"
    assert answer.headers["connection"] == "close"
    assert sent < SENDS_AT_MOST
    # What was spooled is what was read: the limit and at most one more message.
    assert server.peak <= limit + 256 * 1024


def test_a_body_within_the_limit_reaches_the_api_whole(server: Server):
    body, content_type = multipart(pdf_bytes(3).ljust(UPLOAD_LIMIT - 1024, b"\n"))
    headers = {**server.auth("owner"), "Content-Type": content_type}
    request = RawRequest(server.base, "POST", "/v1/uploads", headers=headers, length=len(body))
    try:
        for start in range(0, len(body), 100_000):
            request.send(body[start : start + 100_000])
        upload = request.answer()
    finally:
        request.close()
    assert upload.status == 200, upload.body
    project = httpx.post(
        f"{server.base}/v1/projects",
        json={"name": "Whole", "uploadKey": upload.json()["uploadKey"], "targetLanguageCode": "es"},
        headers=server.auth("owner"),
        timeout=30,
    )

    assert (upload.json()["pageCount"], upload.json()["sizeBytes"]) == (3, UPLOAD_LIMIT - 1024)
    assert upload.headers.get("connection") != "close"
    assert project.status_code == 201, project.text


def test_a_body_sent_to_a_read_only_operation_is_not_read(server: Server):
    answer, sent = announced(server, "GET", "/v1/meta", "nobody")

    assert answer.status == 200
    assert answer.json()["apiVersion"]
    assert sent < SENDS_AT_MOST
    assert server.peak == 0


def test_a_request_without_a_body_is_untouched(server: Server):
    answer = httpx.get(f"{server.base}/v1/meta", timeout=10)

    assert answer.status_code == 200
    assert answer.headers.get("connection") != "close"
