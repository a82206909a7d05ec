"""Test settings: the real PostgreSQL and Redis (make test sets DATABASE_URL and REDIS_URL)."""

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
