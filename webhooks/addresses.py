"""Where a webhook may be sent, and sending it there safely (no SSRF).

A webhook url must be absolute http(s), and every address its host resolves to must be
public: never private, loopback, link-local (169.254.169.254 is the cloud metadata
service), shared CGNAT 100.64.0.0/10 (which Python's `ipaddress` does not call private),
multicast, unspecified, reserved or a documentation range; IPv4 inside IPv6 (mapped,
compatible, 6to4) is judged by the IPv4 address it carries. The check runs at registration
(where a name that does not resolve yet is accepted: nothing to refuse) and again before
every delivery (where it fails that attempt), and the request then connects to an address that was just
checked (`post_pinned`), keeping the host name for the Host header, TLS SNI and certificate
check, so a name that resolves differently a second later (DNS rebinding) gains nothing.
Redirects are never followed.

Why not requests-hardened (DESIGN.md's example): it checks only the first address a name
resolves to, with a narrower rule (IPv4-compatible and reserved IPv6 ranges pass), resolves
the name again itself (so what we checked and where it connects could differ), and can
allow loopback only, not the private networks of an on-premise deployment
(WEBHOOK_ALLOW_PRIVATE_ADDRESSES). Its technique, a requests adapter that swaps the host
for the pinned address and keeps the name for TLS, is what `_PinnedAddressAdapter` does.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from django.conf import settings
from requests.adapters import HTTPAdapter

from webhooks.errors import AddressForbidden, UrlInvalid

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048
# The most addresses of one name a delivery tries, each after the previous refused to connect.
MAX_ADDRESSES_TRIED = 3
ALLOWED_SCHEMES = ("http", "https")
# A host name as it goes on the wire (after IDNA): letters, digits, hyphens, underscores, dots.
_HOST_NAME = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$")

# Ranges refused beyond what `ipaddress` flags (is_private, is_loopback, ... below), named.
_NAMED_NETWORKS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(network), reason)
    for network, reason in (
        ("100.64.0.0/10", "shared address space (CGNAT)"),
        ("0.0.0.0/8", "unspecified"),
        ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
        ("192.0.2.0/24", "documentation"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("198.18.0.0/15", "reserved (benchmarking)"),
        ("192.88.99.0/24", "reserved (6to4 relay anycast)"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
        ("::/96", "reserved (IPv4-compatible IPv6)"),
        ("64:ff9b::/96", "reserved (NAT64)"),
        ("64:ff9b:1::/48", "reserved (local NAT64)"),
        ("100::/64", "reserved (discard-only)"),
        ("2001::/32", "reserved (Teredo)"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("2001:20::/28", "reserved (ORCHIDv2)"),
        ("5f00::/16", "reserved (segment routing)"),
        ("fec0::/10", "site-local"),
    )
)


class HostUnresolvable(Exception):
    """The host does not resolve: a failed delivery attempt, never an answer to a request
    (registration accepts such a name), so not a problem code."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Target:
    """A parsed webhook url: its scheme, host name (IDNA, lower-case, no brackets) and port."""

    url: str
    scheme: str
    host: str
    port: int
    explicit_port: bool
    path_and_query: str

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    @property
    def request_url(self) -> str:
        """The url as sent: the normalised host, no fragment."""
        return f"{self.scheme}://{self.host_header}{self.path_and_query}"


@dataclass(frozen=True)
class CheckedTarget:
    target: Target
    addresses: tuple[IPAddress, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class PostAnswer:
    status_code: int
    headers: dict[str, str]
    body_excerpt: str
    address: str


def url_parse(url: str) -> Target:
    """The url's parts; UrlInvalid (400 webhook_url_invalid) unless it is an absolute
    http(s) url with a host, no user name or password, and no spaces or control characters."""
    if not url or len(url) > MAX_URL_LENGTH:
        raise UrlInvalid(f"The url must be 1 to {MAX_URL_LENGTH} characters.")
    if any(character.isspace() or not character.isprintable() for character in url):
        raise UrlInvalid("The url must not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise UrlInvalid(f"The url could not be parsed: {error}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise UrlInvalid("The url must start with https:// or http://.")
    if parts.username is not None or parts.password is not None:
        raise UrlInvalid("The url must not carry a user name or password; authenticate with the signature.")
    host = _host_normalize(parts.hostname or "")
    default_port = 443 if scheme == "https" else 80
    path_and_query = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(
        url=url,
        scheme=scheme,
        host=host,
        port=port or default_port,
        explicit_port=port is not None,
        path_and_query=path_and_query,
    )


def _host_normalize(host: str) -> str:
    if not host:
        raise UrlInvalid("The url has no host.")
    if ":" in host:  # an IPv6 literal (urlsplit took off the brackets)
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise UrlInvalid("The url's IPv6 address is not valid.") from None
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise UrlInvalid("The url's host name is not a valid domain name.") from None
    if not _HOST_NAME.match(ascii_host):
        raise UrlInvalid("The url's host name is not a valid domain name.")
    return ascii_host


def resolve(host: str, port: int) -> tuple[IPAddress, ...]:
    """Every address the system resolver gives for the host (an IP literal, in any of the
    forms the resolver accepts, is itself), in the resolver's order, without repeats.
    HostUnresolvable when there is none."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise HostUnresolvable(f"The host {host!r} could not be resolved ({error}).") from None
    addresses: list[IPAddress] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise HostUnresolvable(f"The host {host!r} has no IPv4 or IPv6 address.")
    return tuple(addresses)


def address_refusal(address: IPAddress) -> str | None:
    """Why a webhook may not go to this address (a short phrase), or None if it may."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            reason = address_refusal(embedded)
            kind = "IPv4-mapped" if address.ipv4_mapped is not None else "6to4"
            return f"{kind} {reason}" if reason else None
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    for network, reason in _NAMED_NETWORKS:
        if address.version == network.version and address in network:
            return reason
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "not globally reachable"
    return None


def _refusal_under_settings(address: IPAddress) -> str | None:
    """`address_refusal`, except that WEBHOOK_ALLOW_PRIVATE_ADDRESSES (tests, on-premise
    deployments) lets everything through but the unspecified and multicast addresses."""
    reason = address_refusal(address)
    if reason is None or not settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES:
        return reason
    unwrapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    plain = unwrapped or address
    return reason if plain.is_unspecified or plain.is_multicast else None


def target_check(url: str) -> CheckedTarget:
    """Before a delivery: parses the url, resolves its host and checks every address it
    resolves to. UrlInvalid, HostUnresolvable or AddressForbidden otherwise."""
    target = url_parse(url)
    addresses = resolve(target.host, target.port)
    _addresses_check(target, addresses)
    return CheckedTarget(target=target, addresses=addresses)


def registration_check(url: str) -> Target:
    """At registration (and a change of url): the url must parse (UrlInvalid), and a host
    that resolves must resolve to allowed addresses only (AddressForbidden). A name that
    does not resolve, or not yet (its DNS record is still to come, or this machine is
    offline), is accepted: there is nothing to refuse yet, and every delivery checks it again."""
    target = url_parse(url)
    try:
        addresses = resolve(target.host, target.port)
    except HostUnresolvable:
        return target
    _addresses_check(target, addresses)
    return target


def _addresses_check(target: Target, addresses: tuple[IPAddress, ...]) -> None:
    for address in addresses:
        reason = _refusal_under_settings(address)
        if reason is not None:
            shown = target.host if str(address) == target.host else f"{target.host} resolves to {address}, which"
            raise AddressForbidden(f"{shown} is {reason}: webhooks go to public addresses only.")


class _PinnedAddressAdapter(HTTPAdapter):
    """Connects to one checked address instead of resolving the url's host again, and
    keeps the host name for TLS (SNI and the certificate check)."""

    def __init__(self, *, address: IPAddress) -> None:
        super().__init__(max_retries=0)
        self._address = address

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        name = host_params["host"]
        if host_params["scheme"] == "https":
            pool_kwargs["server_hostname"] = name
            pool_kwargs["assert_hostname"] = name
        host_params["host"] = str(self._address)
        return host_params, pool_kwargs


def _never_connected(error: requests.RequestException) -> bool:
    """Whether the request failed before a connection was made (so nothing was sent)."""
    if isinstance(error, requests.ConnectTimeout):
        return True
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(error, requests.ConnectionError) and isinstance(reason, urllib3.exceptions.NewConnectionError)


def post_pinned(
    checked: CheckedTarget, *, body: bytes, headers: dict[str, str], timeout: float, excerpt_bytes: int = 256
) -> PostAnswer:
    """POSTs the body to the checked target, connecting only to its checked addresses (the
    next one when one refuses the connection), never following a redirect and ignoring
    proxy variables. Raises requests' exceptions (timeouts, connection and TLS errors)."""
    target = checked.target
    last_error: requests.RequestException | None = None
    for address in checked.addresses[:MAX_ADDRESSES_TRIED]:
        with requests.Session() as session:
            session.trust_env = False  # no proxies from the environment: they would undo the pinning
            session.verify = settings.WEBHOOK_CA_BUNDLE or True
            session.mount(f"{target.scheme}://", _PinnedAddressAdapter(address=address))
            try:
                response = session.post(
                    target.request_url,
                    data=body,
                    headers={**headers, "Host": target.host_header},
                    timeout=timeout,
                    allow_redirects=False,
                    stream=True,
                )
            except requests.RequestException as error:
                if not _never_connected(error):
                    raise
                last_error = error
                continue
            with response:
                try:
                    excerpt = response.raw.read(excerpt_bytes, decode_content=True) or b""
                except (urllib3.exceptions.HTTPError, OSError):
                    excerpt = b""  # the status is the answer; a body that stalls does not matter
                return PostAnswer(
                    status_code=response.status_code,
                    headers=dict(response.headers),
                    body_excerpt=excerpt.decode("utf-8", "replace"),
                    address=str(address),
                )
    assert last_error is not None  # addresses is never empty
    raise last_error
