"""What the reliability tests share: the API's operations as the OpenAPI schema lists them,
and a "world" of fresh rows for one test (an owner with credit, a book with pages, a job,
an export, a webhook and a delivery, a saved card, a top-up, and a credential of every
kind), with the values of every path parameter."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from accounts.models import ApiKey, Scope, User
from accounts.services.api_keys import api_key_create, api_key_revoke
from accounts.services.users import token_issue
from exports.models import ExportFile
from projects.services import jobs
from tests.factories import ProjectFactory, UserFactory, pages_add
from wallet.models import EntryKind, SavedCard
from wallet.services.checkout import top_up_request
from wallet.services.ledger import wallet_credit
from webhooks.services.deliveries import delivery_test_send
from webhooks.services.subscriptions import subscription_create

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2215fc10000000049454e44ae426082"
)


def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


# Served but left out of the public document: the payment processors' callbacks.
UNDOCUMENTED_OPERATIONS = ["POST /v1/payments/btcpay/webhook", "POST /v1/payments/stripe/webhook"]


def operations() -> list[str]:
    """Every operation: the schema's, and the callbacks it leaves out."""
    documented = [
        f"{method.upper()} {path}"
        for path, entries in schema()["paths"].items()
        for method in entries
        if method in ("get", "post", "put", "patch", "delete")
    ]
    return sorted([*documented, *UNDOCUMENTED_OPERATIONS])


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
            "pageId": str(page.pk),
            "jobId": str(job.pk),
            "name": export.file_name,
            "deliveryId": str(delivery.pk),
            "cardId": str(card.pk),
            "reference": top_up.reference,
            "code": "not_found",
            "provider": "google",
            # `{id}` is a project's, a webhook's or an API key's, by the path it is in.
            "id:projects": str(project.pk),
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
            return values["id:" + path.split("/")[2]]
        return values[name]

    return re.sub(r"{(\w+)}", value, path)


def call(operation: str, world: World, caller: str, body: bytes | str = "{}") -> Any:
    """`operation` ("POST /v1/...") as `caller`, with this JSON body."""
    method, path = operation.split(" ", 1)
    client = APIClient()
    credential = world.credentials[caller]
    if credential is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    return client.generic(method, url_for(path, world.path_values), data=body, content_type="application/json")
