"""The Celery app. Broker and backend come from REDIS_URL; without it tasks run eagerly
(settings.CELERY_TASK_ALWAYS_EAGER) so `make run` needs no Redis."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("chemin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The request id travels with every task and the worker logs as Django's LOGGING says
# (config/observability.py).
from config.observability import connect_celery  # noqa: E402

connect_celery(app)
