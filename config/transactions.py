"""One savepoint per API write instead of two.

An idempotent API write runs its handler in a savepoint (floor/idempotency.py: a refusal
undoes the handler's writes but keeps the key row that stores the answer), and the service
the handler calls is itself atomic: nested, that is a second savepoint, two more round trips
to the database for nothing, since a refusal already rolls back to the first.

`shared_savepoint()` marks the handler's savepoint as one the next service may share;
`service_atomic` is `transaction.atomic` for services: the first service called directly
inside a shared savepoint runs in it (atomic(savepoint=False)); every other call, nested
services, and every call outside the API (tests, commands, tasks) gets its own savepoint as
before. When a service that shared the savepoint raises, Django marks the block for
rollback and the exception leaves the handler's savepoint, which rolls back: nothing of the
service remains, as with its own savepoint. Views must therefore not catch a service's
exception and go on querying (none does: the API layer turns exceptions into answers
outside the savepoint)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import transaction

F = TypeVar("F", bound=Callable[..., Any])

_ATTR = "_chemin_shared_savepoint"


@contextmanager
def shared_savepoint() -> Iterator[None]:
    """A savepoint (transaction.atomic) whose first directly called service may share it."""
    with transaction.atomic():
        connection = transaction.get_connection()
        previous = getattr(connection, _ATTR, None)
        setattr(connection, _ATTR, connection.savepoint_ids[-1] if connection.savepoint_ids else None)
        try:
            yield
        finally:
            setattr(connection, _ATTR, previous)


def _take_shared(connection) -> bool:
    sid = getattr(connection, _ATTR, None)
    if sid is None or not connection.in_atomic_block or connection.savepoint_ids[-1:] != [sid]:
        return False
    setattr(connection, _ATTR, None)  # one service shares it; the rest nest as usual
    return True


def service_atomic(func: F) -> F:
    """transaction.atomic for a service, sharing the API write's savepoint when it may."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        connection = transaction.get_connection()
        with transaction.atomic(savepoint=not _take_shared(connection)):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
