"""The Celery app: Redis broker, late acknowledgement, redelivery of a lost worker's task.

The Job table is the source of truth; a message only wakes a worker, so a redelivered
message for a job already claimed does nothing (see docs/processing.md).
"""

import os

from celery import Celery
from celery.signals import (
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
)
from django.conf import settings
from kombu import Exchange, Queue

from core.logging import (
    task_log_context_bind,
    task_log_context_unbind,
    task_request_id_publish,
    worker_process_log_context_enable,
)
from core.metrics import worker_metrics_prepare, worker_metrics_serve

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("booktranslate")
app.config_from_object("django.conf:settings", namespace="CELERY")
# One direct exchange per queue name, so a message reaches exactly the queue it names.
WORK_QUEUES: tuple[str, ...] = tuple(settings.WORK_QUEUES)
app.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in WORK_QUEUES]
app.autodiscover_tasks()

# Observability (docs/observability.md): the request id travels in each message's headers
# and is back in the worker's log context while the task runs; a worker started with
# WORKER_METRICS_PORT serves its metrics there.
before_task_publish.connect(task_request_id_publish)
task_prerun.connect(task_log_context_bind)
task_postrun.connect(task_log_context_unbind)
worker_process_init.connect(worker_process_log_context_enable)
worker_init.connect(worker_metrics_prepare)
worker_ready.connect(worker_metrics_serve)
