"""What projects tell the apps above them (webhooks and the hub), through core's event bus
(core/events.py): status changes and job ends. Published inside the transaction that made
the change; handled after it commits."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from core.events import DomainEvent, publish


@dataclass(frozen=True)
class ProjectStatusChanged(DomainEvent):
    project_id: uuid.UUID
    owner_id: uuid.UUID


@dataclass(frozen=True)
class JobFinished(DomainEvent):
    job_id: uuid.UUID
    project_id: uuid.UUID
    owner_id: uuid.UUID
    succeeded: bool


def status_changed_publish(*, project_id: uuid.UUID, owner_id: uuid.UUID | None) -> None:
    """A book's status changed (a book of no owner tells nobody)."""
    if owner_id is not None:
        publish(ProjectStatusChanged(project_id=project_id, owner_id=owner_id))


def job_finished_publish(*, job_id: uuid.UUID, project_id: uuid.UUID, owner_id: uuid.UUID | None, ok: bool) -> None:
    """A job ended, succeeded or not."""
    if owner_id is not None:
        publish(JobFinished(job_id=job_id, project_id=project_id, owner_id=owner_id, succeeded=ok))
