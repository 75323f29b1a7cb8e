"""What exports tell the apps above them (webhooks and the hub), through core's event bus
(core/events.py): a file is ready."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from core.events import DomainEvent, publish


@dataclass(frozen=True)
class ExportReady(DomainEvent):
    export_id: uuid.UUID
    project_id: uuid.UUID
    owner_id: uuid.UUID


def export_ready_publish(*, export_id: uuid.UUID, project_id: uuid.UUID, owner_id: uuid.UUID | None) -> None:
    """An export file was written (a book of no owner tells nobody)."""
    if owner_id is not None:
        publish(ExportReady(export_id=export_id, project_id=project_id, owner_id=owner_id))
