"""config: the Django project — settings read from the environment (config/settings.py),
the URL root, the ASGI application with its websocket routes, and the Celery app
(config/celery_app.py, exported here so `@shared_task` binds to it).

Layers: config sits above every app and wires them together (urls, websocket routes,
the Celery app's logging and metrics from core); no app imports it.
"""

from config.celery_app import app as celery_app

__all__ = ["celery_app"]
