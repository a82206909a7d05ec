"""Test settings: the real PostgreSQL and Redis (make test sets DATABASE_URL and REDIS_URL)."""

import os
from urllib.parse import urlsplit

from .base import *

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Unit tests run tasks in-process; tests that need a real worker start one on Redis.
CELERY_TASK_ALWAYS_EAGER = True
MEDIA_ROOT = BASE_DIR / "var" / "test-media"
# On in the tests of the security events themselves (tests/floor/test_auth.py, the fuzz run).
SECURITY_EVENTS = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # pytest-django's transactional tests empty the tables with TRUNCATE, which the audit
    # trail refuses unless the session allows it (audit/migrations/0007).
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c chemin.audit_truncate=allow"

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"... under pytest -n
if REDIS_URL and _WORKER.startswith("gw"):
    # Each test empties the cache (the login throttle lives there: tests/conftest.py), which
    # empties its whole Redis database: under -n, each worker has its own, the next ones
    # after REDIS_URL's (the broker stays on REDIS_URL's, for the tests with a real worker).
    _url = urlsplit(REDIS_URL)
    _db = int(_url.path.strip("/") or 0) + 1 + int(_WORKER[2:])
    if _db > 15:
        # Never wrapped round onto a database below (the broker's, another run's): a
        # worker's cache emptied there would empty theirs.
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"pytest worker {_WORKER} would keep its cache in Redis database {_db}; Redis has 0-15. "
            "Give REDIS_URL a lower database or run fewer workers."
        )
    CACHES["default"]["LOCATION"] = _url._replace(path=f"/{_db}").geturl()
