"""The verification examples of docs/events.md, run as written: each block marked
`<!-- tested: NAME -->` is taken from the document. The Python ones verify real deliveries
of the delivery engine (and refuse altered ones); the Node one runs as a real receiver
that the delivery engine delivers to."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.e2e.processes import free_port
from tests.webhooks.receiver import Receiver
from webhooks.models import DeliveryStatus, WebhookDelivery
from webhooks.services.deliveries import envelope_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

EVENTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"
NODE = shutil.which("node")
DEADLINE = 30.0  # seconds the Node receiver may take to start (a hang guard, not a timing check)


def doc_block(name: str) -> str:
    """The fenced code block right after `<!-- tested: name -->` in docs/events.md."""
    found = re.search(rf"<!-- tested: {re.escape(name)} -->\n```[a-z]*\n(.*?)\n```", EVENTS_DOC.read_text(), re.DOTALL)
    assert found, f"docs/events.md has no block marked {name!r}"
    return found.group(1)


def doc_function(block: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile(doc_block(block), f"docs/events.md:{block}", "exec"), namespace)  # noqa: S102 - our own document
    function: Callable[..., Any] = namespace[name]
    return function


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[], AbstractContextManager[Any]]:
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def delivered(auth_client, receiver: Receiver, subscribe, committed) -> tuple[str, dict[str, str], bytes]:
    """A real delivery (a webhook.test event) as the receiver got it: (secret, headers, body)."""
    webhook = subscribe()
    with committed():
        assert auth_client.post(f"/v1/webhooks/{webhook['id']}/test").status_code == 202
    (request,) = receiver.received
    assert request.verified, request.refusal
    return webhook["secret"], request.headers, request.body


def resigned(secret: str, headers: dict[str, str], body: bytes, *, at: datetime) -> dict[str, str]:
    """The headers of the same message signed at another time (by standardwebhooks)."""
    signature = Webhook(secret).sign(headers["webhook-id"], at, body.decode())
    return {**headers, "webhook-timestamp": str(int(at.timestamp())), "webhook-signature": signature}


@pytest.mark.parametrize(
    ("block", "function"), [("python-library", "verify_with_library"), ("python-by-hand", "verify_by_hand")]
)
def test_the_python_examples_accept_a_real_delivery_and_refuse_altered_ones(delivered, block, function):
    verify = doc_function(block, function)
    secret, headers, body = delivered
    other_secret = "whsec_" + "QUJD" * 11  # base64 of 33 bytes, not the webhook's

    event = verify(secret, headers, body)

    assert (event["type"], set(event)) == ("webhook.test", {"type", "timestamp", "data"})
    assert verify(secret, {name.title(): value for name, value in headers.items()}, body) == event
    more = {**headers, "webhook-signature": "v1,bm90IGl0 " + headers["webhook-signature"]}
    assert verify(secret, more, body) == event  # one good signature among several is enough
    for bad_headers, bad_body, bad_secret in [
        (headers, body.replace(b"test", b"TEST"), secret),  # the body altered
        (headers, body, other_secret),  # signed with another secret
        ({**headers, "webhook-signature": "v1,bm90IGl0"}, body, secret),
        ({k: v for k, v in headers.items() if k != "webhook-signature"}, body, secret),
        (resigned(secret, headers, body, at=datetime.now(UTC) - timedelta(minutes=6)), body, secret),
        (resigned(secret, headers, body, at=datetime.now(UTC) + timedelta(minutes=6)), body, secret),
    ]:
        with pytest.raises(Exception):  # noqa: B017, PT011 - each example raises its own kind
            verify(bad_secret, bad_headers, bad_body)
    fresh = resigned(secret, headers, body, at=datetime.now(UTC) - timedelta(minutes=4))
    assert verify(secret, fresh, body) == event  # inside the five minutes


def test_the_by_hand_example_refuses_with_its_own_error(delivered):
    verify = doc_function("python-by-hand", "verify_by_hand")
    secret, headers, body = delivered
    with pytest.raises(Exception, match="no valid signature") as refused:
        verify(secret, headers, body + b" ")
    assert type(refused.value).__name__ == "BadWebhook"


@pytest.fixture
def node_receiver(tmp_path: Path) -> Iterator[Callable[[str, int], subprocess.Popen[str]]]:
    """Starts the document's Node receiver with a secret on a port; its process."""
    if NODE is None:
        pytest.skip("needs Node.js (scripts/lib.sh system_tools_ensure installs nodejs)")
    script = tmp_path / "receiver.mjs"
    script.write_text(doc_block("node-receiver"))
    started: list[subprocess.Popen[str]] = []

    def start(secret: str, port: int) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [str(NODE), str(script)],
            env={"WEBHOOK_SECRET": secret, "PORT": str(port), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}/hook"
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                httpx.get(url, timeout=2)
                return process
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[0]
                assert time.monotonic() < deadline, "the Node receiver did not start"
                time.sleep(0.05)

    yield start
    for process in started:
        process.kill()
        process.communicate(timeout=30)


def test_the_node_example_receives_real_deliveries_and_refuses_altered_ones(
    auth_client, allow_private, node_receiver, committed
):
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    created = auth_client.post("/v1/webhooks", {"url": url}, format="json")
    assert created.status_code == 201, created.content
    webhook = created.json()
    process = node_receiver(webhook["secret"], port)

    with committed():
        assert auth_client.post(f"/v1/webhooks/{webhook['id']}/test").status_code == 202
    delivery = WebhookDelivery.objects.get(subscription_id=webhook["id"])
    assert (delivery.status, delivery.last_status_code) == (DeliveryStatus.SUCCEEDED, 204), delivery.last_error

    # The same request again (a lost answer): accepted, handled once.
    body = envelope_body(delivery.payload)
    headers = resigned(webhook["secret"], {"webhook-id": delivery.event_id}, body, at=datetime.now(UTC))
    sent = {**headers, "content-type": "application/json"}
    assert httpx.post(url, content=body, headers=sent).status_code == 204
    refused = [
        httpx.post(url, content=body.replace(b"test", b"TEST"), headers=sent),
        httpx.post(url, content=body, headers={**sent, "webhook-signature": "v1,bm90IGl0"}),
        httpx.post(
            url,
            content=body,
            headers=resigned(webhook["secret"], headers, body, at=datetime.now(UTC) - timedelta(minutes=6)),
        ),
        httpx.post(url, content=body, headers={"content-type": "application/json"}),
    ]
    assert [answer.status_code for answer in refused] == [400, 400, 400, 400]
    assert refused[0].text == "no valid signature"
    assert refused[2].text == "timestamp missing or more than five minutes off"

    process.kill()
    output = process.communicate(timeout=30)[0]
    handled = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert handled == [{"id": delivery.event_id, "type": "webhook.test", "data": delivery.payload["data"]}]
