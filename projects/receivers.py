"""Where projects listen to the wallet (connected in ProjectsConfig.ready)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from projects.jobs import projects_resume_for_credit

logger = logging.getLogger(__name__)


def resume_on_credit(sender: Any, *, user_id: uuid.UUID, **kwargs: Any) -> None:
    """Credit landed, or the spending ceiling gave room (after the commit): books paused
    for credit continue. A failure here must not undo or fail the credit that is already
    committed: it is logged, and the next credit, or the owner's process call, resumes the
    book."""
    try:
        projects_resume_for_credit(user_id=user_id)
    except Exception:
        logger.exception("resuming the books of user %s after a credit failed", user_id)
