"""Where projects handle other apps' events (subscribed in ProjectsConfig.ready)."""

from __future__ import annotations

import logging

from accounts.events import AccountClosing
from projects.services.jobs import projects_resume_for_credit
from projects.services.projects import owner_projects_delete
from wallet.events import CreditLanded, SpendingRoomGrew

logger = logging.getLogger(__name__)


def resume_on_credit(event: CreditLanded | SpendingRoomGrew) -> None:
    """Credit landed, or the spending ceiling gave room (after the commit): books paused
    for credit continue. A failure here must not undo or fail the credit that is already
    committed: it is logged, and the next credit, or the owner's process call, resumes the
    book."""
    try:
        projects_resume_for_credit(user_id=event.user_id)
    except Exception:
        logger.exception("resuming the books of user %s after a credit failed", event.user_id)


def delete_on_account_closing(event: AccountClosing) -> None:
    """An account is being deleted (inside its transaction): its books go, with their
    files and their batches' holds resolved, and its unadopted uploads."""
    owner_projects_delete(owner=event.user)
