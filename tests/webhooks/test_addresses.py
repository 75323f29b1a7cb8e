"""Where webhooks may go: every range that is not public is refused at registration, IPv4 and
IPv6, however the address is written, and whatever a name resolves to."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.problems import assert_problem
from webhooks.addresses import CheckedTarget, address_refusal, post_pinned, url_parse
from webhooks.models import WebhookSubscription

pytestmark = pytest.mark.django_db


BLOCKED = [
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("192.168.1.10", "private"),
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("169.254.169.254", "link-local"),  # the cloud metadata service
    ("100.64.0.1", "CGNAT"),
    ("100.127.255.254", "CGNAT"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("192.0.0.8", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("[::1]", "loopback"),
    ("[::]", "unspecified"),
    ("[::ffff:127.0.0.1]", "IPv4-mapped loopback"),
    ("[::ffff:10.0.0.1]", "IPv4-mapped private"),
    ("[::ffff:169.254.169.254]", "IPv4-mapped link-local"),
    ("[::ffff:100.64.0.1]", "IPv4-mapped shared address space"),
    ("[::127.0.0.1]", "IPv4-compatible"),
    ("[fc00::1]", "private"),
    ("[fd12:3456:789a::1]", "private"),
    ("[fe80::1]", "link-local"),
    ("[febf::1]", "link-local"),
    ("[fec0::1]", "site-local"),
    ("[ff02::1]", "multicast"),
    ("[ff0e::1]", "multicast"),
    ("[2001:db8::1]", "documentation"),
    ("[3fff::1]", "documentation"),
    ("[2002:7f00:1::1]", "6to4 loopback"),
    ("[2002:a00:1::1]", "6to4 private"),
    ("[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "Teredo"),
    ("[64:ff9b::a00:1]", "NAT64"),
    ("[100::1]", "discard-only"),
    ("[400::1]", "reserved"),
]


@pytest.mark.parametrize(("host", "named"), BLOCKED)
def test_a_webhook_to_an_address_that_is_not_public_is_refused(auth_client, host, named):
    response = auth_client.post("/v1/webhooks", {"url": f"https://{host}:8443/hook"}, format="json")

    problem = assert_problem(response, 400, "webhook_address_forbidden")
    assert named.split()[-1].lower() in problem["detail"].lower()
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",  # 127.0.0.1 as one decimal number
        "0x7f000001",  # ... as hex
        "0177.0.0.1",  # ... in octal
        "127.1",  # ... shortened
        "0x7f.1",
    ],
)
def test_other_spellings_of_a_loopback_address_are_refused_too(auth_client, host):
    response = auth_client.post("/v1/webhooks", {"url": f"http://{host}/hook"}, format="json")

    problem = assert_problem(response, 400, "webhook_address_forbidden")
    assert "loopback" in problem["detail"]


def test_a_name_that_resolves_to_a_private_address_is_refused(auth_client):
    response = auth_client.post("/v1/webhooks", {"url": "http://localhost:8080/hook"}, format="json")

    problem = assert_problem(response, 400, "webhook_address_forbidden")
    assert "localhost resolves to 127.0.0.1" in problem["detail"]
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["https://93.184.215.14/hook", "http://8.8.8.8:8080/h?x=1", "https://[2606:4700:4700::1111]/hook"],
)
def test_a_public_address_is_accepted(auth_client, url):
    assert auth_client.post("/v1/webhooks", {"url": url}, format="json").status_code == 201


def test_allowing_private_addresses_still_refuses_unspecified_and_multicast(auth_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True

    private = auth_client.post("/v1/webhooks", {"url": "http://10.0.0.5/hook"}, format="json")
    unspecified = auth_client.post("/v1/webhooks", {"url": "http://0.0.0.0/hook"}, format="json")
    multicast = auth_client.post("/v1/webhooks", {"url": "http://[::ffff:224.0.0.1]/hook"}, format="json")

    assert private.status_code == 201
    assert_problem(unspecified, 400, "webhook_address_forbidden")
    assert_problem(multicast, 400, "webhook_address_forbidden")


# --- The rule itself, for every address -----------------------------------------------------

ipv4_addresses = st.integers(min_value=0, max_value=2**32 - 1).map(ipaddress.IPv4Address)
ipv6_addresses = st.integers(min_value=0, max_value=2**128 - 1).map(ipaddress.IPv6Address)


@given(ipv4_addresses | ipv6_addresses)
def test_an_allowed_address_is_globally_reachable_unicast(address):
    if address_refusal(address) is None:
        assert address.is_global
        assert not address.is_multicast
        assert not address.is_private
        assert not address.is_reserved
        assert address not in ipaddress.ip_network("100.64.0.0/10")


@given(ipv4_addresses)
def test_an_ipv4_address_inside_ipv6_is_judged_as_itself(address):
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    six_to_four = ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80) | 1)

    assert (address_refusal(mapped) is None) == (address_refusal(address) is None)
    assert (address_refusal(six_to_four) is None) == (address_refusal(address) is None)


@given(st.sampled_from(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "100.64.0.0/10"]), st.data())
def test_every_address_of_an_internal_network_is_refused(network, data):
    block = ipaddress.IPv4Network(network)
    offset = data.draw(st.integers(min_value=0, max_value=block.num_addresses - 1))

    assert address_refusal(block[offset]) is not None


# --- Connecting to the checked address ------------------------------------------------------


def test_a_delivery_connects_to_the_checked_address_without_resolving_the_name_again(receiver):
    # A name that resolves nowhere: had the request resolved it again, it could not connect.
    target = url_parse(f"http://rebinding.invalid:{receiver.port}/hook")
    checked = CheckedTarget(target=target, addresses=(ipaddress.ip_address("127.0.0.1"),))

    answer = post_pinned(checked, body=b"{}", headers={}, timeout=5)

    assert (answer.status_code, answer.address) == (204, "127.0.0.1")
    (received,) = receiver.received
    assert received.headers["host"] == f"rebinding.invalid:{receiver.port}"


def test_a_delivery_tries_the_next_checked_address_when_one_refuses_the_connection(receiver):
    refusing = ipaddress.ip_address("127.0.0.2")  # loopback too, but nothing listens there
    checked = CheckedTarget(target=url_parse(receiver.url()), addresses=(refusing, ipaddress.ip_address("127.0.0.1")))

    answer = post_pinned(checked, body=b"{}", headers={}, timeout=5)

    assert answer.address == "127.0.0.1"
    assert len(receiver.received) == 1
