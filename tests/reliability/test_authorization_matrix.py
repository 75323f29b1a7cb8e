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
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from accounts.api_keys import api_key_create, api_key_revoke
from accounts.models import ApiKey, Scope, User
from accounts.services import token_issue
from exports.models import ExportFile
from projects import jobs
from tests.factories import ProjectFactory, UserFactory, pages_add
from wallet.models import EntryKind, SavedCard
from wallet.services import wallet_credit
from wallet.topups import top_up_request
from webhooks.deliveries import delivery_test_send
from webhooks.services import subscription_create

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
    "GET /v1/model-status": PUBLIC,
    "GET /v1/problems": PUBLIC,
    "GET /v1/problems/{code}": PUBLIC,
    "POST /v1/payments/btcpay/webhook": PUBLIC,
    "POST /v1/payments/stripe/webhook": PUBLIC,
    "POST /v1/projects/{project_id}/pages/{page_id}/approve": APPROVE,
    "POST /v1/projects/{project_id}/pages/{page_id}/reject": APPROVE,
    "POST /v1/me/password": JWT_ONLY,
    "POST /v1/jobs/{job_id}/move": STAFF,
}
# Everything else follows the contract's read/write split: GET reads, any other method writes.
SAFE = {"GET", "HEAD", "OPTIONS"}

# Path parameters that name something of the owner's: another owner must get 404 there.
OWNED_PARAMETERS = {"project_id", "page_id", "job_id", "name", "id", "delivery_id", "card_id", "reference"}

# The codes of a refusal by the permission layer (a key without the scope, a key where only a
# sign-in will do, someone not staff).
PERMISSION_CODES = {"forbidden"}

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2215fc10000000049454e44ae426082"
)

CALLERS = ["anonymous", "other_owner", "read_key", "write_key", "approve_key", "revoked_key", "expired_key", "jwt"]


def operations() -> list[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        f"{method.upper()} {path}"
        for path, entries in schema["paths"].items()
        for method in entries
        if method in ("get", "post", "put", "patch", "delete")
    )


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


@dataclass
class World:
    """One cell's rows: the owner's things, and a credential for each caller."""

    owner: User
    path_values: dict[str, str]
    credentials: dict[str, str | None]


def world_build() -> World:
    owner, other = UserFactory(), UserFactory()
    wallet_credit(user=owner, amount=Decimal(10), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="matrix")
    project = ProjectFactory(owner=owner)
    page = pages_add(project, 2, text_layer="A page of the book, in a sentence or two.", has_text_layer=True)[0]
    default_storage.save(page.image_key, ContentFile(PNG))
    job = jobs.process_start(owner=owner, project_id=project.pk)
    export = ExportFile.objects.create(
        project=project,
        format="Markdown",
        options_key="plain",
        content_hash="0" * 64,
        file_name=f"matrix-{project.pk.hex}.md",
        save_as_name="matrix-book.md",
        mime_type="text/markdown",
    )
    subscription, _ = subscription_create(owner=owner, url="https://127.0.0.1:9/hook")
    delivery = delivery_test_send(subscription=subscription)
    card = SavedCard.objects.create(user=owner, stripe_payment_method_id=f"pm_matrix_{owner.pk.hex}", last4="4242")
    top_up = top_up_request(user=owner, amount=Decimal(5))
    spare_key, _ = api_key_create(user=owner, name="spare")

    def key(scopes: list[str]) -> str:
        return api_key_create(user=owner, name=f"matrix {scopes}", scopes=scopes)[1]

    revoked, revoked_secret = api_key_create(user=owner, name="revoked")
    api_key_revoke(key=revoked)
    expired, expired_secret = api_key_create(user=owner, name="expired", expires_in_days=1)
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    return World(
        owner=owner,
        path_values={
            "project_id": str(project.pk),
            "page_id": str(page.pk),
            "job_id": str(job.pk),
            "name": export.file_name,
            "delivery_id": str(delivery.pk),
            "card_id": str(card.pk),
            "reference": top_up.reference,
            "code": "not_found",
            "provider": "google",
            # `{id}` is a webhook's or an API key's, by the path it is in.
            "id:webhooks": str(subscription.pk),
            "id:api-keys": str(spare_key.pk),
        },
        credentials={
            "anonymous": None,
            "other_owner": token_issue(user=other).token,
            "read_key": key([Scope.PROJECTS_READ]),
            "write_key": key([Scope.PROJECTS_WRITE]),
            "approve_key": key([Scope.APPROVE]),
            "revoked_key": revoked_secret,
            "expired_key": expired_secret,
            "jwt": token_issue(user=owner).token,
        },
    )


def url_for(path: str, values: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "id":
            return values["id:webhooks" if path.startswith("/v1/webhooks") else "id:api-keys"]
        return values[name]

    return re.sub(r"{(\w+)}", value, path)


def call(operation: str, world: World, caller: str) -> Any:
    method, path = operation.split(" ", 1)
    client = APIClient()
    credential = world.credentials[caller]
    if credential is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    return client.generic(method, url_for(path, world.path_values), data="{}", content_type="application/json")


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
