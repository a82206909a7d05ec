from django.apps import AppConfig


class TablesConfig(AppConfig):
    name = "tables"
    verbose_name = "Tables"

    def ready(self) -> None:
        # floor does not import tables (ARCHITECTURE.md): the table's part of closing or
        # resuming a session and of releasing a place is registered into the floor's hook
        # registry (floor/hooks.py).
        from floor.hooks import (
            register_after_seat_release,
            register_after_session_resume,
            register_before_seat_release,
            register_before_session_close,
        )

        from .seat_release import after_seat_release, before_seat_release
        from .session_close import before_table_session_close
        from .session_resume import after_table_session_resume

        register_before_session_close(before_table_session_close)
        register_before_seat_release(before_seat_release)
        register_after_seat_release(after_seat_release)
        register_after_session_resume(after_table_session_resume)
