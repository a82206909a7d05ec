"""Test settings: the real PostgreSQL and Redis (make test sets DATABASE_URL and REDIS_URL)."""

from .base import *

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Unit tests run tasks in-process; tests that need a real worker start one on Redis.
CELERY_TASK_ALWAYS_EAGER = True
MEDIA_ROOT = BASE_DIR / "var" / "test-media"
