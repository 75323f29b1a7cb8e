"""Sign-in with an OpenID Connect ID token: verification, linking and the provider's keys.

The providers' key sets are served by a real HTTP server on 127.0.0.1 that each test
starts; the tokens are minted here with keys generated here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from django.db import connection, transaction
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from accounts.models import ExternalIdentity, User
from accounts.services import oidc
from tests.accounts.helpers import assert_signed_in
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.local_http import QuietHandler, serving
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

GOOGLE_ISSUER = "https://accounts.google.com"
GOOGLE_CLIENT = "1234-web.apps.googleusercontent.com"
GOOGLE_IOS_CLIENT = "1234-ios.apps.googleusercontent.com"
APPLE_ISSUER = "https://appleid.apple.com"
APPLE_CLIENT = "com.example.books"
ACME_ISSUER = "https://login.acme.test"
ACME_CLIENT = "books-acme"


# --- Keys and tokens --------------------------------------------------------------------


@dataclass(frozen=True)
class SigningKey:
    kid: str
    algorithm: str
    private_key: Any

    def jwk(self) -> dict[str, Any]:
        converter = RSAAlgorithm if self.algorithm == "RS256" else ECAlgorithm
        public = converter.to_jwk(self.private_key.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    def public_pem(self) -> bytes:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@pytest.fixture(scope="module")
def rsa_key() -> SigningKey:
    return SigningKey("rsa-1", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.fixture(scope="module")
def rotated_key() -> SigningKey:
    return SigningKey("rsa-2", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.fixture(scope="module")
def stranger_key() -> SigningKey:
    """Not published by any provider, but it claims the kid of the published key."""
    return SigningKey("rsa-1", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.fixture(scope="module")
def ec_key() -> SigningKey:
    return SigningKey("ec-1", "ES256", ec.generate_private_key(ec.SECP256R1()))


def mint(key: SigningKey, claims: dict[str, Any], *, headers: dict[str, Any] | None = None) -> str:
    return jwt.encode(claims, key.private_key, algorithm=key.algorithm, headers={"kid": key.kid, **(headers or {})})


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_with_public_key(key: SigningKey, claims: dict[str, Any]) -> str:
    """The algorithm-confusion forgery: HMAC keyed with the provider's public key."""
    signing_input = (
        b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": key.kid}).encode())
        + "."
        + b64url(json.dumps(claims).encode())
    )
    signature = hmac.new(key.public_pem(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def google_claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": GOOGLE_ISSUER,
        "aud": GOOGLE_CLIENT,
        "azp": GOOGLE_CLIENT,
        "sub": "110169484474386276334",
        "email": "Ada.Reader@Gmail.com",
        "email_verified": True,
        "name": "Ada Reader",
        "iat": now,
        "exp": now + 3600,
    }
    claims.update(overrides)
    return {name: value for name, value in claims.items() if value is not None}


def apple_claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": APPLE_ISSUER,
        "aud": APPLE_CLIENT,
        "sub": "001234.5a6b7c8d9e0f.1234",
        "email": "x7k2q9@privaterelay.appleid.com",
        "email_verified": "true",
        "is_private_email": "true",
        "iat": now,
        "exp": now + 600,
    }
    claims.update(overrides)
    return {name: value for name, value in claims.items() if value is not None}


# --- The providers' key-set server ------------------------------------------------------


@dataclass
class JwksServer:
    """Serves {"keys": [...]} at /keys; `body` replaces the answer when set."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    body: bytes | None = None
    hits: int = 0
    url: str = ""

    def publish(self, *keys: SigningKey) -> None:
        self.keys = [key.jwk() for key in keys]


@pytest.fixture
def jwks(rsa_key: SigningKey, ec_key: SigningKey) -> Iterator[JwksServer]:
    state = JwksServer()
    state.publish(rsa_key, ec_key)

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            state.hits += 1
            body = state.body if state.body is not None else json.dumps({"keys": state.keys}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as address:
        state.url = f"{address}/keys"
        yield state


@pytest.fixture(autouse=True)
def providers(settings: Any, jwks: JwksServer) -> Iterator[None]:
    """Google, Apple and a custom provider, all publishing their keys at the local server."""
    settings.OIDC_PROVIDERS = {
        "google": {
            "issuers": [GOOGLE_ISSUER, "accounts.google.com"],
            "jwks_url": jwks.url,
            "client_ids": [GOOGLE_CLIENT, GOOGLE_IOS_CLIENT],
        },
        "apple": {"issuers": [APPLE_ISSUER], "jwks_url": jwks.url, "client_ids": [APPLE_CLIENT]},
        "acme": {"issuers": [ACME_ISSUER], "jwks_url": jwks.url, "client_ids": [ACME_CLIENT]},
        "dormant": {"issuers": ["https://dormant.test"], "jwks_url": jwks.url, "client_ids": []},
    }
    settings.OIDC_LEEWAY_SECONDS = 60
    settings.OIDC_HTTP_TIMEOUT_SECONDS = 2.0
    settings.OIDC_JWKS_REFRESH_COOLDOWN_SECONDS = 30.0
    oidc.jwks_cache_clear()
    yield
    oidc.jwks_cache_clear()


@pytest.fixture
def sign_in(api_client: Any) -> Callable[..., Any]:
    def post(provider: str, id_token: str | None, **body: Any) -> Any:
        payload = {"idToken": id_token, **body} if id_token is not None else body
        return api_client.post(f"/v1/auth/oauth/{provider}", payload, format="json")

    return post


def assert_nothing_created() -> None:
    assert not User.objects.exists()
    assert not ExternalIdentity.objects.exists()


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- Creating, finding and linking accounts ---------------------------------------------


def test_a_valid_google_token_creates_a_passwordless_verified_account_whose_token_works(sign_in, api_client, rsa_key):
    response = sign_in("google", mint(rsa_key, google_claims()))

    assert response.status_code == 200, response.content
    body = response.json()
    assert_signed_in(api_client, body, email="ada.reader@gmail.com", has_password=False, email_verified=True)
    identity = ExternalIdentity.objects.get()
    assert (identity.provider, identity.subject, identity.email) == (
        "google",
        "110169484474386276334",
        "ada.reader@gmail.com",
    )
    assert str(identity.user_id) == body["user"]["id"]


def test_signing_in_again_with_the_same_identity_returns_the_same_account(sign_in, rsa_key):
    first = sign_in("google", mint(rsa_key, google_claims()))
    first_seen = ExternalIdentity.objects.get().last_sign_in_at

    second = sign_in("google", mint(rsa_key, google_claims(name="Renamed At Google")))

    assert second.status_code == 200
    assert second.json()["user"]["id"] == first.json()["user"]["id"]
    assert second.json()["user"]["displayName"] == "Ada Reader"
    assert User.objects.count() == 1
    assert ExternalIdentity.objects.get().last_sign_in_at > first_seen


def test_the_provider_name_is_matched_without_regard_to_case(sign_in, rsa_key):
    assert sign_in("Google", mint(rsa_key, google_claims())).status_code == 200
    assert ExternalIdentity.objects.get().provider == "google"


def test_apple_email_verified_as_the_string_true_counts_as_verified(sign_in, rsa_key):
    response = sign_in("apple", mint(rsa_key, apple_claims()), displayName="Ada from Apple")

    assert response.status_code == 200, response.content
    user = response.json()["user"]
    assert user["emailVerified"] is True
    assert user["hasPassword"] is False
    assert user["displayName"] == "Ada from Apple"  # Apple's token has no name claim


def test_without_a_name_anywhere_the_display_name_is_the_email_local_part(sign_in, rsa_key):
    response = sign_in("apple", mint(rsa_key, apple_claims()))

    assert response.json()["user"]["displayName"] == "x7k2q9"


def test_a_returning_apple_identity_signs_in_without_an_email_in_the_token(sign_in, rsa_key):
    first = sign_in("apple", mint(rsa_key, apple_claims()))

    again = sign_in("apple", mint(rsa_key, apple_claims(email=None, email_verified=None, is_private_email=None)))

    assert again.status_code == 200, again.content
    assert again.json()["user"]["id"] == first.json()["user"]["id"]
    assert ExternalIdentity.objects.get().email == "x7k2q9@privaterelay.appleid.com"


def test_a_new_identity_without_an_email_is_refused_and_nothing_is_created(sign_in, rsa_key):
    response = sign_in("apple", mint(rsa_key, apple_claims(email=None, email_verified=None)))

    body = assert_problem(response, 401, "identity_token_invalid")
    assert "no email address" in body["detail"]
    assert_nothing_created()


def test_a_verified_email_links_the_identity_to_an_existing_verified_account(sign_in, api_client, rsa_key):
    existing = UserFactory(email="ada.reader@gmail.com", display_name="Ada (password)", email_verified=True)

    response = sign_in("google", mint(rsa_key, google_claims()))

    assert response.status_code == 200, response.content
    user = response.json()["user"]
    assert user["id"] == str(existing.pk)
    assert user["hasPassword"] is True
    assert user["displayName"] == "Ada (password)"
    assert user["emailVerified"] is True
    assert User.objects.count() == 1
    assert ExternalIdentity.objects.get().user_id == existing.pk
    login = api_client.post("/v1/auth/login", {"email": existing.email, "password": DEFAULT_PASSWORD})
    assert login.status_code == 200


def assert_refused_as_taken(response: Any, existing: User, *, says: str) -> None:
    """409 email_taken, saying why; the existing account stays alone, unlinked and unverified."""
    body = assert_problem(response, 409, "email_taken")
    assert says in body["detail"]
    assert list(User.objects.all()) == [existing]
    assert not ExternalIdentity.objects.exists()
    existing.refresh_from_db()
    assert existing.email_verified is False


def test_a_verified_email_never_links_to_an_account_whose_address_was_never_verified(sign_in, rsa_key):
    squatter = UserFactory(email="ada.reader@gmail.com", email_verified=False)

    response = sign_in("google", mint(rsa_key, google_claims()))

    assert_refused_as_taken(response, squatter, says="never verified")


def test_an_unverified_email_of_an_existing_account_is_refused_and_nothing_is_linked(sign_in, rsa_key):
    existing = UserFactory(email="ada.reader@gmail.com")

    response = sign_in("google", mint(rsa_key, google_claims(email_verified=False)))

    assert_refused_as_taken(response, existing, says="password")


def test_apple_email_verified_false_as_a_string_never_links(sign_in, rsa_key):
    UserFactory(email="x7k2q9@privaterelay.appleid.com")

    response = sign_in("apple", mint(rsa_key, apple_claims(email_verified="false")))

    assert_problem(response, 409, "email_taken")
    assert not ExternalIdentity.objects.exists()


def test_an_unverified_email_of_nobody_creates_an_unverified_account(sign_in, rsa_key):
    response = sign_in("google", mint(rsa_key, google_claims(email_verified=False)))

    assert response.status_code == 200
    assert response.json()["user"]["emailVerified"] is False
    assert User.objects.get().email_verified is False


def test_a_disabled_linked_account_is_refused(sign_in, rsa_key):
    sign_in("google", mint(rsa_key, google_claims()))
    User.objects.update(is_active=False)

    response = sign_in("google", mint(rsa_key, google_claims()))

    assert_problem(response, 401, "account_disabled")


def test_a_disabled_account_is_not_linked_by_email(sign_in, rsa_key):
    UserFactory(email="ada.reader@gmail.com", is_active=False, email_verified=True)

    response = sign_in("google", mint(rsa_key, google_claims()))

    assert_problem(response, 401, "account_disabled")
    assert not ExternalIdentity.objects.exists()


def test_an_es256_token_of_a_configured_custom_provider_signs_in(sign_in, ec_key):
    claims = google_claims(iss=ACME_ISSUER, aud=ACME_CLIENT, azp=None, sub="acme-42")

    response = sign_in("acme", mint(ec_key, claims))

    assert response.status_code == 200, response.content
    assert ExternalIdentity.objects.get().provider == "acme"


def test_a_token_for_a_second_client_id_and_the_bare_issuer_spelling_is_accepted(sign_in, rsa_key):
    claims = google_claims(aud=GOOGLE_IOS_CLIENT, iss="accounts.google.com")

    assert sign_in("google", mint(rsa_key, claims)).status_code == 200


def test_a_token_expired_within_the_leeway_is_accepted(sign_in, rsa_key):
    now = int(time.time())

    response = sign_in("google", mint(rsa_key, google_claims(iat=now - 3630, exp=now - 30)))

    assert response.status_code == 200


def test_a_matching_nonce_is_accepted(sign_in, rsa_key):
    response = sign_in("google", mint(rsa_key, google_claims(nonce="n-0S6_WzA2Mj")), nonce="n-0S6_WzA2Mj")

    assert response.status_code == 200


# --- Refused tokens ---------------------------------------------------------------------


def _now() -> int:
    return int(time.time())


REFUSED_TOKENS: dict[str, Callable[[SigningKey, SigningKey], tuple[str, dict[str, Any]]]] = {
    "signed by a key the provider does not publish": lambda key, stranger: (mint(stranger, google_claims()), {}),
    "wrong issuer": lambda key, _: (mint(key, google_claims(iss="https://accounts.evil.test")), {}),
    "another provider's issuer": lambda key, _: (mint(key, google_claims(iss=APPLE_ISSUER)), {}),
    "wrong audience": lambda key, _: (mint(key, google_claims(aud="someone-elses-app")), {}),
    "an untrusted extra audience": lambda key, _: (mint(key, google_claims(aud=[GOOGLE_CLIENT, "other-app"])), {}),
    "expired beyond the leeway": lambda key, _: (
        mint(key, google_claims(iat=_now() - 7200, exp=_now() - 3600)),
        {},
    ),
    "not valid before a future time": lambda key, _: (mint(key, google_claims(nbf=_now() + 3600)), {}),
    "issued in the future": lambda key, _: (mint(key, google_claims(iat=_now() + 3600)), {}),
    "without an expiry": lambda key, _: (mint(key, google_claims(exp=None)), {}),
    "without a subject": lambda key, _: (mint(key, google_claims(sub=None)), {}),
    "with an empty subject": lambda key, _: (mint(key, google_claims(sub="")), {}),
    "alg none": lambda key, _: (
        jwt.encode(google_claims(), None, algorithm="none", headers={"kid": key.kid}),  # type: ignore[arg-type]
        {},
    ),
    "HS256 keyed with the public key": lambda key, _: (hs256_with_public_key(key, google_claims()), {}),
    "RS512 from a published RSA key": lambda key, _: (
        jwt.encode(google_claims(), key.private_key, algorithm="RS512", headers={"kid": key.kid}),
        {},
    ),
    "without a kid": lambda key, _: (jwt.encode(google_claims(), key.private_key, algorithm="RS256"), {}),
    "not a JWT": lambda key, _: ("not-a-jwt", {}),
    "a nonce that does not match": lambda key, _: (
        mint(key, google_claims(nonce="expected-nonce")),
        {"nonce": "another-nonce"},
    ),
    "no nonce when one is sent": lambda key, _: (mint(key, google_claims()), {"nonce": "expected-nonce"}),
}


@pytest.mark.parametrize("case", list(REFUSED_TOKENS))
def test_a_token_failing_verification_is_refused_and_nothing_is_created(sign_in, rsa_key, stranger_key, case):
    token, extra = REFUSED_TOKENS[case](rsa_key, stranger_key)

    response = sign_in("google", token, **extra)

    assert_problem(response, 401, "identity_token_invalid")
    assert_nothing_created()


def test_a_refusal_says_why(sign_in, rsa_key):
    expired = sign_in("google", mint(rsa_key, google_claims(iat=_now() - 7200, exp=_now() - 3600)))
    audience = sign_in("google", mint(rsa_key, google_claims(aud="someone-elses-app")))

    assert "expired" in expired.json()["detail"]
    assert "(aud)" in audience.json()["detail"]


def test_a_refused_token_does_not_touch_an_existing_account(sign_in, rsa_key, stranger_key):
    existing = UserFactory(email="ada.reader@gmail.com")

    response = sign_in("google", mint(stranger_key, google_claims()))

    assert_problem(response, 401, "identity_token_invalid")
    assert not ExternalIdentity.objects.exists()
    existing.refresh_from_db()
    assert existing.email_verified is False


# --- Providers and their keys -----------------------------------------------------------


@pytest.mark.parametrize("provider", ["facebook", "dormant"])
def test_an_unknown_or_unconfigured_provider_is_not_found(sign_in, rsa_key, jwks, provider):
    response = sign_in(provider, mint(rsa_key, google_claims()))

    assert_problem(response, 404, "provider_unknown")
    assert jwks.hits == 0
    assert_nothing_created()


def test_an_unreachable_key_server_makes_the_provider_unavailable(sign_in, settings, rsa_key):
    settings.OIDC_PROVIDERS["google"]["jwks_url"] = f"http://127.0.0.1:{unused_port()}/keys"

    response = sign_in("google", mint(rsa_key, google_claims()))

    assert_problem(response, 503, "provider_unavailable")
    assert_nothing_created()


def test_a_key_server_that_does_not_answer_in_time_makes_the_provider_unavailable(sign_in, settings, rsa_key):
    settings.OIDC_HTTP_TIMEOUT_SECONDS = 0.3
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        settings.OIDC_PROVIDERS["google"]["jwks_url"] = f"http://127.0.0.1:{silent.getsockname()[1]}/keys"
        started = time.monotonic()

        response = sign_in("google", mint(rsa_key, google_claims()))

    assert_problem(response, 503, "provider_unavailable")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("body", [b"<html>maintenance</html>", b"[]", b'{"keys": []}'])
def test_a_key_server_answering_nonsense_makes_the_provider_unavailable(sign_in, jwks, rsa_key, body):
    jwks.body = body

    response = sign_in("google", mint(rsa_key, google_claims()))

    assert_problem(response, 503, "provider_unavailable")
    assert_nothing_created()


def test_the_key_set_is_fetched_once_and_then_served_from_the_cache(sign_in, jwks, rsa_key):
    for _ in range(3):
        assert sign_in("google", mint(rsa_key, google_claims())).status_code == 200

    assert jwks.hits == 1


def test_a_token_signed_with_a_rotated_in_key_succeeds_after_one_refetch(sign_in, settings, jwks, rsa_key, rotated_key):
    settings.OIDC_JWKS_REFRESH_COOLDOWN_SECONDS = 0
    assert sign_in("google", mint(rsa_key, google_claims())).status_code == 200
    jwks.publish(rotated_key)

    response = sign_in("google", mint(rotated_key, google_claims()))

    assert response.status_code == 200, response.content
    assert jwks.hits == 2


def test_an_unknown_kid_refetches_the_key_set_once_then_is_refused(sign_in, settings, jwks, rsa_key):
    settings.OIDC_JWKS_REFRESH_COOLDOWN_SECONDS = 0
    unknown = SigningKey("rsa-unknown", "RS256", rsa_key.private_key)

    response = sign_in("google", mint(unknown, google_claims()))

    assert_problem(response, 401, "identity_token_invalid")
    assert jwks.hits == 2


def test_unknown_kids_within_the_cooldown_do_not_refetch_the_key_set(sign_in, jwks, rsa_key, rotated_key):
    assert sign_in("google", mint(rsa_key, google_claims())).status_code == 200
    jwks.publish(rotated_key)

    response = sign_in("google", mint(rotated_key, google_claims()))

    assert_problem(response, 401, "identity_token_invalid")
    assert jwks.hits == 1


# --- Requests ---------------------------------------------------------------------------


def test_a_missing_id_token_is_a_validation_error(sign_in, jwks):
    response = sign_in("google", None, nonce="abc")

    body = assert_problem(response, 400, "validation_error")
    assert "idToken" in body["errors"]
    assert jwks.hits == 0


def test_external_sign_in_is_rate_limited(sign_in, settings, rsa_key):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "oauth": "2/min"}
    for _ in range(2):
        sign_in("google", "not-a-jwt")

    assert_problem(sign_in("google", mint(rsa_key, google_claims())), 429, "rate_limited")
    assert_nothing_created()


# --- Concurrency --------------------------------------------------------------------------


def _wait_for_a_lock_wait(outcome: dict[str, Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError(f"the second sign-in never waited on the first one's rows: {outcome}")


@pytest.mark.django_db(transaction=True)
def test_a_concurrent_double_first_sign_in_yields_one_account_and_one_link(rsa_key):
    token = mint(rsa_key, google_claims())
    outcome: dict[str, Any] = {}

    def second_sign_in() -> None:
        try:
            outcome["user"] = oidc.identity_sign_in(provider="google", id_token=token)
        except Exception as error:  # reported to the test thread below
            outcome["error"] = error
        finally:
            connection.close()

    with transaction.atomic():  # the first sign-in's rows stay uncommitted while the second one starts
        first = oidc.identity_sign_in(provider="google", id_token=token)
        second = threading.Thread(target=second_sign_in)
        second.start()
        _wait_for_a_lock_wait(outcome)
    second.join(timeout=10)

    assert "error" not in outcome, outcome.get("error")
    assert outcome["user"].pk == first.pk
    assert User.objects.count() == 1
    assert ExternalIdentity.objects.count() == 1
