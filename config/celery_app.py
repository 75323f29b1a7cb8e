"""The Celery app: Redis broker, late acknowledgement, redelivery of a lost worker's task.

The Job table is the source of truth; a message only wakes a worker, so a redelivered
message for a job already claimed does nothing (see docs/processing.md).
"""

import os

from celery import Celery
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("booktranslate")
app.config_from_object("django.conf:settings", namespace="CELERY")
# One direct exchange per queue name, so a message reaches exactly the queue it names.
WORK_QUEUES = ("default", "process", "retry", "export", "webhooks")
app.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in WORK_QUEUES]
app.autodiscover_tasks()
