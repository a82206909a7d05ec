from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        # Register the report tasks in every process, not only in the worker: the floor
        # enqueues them by name, and a name Celery does not know in this process is sent
        # to the broker even when tasks run eagerly (`make run` without Redis).
        # The control register of a day comes before the next day (floor/hooks.py).
        from floor.hooks import register_before_gaming_day_open

        from . import tasks  # noqa: F401
        from .reports.registers import before_gaming_day_open

        register_before_gaming_day_open(before_gaming_day_open)
