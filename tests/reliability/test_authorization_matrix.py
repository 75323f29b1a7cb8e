"""The authorization matrix: every operation of the API (read from the OpenAPI schema, which
tests/core/test_schema.py holds to the URL conf) against every kind of caller, each cell
with the status it must get.

A new endpoint fails `test_every_operation_has_an_access_rule` until it is given a rule
below, so none can escape the matrix. The callers: nobody, another owner (a JWT of someone
else), API keys with projects:read, projects:write or approve, a revoked and an expired key,
and the owner's JWT. Each cell runs on fresh rows (a project with a page, a job, an export,
a webhook and a delivery, a saved card, a top-up), so no cell sees another's effects.
"""

from __future__ import annotations

import re

import pytest

from tests.reliability.world import call, operations, world_build

pytestmark = pytest.mark.django_db

# Access rules. PUBLIC: no credential needed (a provider's webhook proves itself by its
# signature instead). READ: any key scope. WRITE: projects:write. APPROVE: the approve scope.
# JWT_ONLY: an interactive sign-in, never a key. STAFF: an operator's JWT.
PUBLIC, READ, WRITE, APPROVE, JWT_ONLY, STAFF = "public", "read", "write", "approve", "jwt-only", "staff"

EXPLICIT_RULES = {
    "POST /v1/anonymous-estimate": PUBLIC,
    "POST /v1/auth/login": PUBLIC,
    "POST /v1/auth/oauth/{provider}": PUBLIC,
    "POST /v1/auth/register": PUBLIC,
    "GET /v1/meta": PUBLIC,
    "GET /v1/languages": PUBLIC,
    "GET /v1/model-status": PUBLIC,
    "GET /v1/problems": PUBLIC,
    "GET /v1/problems/{code}": PUBLIC,
    "POST /v1/payments/btcpay/webhook": PUBLIC,
    "POST /v1/payments/stripe/webhook": PUBLIC,
    "POST /v1/projects/{id}/pages/{pageId}/approve": APPROVE,
    "POST /v1/projects/{id}/pages/{pageId}/reject": APPROVE,
    "POST /v1/me/password": JWT_ONLY,
    "DELETE /v1/me": JWT_ONLY,
    "POST /v1/jobs/{jobId}/move": STAFF,
}
# Everything else follows the contract's read/write split: GET reads, any other method writes.
SAFE = {"GET", "HEAD", "OPTIONS"}

# Path parameters that name something of the owner's: another owner must get 404 there.
OWNED_PARAMETERS = {"id", "pageId", "jobId", "name", "deliveryId", "cardId", "reference"}

# The codes of a refusal by the permission layer (a key without the scope, a key where only a
# sign-in will do, someone not staff).
PERMISSION_CODES = {"forbidden"}

CALLERS = ["anonymous", "other_owner", "read_key", "write_key", "approve_key", "revoked_key", "expired_key", "jwt"]


def rule_of(operation: str) -> str:
    method = operation.split(" ", 1)[0]
    return EXPLICIT_RULES.get(operation, READ if method in SAFE else WRITE)


def expected(operation: str, caller: str) -> str:
    """What the cell must get: "401", "403", "404", or "allowed" (any answer the handler
    itself gives: neither 401 nor 403, and not the 404 of someone else's resource)."""
    rule = rule_of(operation)
    owned = bool(OWNED_PARAMETERS & set(re.findall(r"{(\w+)}", operation)))
    if rule == PUBLIC:
        return "allowed"
    if caller in ("anonymous", "revoked_key", "expired_key"):
        return "401"
    if rule == STAFF:
        return "403"
    if caller == "other_owner":
        return "404" if owned else "allowed"
    if caller == "jwt":
        return "allowed"
    key_can = {
        "read_key": {READ},
        "write_key": {READ, WRITE},
        "approve_key": {READ, APPROVE},
    }[caller]
    return "allowed" if rule in key_can else "403"


def test_every_operation_has_an_access_rule():
    # The rule table names only operations that exist, and every operation gets a rule
    # (EXPLICIT_RULES, or the read/write split) that this matrix checks.
    all_operations = set(operations())

    assert set(EXPLICIT_RULES) <= all_operations, set(EXPLICIT_RULES) - all_operations
    assert len(all_operations) >= 60


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("operation", operations())
def test_each_caller_gets_what_the_matrix_says(operation, caller, settings, local_storage):
    settings.TRANSLATION_ENGINE = "echo"
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.DEVELOPMENT_DEPLOYMENT = True
    world = world_build()

    response = call(operation, world, caller)

    want = expected(operation, caller)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    code = response.json().get("code") if response.status_code >= 400 else None
    if want == "allowed":
        # A handler's own 403 (a payment method not configured, ...) is an answer, not a refusal.
        assert response.status_code != 401, body
        assert not (response.status_code == 403 and code in PERMISSION_CODES), body
        assert response.status_code < 500, (response.status_code, body)
    else:
        assert response.status_code == int(want), (want, response.status_code, body)
    if want == "403":
        assert code in PERMISSION_CODES, body
    if caller == "revoked_key" and want == "401":
        assert response.json()["code"] == "api_key_revoked"
    if caller == "expired_key" and want == "401":
        assert response.json()["code"] == "api_key_expired"
