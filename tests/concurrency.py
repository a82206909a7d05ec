"""Real concurrent requests for the PostgreSQL tests of locks and idempotency."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from rest_framework.test import APIClient


def race(calls: Sequence[Callable[[APIClient], Any]], users: Any) -> list:
    """Each call in its own thread, API client and database connection, all released at the
    same instant; as `users[i]` (or one user for all). An exception is returned in the call's
    place, for the test's assertions to surface."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(i: int) -> None:
        client = APIClient()
        client.force_authenticate(users[i] if isinstance(users, (list, tuple)) else users)
        try:
            barrier.wait(timeout=10)
            results[i] = calls[i](client)
        except Exception as exc:
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
