"""Where webhooks and the hub handle the other apps' events (subscribed in
WebhooksConfig.ready): the domain events become webhook deliveries and hub messages
carrying the API's own view of what changed, and an account's end (deleted, a key revoked,
a password changed) closes its hub connections."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from accounts.events import AccountClosing, ApiKeyRevoked, PasswordChanged
from accounts.models import User
from exports.events import ExportReady
from exports.models import ExportFile
from exports.serializers import ExportFileSerializer
from projects.api.serializers import JobSerializer, StatusViewSerializer
from projects.events import JobFinished, ProjectStatusChanged
from projects.models import Job, Project
from projects.selectors.status import status_view_for
from wallet.api.serializers import TopUpViewSerializer, WalletViewSerializer
from wallet.events import LowBalance, TopUpConfirmed
from wallet.models import TopUp
from wallet.selectors.wallet import wallet_view_for
from webhooks.events import (
    EXPORT_READY,
    JOB_FAILED,
    JOB_SUCCEEDED,
    PROJECT_STATUS_CHANGED,
    WALLET_LOW_BALANCE,
    WALLET_TOP_UP_CONFIRMED,
)
from webhooks.services.fanout import publish
from webhooks.services.hub import (
    CLOSE_ACCOUNT_DELETED,
    api_key_group,
    hub_credential_check,
    hub_owner_disconnect,
    jwt_group,
)
from webhooks.services.subscriptions import owner_subscriptions_delete

# Each view is composed when the event is sent (after the commit), so it shows the committed state.


def status_changed_send(event: ProjectStatusChanged) -> None:
    """project.status_changed, carrying the status view."""

    def status_view() -> dict[str, Any]:
        return dict(StatusViewSerializer(status_view_for(project=Project.objects.get(pk=event.project_id))).data)

    publish(PROJECT_STATUS_CHANGED, owner_id=event.owner_id, project_id=event.project_id, data=status_view)


def job_finished_send(event: JobFinished) -> None:
    """job.succeeded or job.failed, carrying the job as GET /v1/jobs/{id} shows it."""

    def job_view() -> dict[str, Any]:
        return dict(JobSerializer(Job.objects.get(pk=event.job_id)).data)

    event_type = JOB_SUCCEEDED if event.succeeded else JOB_FAILED
    publish(event_type, owner_id=event.owner_id, project_id=event.project_id, data=job_view)


def export_ready_send(event: ExportReady) -> None:
    """export.ready, carrying the Export file entry (as the API lists it)."""

    def entry() -> dict[str, Any]:
        return dict(ExportFileSerializer(ExportFile.objects.get(pk=event.export_id)).data)

    publish(EXPORT_READY, owner_id=event.owner_id, project_id=event.project_id, data=entry)


def top_up_confirmed_send(event: TopUpConfirmed) -> None:
    """wallet.top_up_confirmed, carrying the Top-up view (a redeemed code included)."""

    def top_up_view() -> dict[str, Any]:
        top_up = TopUp.objects.select_related("user").get(pk=event.top_up_id)
        return TopUpViewSerializer.of(top_up, balance=wallet_view_for(user=top_up.user).balance)

    publish(WALLET_TOP_UP_CONFIRMED, owner_id=event.owner_id, data=top_up_view)


def low_balance_send(event: LowBalance) -> None:
    """wallet.low_balance, carrying the Wallet view."""

    def wallet_view() -> dict[str, Any]:
        return dict(WalletViewSerializer(wallet_view_for(user=User.objects.get(pk=event.owner_id)).as_wire()).data)

    publish(WALLET_LOW_BALANCE, owner_id=event.owner_id, data=wallet_view)


def end_on_account_closing(event: AccountClosing) -> None:
    """An account is being deleted (inside its transaction): its subscriptions go with
    their deliveries, and once committed its hub connections are closed (4410)."""
    user = event.user
    owner_subscriptions_delete(owner=user)
    transaction.on_commit(
        partial(hub_owner_disconnect, owner_id=user.pk, code=CLOSE_ACCOUNT_DELETED, reason="account_deleted")
    )


def end_on_api_key_revoked(event: ApiKeyRevoked) -> None:
    """An API key was revoked (after the commit): the hub connections opened with it check
    it again, and so close (4401 api_key_revoked)."""
    hub_credential_check(group=api_key_group(event.key_id))


def end_on_password_changed(event: PasswordChanged) -> None:
    """The password changed (after the commit), voiding every JWT issued before: the
    account's JWT connections check theirs again, and those of an older token close
    (4401 token_revoked)."""
    hub_credential_check(group=jwt_group(event.user_id))
