"""Production: every secret from the environment, HTTPS only. Passes `manage.py check --deploy`."""

from .base import *
from .env import env_bool, env_int, env_list, env_str

DEBUG = False
SECRET_KEY = env_str("DJANGO_SECRET_KEY", required=True)
# The key signs the sessions and seals the audit heads and the recovery codes (audit/seals.py,
# floor/mfa.py): docker/env.example's placeholder, left as it was, is everyone's key. check
# --deploy only warns of such a key (security.W009, the same test) and the containers do not
# run it; the service does not start with one.
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is too weak (fewer than 50 characters or 5 different ones, or Django's "
        "insecure default): generate one, python -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )
# The key that seals the audit heads from now on (AUDIT_HEAD_KEYS' first), held to the same
# rule: a short one can be guessed offline from any head and its seal. The older keys listed
# after it only verify, until audit_reseal_heads has sealed every head again (a rotation away
# from a weak key).
if AUDIT_HEAD_KEYS and (len(AUDIT_HEAD_KEYS[0]) < 50 or len(set(AUDIT_HEAD_KEYS[0])) < 5):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "AUDIT_HEAD_KEYS: its first key, which seals, is too weak (fewer than 50 characters or 5 "
        "different ones): generate one, python -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must name the hosts this service answers for.")

from django.core.exceptions import ImproperlyConfigured  # noqa: E402

# No silent fallback to the demo's SQLite and in-process Celery: the audit trail's triggers
# and the row locks are PostgreSQL's, and the login throttle's counts must be shared by every
# worker (a per-process cache would multiply the attempts allowed).
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must name the PostgreSQL database in production.")
if not REDIS_URL:
    raise ImproperlyConfigured("REDIS_URL must name the Redis of the cache and of Celery in production.")

# A stolen password alone opens no supervising account: the Commissario, the Direzione, the
# auditors and the superusers log in with a one-time code too (floor/mfa.py). MFA_ROLES=
# lists others, e.g. "commissario,direzione,auditor,superuser,capo_partita".
MFA_ROLES = mfa_roles_from_env(["commissario", "direzione", "auditor", "superuser"])

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
# Probes and the Prometheus scrape come over plain HTTP from inside the network (the
# container's health check, the scraper): they answer there instead of redirecting.
# /metrics is access-controlled (config/metrics.py); send METRICS_TOKEN over HTTPS only
# when the scraper is outside the private network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
LANGUAGE_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000, minimum=0)  # 0: no HSTS header
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Logs as JSON lines unless LOG_FORMAT says otherwise (config/observability.py).
LOG_FORMAT = env_str("LOG_FORMAT", "json")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)
