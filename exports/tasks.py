"""Background work of exports: rendering on the `export` queue (CPU workers)."""

from __future__ import annotations

from celery import shared_task

from exports import services


@shared_task(name=services.EXPORT_RENDER_TASK)
def export_render(export_id: str) -> str | None:
    """Render one pending export to storage; a message for an export already made does
    nothing."""
    export = services.export_render(export_id=export_id)
    return export.status if export else None
