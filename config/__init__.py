"""config: the Django project — settings read from the environment (config/settings.py),
the URL root, the ASGI application with its websocket routes, and the Celery app
(config/celery_app.py, exported here so `@shared_task` binds to it).

Layers: config sits above every app and wires them together (urls, websocket routes).
Only core reaches into it: `core/metrics_collectors.py` reads the work queues' names from
`config.celery_app`, and the Celery app imports core's logging and metrics.
"""

from config.celery_app import app as celery_app

__all__ = ["celery_app"]
