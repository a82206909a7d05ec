from django.apps import AppConfig


class FloorConfig(AppConfig):
    name = "floor"
    verbose_name = "Floor"

    def ready(self) -> None:
        # The beat task that closes due gaming days, registered in every process (see audit.apps).
        from . import tasks  # noqa: F401
        from .security import connect

        connect()  # security events on record; the admin's login throttled (floor/security.py)
