"""Settings shared by every environment. Zero configuration gives a working demo:
SQLite and eager Celery unless DATABASE_URL / REDIS_URL are set."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_int, env_list, env_rate, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent

# A development key: production settings refuse to start without DJANGO_SECRET_KEY.
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "dev-only-insecure-key-do-not-use-in-production")
SECRET_KEY_FALLBACKS = env_list("DJANGO_SECRET_KEY_FALLBACKS", [])  # a rotation's earlier keys
# The keys that seal the audit streams' heads (audit/seals.py): the first seals, every one
# verifies (a rotation). Empty: SECRET_KEY, then SECRET_KEY_FALLBACKS.
AUDIT_HEAD_KEYS = env_list("AUDIT_HEAD_KEYS", [])
# The heads published outside the database (audit/anchors.py): every AUDIT_ANCHOR_SECONDS
# Celery beat logs the heads that moved (logger chemin.audit.anchor) and appends them to
# AUDIT_ANCHOR_FILE if set (a mount the database's owner cannot rewrite).
AUDIT_ANCHOR_FILE = env_str("AUDIT_ANCHOR_FILE") or None
AUDIT_ANCHOR_SECONDS = env_int("AUDIT_ANCHOR_SECONDS", 300, minimum=10)
# Off unless asked for: a deployment that forgets the production settings module shows no
# debug pages (settings, tracebacks) and seed_demo refuses to write its public passwords.
# `make run` asks for it (DJANGO_DEBUG=1): runserver then serves the static files from the
# apps with no collectstatic, and seed_demo loads the demo floor.
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_otp",
    "floor.apps.AuthenticatorsConfig",  # django_otp.plugins.otp_totp, named for the admin
    "floor.apps.RecoveryCodesConfig",  # django_otp.plugins.otp_static: recovery codes (floor/mfa.py)
    "django_filters",
    "drf_spectacular",
    "audit",
    "floor",
    "tables",
]

MIDDLEWARE = [
    # First: the request id is set before anything logs; the access line and the request
    # metrics see every final response, redirects and errors included.
    "config.observability.RequestObservabilityMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Security events caused by a request's changes name its user (floor/security.py).
    "floor.security.RequestActorMiddleware",
    # A session opened without the second factor its user now needs ends (floor/mfa.py).
    "floor.mfa.SecondFactorSessionMiddleware",
    # An htmx post whose session expired: a full-page login, not one inside the panel.
    "config.htmx.HtmxLoginRedirectMiddleware",
]
# A stale form (its CSRF token rotated by a new login): said in the page's language, with a
# reload button, and inside an htmx panel's page rather than Django's bare 403.
CSRF_FAILURE_VIEW = "config.htmx.csrf_failure"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "config.context_processors.offline_queue",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "DATABASE_SERVER_SIDE_BINDING", False
):
    # psycopg 3 server-side parameters, and prepared statements for queries run at least
    # DATABASE_PREPARE_THRESHOLD times on a connection (PostgreSQL then skips parsing and
    # planning them). Not behind a transaction-pooling PgBouncer older than 1.21.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=env_int("DATABASE_PREPARE_THRESHOLD", 5)
    )
# The hot reads compiled once per connection and the inserts and updates built for the hot
# paths (config/prepared.py) run as PostgreSQL prepared statements, parsed and planned once
# per database session. Set DATABASE_PREPARED_STATEMENTS=0 behind a pooler that hands one
# database session to several clients (PgBouncer in transaction mode): their PREPAREs would
# land on other sessions.
DATABASE_PREPARED_STATEMENTS = env_bool("DATABASE_PREPARED_STATEMENTS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: Redis when REDIS_URL is set; otherwise tasks run in-process (demo only).
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"  # a hostname, or kombu warns at every eager task
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TRACK_STARTED = True
CELERY_TIMEZONE = "Europe/Rome"
# Redis broker: a task taken by a worker that died whole (kill -9, OOM, power) before
# acknowledging it (acks_late: at its end) goes back to the queue CELERY_VISIBILITY_TIMEOUT
# seconds after its delivery, when a worker starts or at a worker's periodic sweep (~100 s).
# A pool child dying alone is requeued at once (TASK_REJECT_ON_WORKER_LOST). Keep it above
# the longest task: one still running past it is delivered again (harmless, tasks are
# idempotent, but done twice). bench/faults.py sets 10 s to see the redelivery in seconds.
# A Redis outage of any length: the worker keeps reconnecting (2, 4, 6... then every 30 s)
# and takes up its queue when Redis answers. Celery's default, 100 attempts (~46 minutes),
# ends the worker process ("Unrecoverable error") and no report is built until a restart.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
_visibility_timeout = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": _visibility_timeout}
# The Redis result backend retries a lost connection 20 times, 1 s apart, by default: with
# Redis down, enqueuing a task from a request (the day's close subscribes to the report's
# result) held that request ~19 s before failing. Give up after ~1 s instead: the close
# still commits and logs the failed enqueue, reports_sweep enqueues the report later, and a
# worker that cannot store a progress update keeps building (audit/tasks.py).
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
}

# End of day (RULES.md §8). At GAMING_DAY_CLOSE_HOUR (local time, 0-23) Celery beat closes
# every open day whose date is past; sessions still in play are refused (the day stays open
# for the Commissario) or closed first, per GAMING_DAY_CLOSE_OPEN_SESSIONS.
GAMING_DAY_CLOSE_HOUR = env_int("GAMING_DAY_CLOSE_HOUR", 6)
if not 0 <= GAMING_DAY_CLOSE_HOUR <= 23:
    raise ImproperlyConfigured(f"GAMING_DAY_CLOSE_HOUR={GAMING_DAY_CLOSE_HOUR} is not an hour (0-23).")
GAMING_DAY_CLOSE_OPEN_SESSIONS = env_str("GAMING_DAY_CLOSE_OPEN_SESSIONS", "refuse")
if GAMING_DAY_CLOSE_OPEN_SESSIONS not in ("refuse", "close"):
    raise ImproperlyConfigured(
        f"GAMING_DAY_CLOSE_OPEN_SESSIONS={GAMING_DAY_CLOSE_OPEN_SESSIONS!r}: use refuse or close."
    )
# RULES.md §8 (art. 72): the control register of a day is entered before the next day
# starts. refuse: a gaming day does not open while the previous one's register lacks its two
# signatures; record: it opens, and the opening event says which register was unsigned.
GAMING_DAY_OPEN_UNSIGNED_REGISTER = env_str("GAMING_DAY_OPEN_UNSIGNED_REGISTER", "refuse")
if GAMING_DAY_OPEN_UNSIGNED_REGISTER not in ("refuse", "record"):
    raise ImproperlyConfigured(
        f"GAMING_DAY_OPEN_UNSIGNED_REGISTER={GAMING_DAY_OPEN_UNSIGNED_REGISTER!r}: use refuse or record."
    )
# Anti-money laundering (EU AMLD, Directive (EU) 2015/849 art. 11(d)): a casino identifies
# the customer of a transaction of EUR 2,000 or more, single or in operations that appear to
# be linked. The changeur's register of cash exchanged at a table (tables.services.cash)
# refuses an exchange of this many cents or more without the patron, and sums the linked
# ones (a patron's exchanges in the session; the anonymous ones of the session together).
AML_IDENTIFY_CENTS = env_int("AML_IDENTIFY_CENTS", 2_000_00, minimum=1)
CELERY_BEAT_SCHEDULE = {
    # Every 10 minutes: a day due at 06:00 closes by 06:10, and a missed run costs nothing.
    "gaming-days-close-due": {"task": "floor.tasks.gaming_days_close_due", "schedule": 600.0},
    # Reports of closed days that were never enqueued (the broker was down at the close).
    "reports-sweep": {"task": "audit.tasks.reports_sweep", "schedule": 900.0},
    # Daily: the idempotency keys older than IDEMPOTENCY_KEY_DAYS (floor/management/commands/
    # idempotency_purge.py does the same by hand).
    "idempotency-keys-purge": {"task": "floor.tasks.idempotency_keys_purge", "schedule": 86400.0},
    # The heads that moved, published outside the database (audit/anchors.py).
    "audit-heads-anchor": {"task": "audit.tasks.heads_anchor", "schedule": float(AUDIT_ANCHOR_SECONDS)},
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Failed logins: after LOGIN_MAX_FAILURES within LOGIN_FAILURE_WINDOW seconds for one
# username, or LOGIN_MAX_FAILURES_PER_ADDRESS for one client address (higher: a floor's
# tablets may share one), further attempts are refused (429) until the window passes.
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 5, minimum=1)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 20, minimum=1)
LOGIN_FAILURE_WINDOW = env_int("LOGIN_FAILURE_WINDOW", 900, minimum=1)
# The client's address is REMOTE_ADDR, unless this many trusted proxies (a TLS terminator)
# stand in front: then it is the one they appended to X-Forwarded-For, that many from the right.
TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 0, minimum=0)
# A browser session lasts one shift (shared terminals on the floor), not Django's two weeks;
# so does an API token (floor/authentication.py).
SESSION_COOKIE_AGE = env_int("SESSION_HOURS", 12, minimum=1) * 3600
# How many days the idempotency keys are kept (`idempotency_purge` deletes the older ones). A
# tablet's queue holds back an entry older than that for the croupier rather than send it:
# its key may be gone, and it would be entered again.
IDEMPOTENCY_KEY_DAYS = env_int("IDEMPOTENCY_KEY_DAYS", 7, minimum=1)
API_TOKEN_HOURS = env_int("API_TOKEN_HOURS", 12, minimum=1)
# Logins, role and password changes as audit events (floor/security.py). Always on but in
# the test settings, whose fixtures log in and grant roles in nearly every test.
SECURITY_EVENTS = True
# The roles that log in with a one-time code besides the password (floor/mfa.py; TOTP),
# "superuser" for the superusers. None in the demo, which must run with no setup; the
# production settings ask it of the supervising roles.
def mfa_roles_from_env(default: list[str]) -> list[str]:
    """MFA_ROLES: role names, comma-separated, or `none`. Unset: the default. A blank value
    (an empty line in an .env file) fails loudly rather than turning the second factor off."""
    raw = os.environ.get("MFA_ROLES")
    if raw is None:
        return default
    if raw.strip().lower() == "none":
        return []
    roles = [role.strip() for role in raw.split(",") if role.strip()]
    if not roles:
        raise ImproperlyConfigured("MFA_ROLES is blank: name the roles that log in with a one-time code, or none.")
    from floor.roles import ALL_ROLES, SUPERUSER  # (plain Python: no model, safe in settings)

    unknown = set(roles) - {*ALL_ROLES, SUPERUSER}
    if unknown:
        raise ImproperlyConfigured(f"MFA_ROLES names no such role: {', '.join(sorted(unknown))}.")
    return roles


MFA_ROLES = mfa_roles_from_env([])
OTP_TOTP_ISSUER = "Chemin"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("it", "Italiano")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "Europe/Rome"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
MEDIA_ROOT = Path(env_str("CHEMIN_MEDIA_ROOT", str(BASE_DIR / "var" / "media")))
# End-of-day report files go under MEDIA_ROOT / REPORTS_DIR (never served as media: the
# API streams them to auditors after a permission check).
REPORTS_DIR = env_str("CHEMIN_REPORTS_DIR", "reports")
# A report build whose process dies every time (the OOM killer on a huge day, a crash in a
# PDF library) would be redelivered at once, forever (acks_late, reject on worker lost): the
# attempt after this many interrupted ones marks the report FAILED instead, and reports_sweep
# leaves it; `manage.py report_build DAY [VERSION]` builds it again (audit/reports/services.py).
REPORT_BUILD_MAX_ATTEMPTS = env_int("REPORT_BUILD_MAX_ATTEMPTS", 3, minimum=1)
# The language the end-of-day report is written in (its titles, column titles, notes, facts,
# the words of its non-conforming coups; in the PDF its figures too: "1.234,50" in Italian;
# the XLSX keeps numbers with number formats, shown in the reader's own locale): one of LANGUAGES. Each report keeps the language it was requested in
# (DayReport.language), so a rebuild gives the same bytes and a later change of this
# setting changes only the reports requested after it. The CSV's keys and codes, and the
# summary's, are the same in every language: machines read them.
REPORT_LANGUAGE = env_str("REPORT_LANGUAGE", "en")
if REPORT_LANGUAGE not in dict(LANGUAGES):
    raise ImproperlyConfigured(
        f"REPORT_LANGUAGE={REPORT_LANGUAGE!r} is not one of the languages: {', '.join(dict(LANGUAGES))}."
    )

REST_FRAMEWORK = {
    # Token first: an anonymous API call then gets 401 with `WWW-Authenticate: Token`.
    # DRF's parsers, the JSON one refusing numbers beyond a float (config/api.py).
    "DEFAULT_PARSER_CLASSES": [
        "config.api.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "floor.authentication.TokenAuthentication",  # with the roles: one query
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "config.api.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # Scoped throttles for the expensive endpoints (views name their scope).
    "DEFAULT_THROTTLE_RATES": {"audit_verify": env_rate("THROTTLE_AUDIT_VERIFY", "30/hour")},
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Chemin API",
    "DESCRIPTION": (
        "Chemin de Fer floor and books. Every error has the shape "
        '`{"error": {"code": "...", "message": "...", "details": {...}}}` with a stable code.\n\n'
        "Logged in at `/accounts/login/`, this page's requests carry the browser's session: nothing "
        "to enter under Authorize (a token goes there as `Token <token>`, from `POST /api/auth/token/`). "
        "A write that lists an `Idempotency-Key` header (its field under Try it out; every write at a "
        "table requires one) takes a new value for each request, e.g. a UUID: the same key again answers "
        "the first answer (the same request) or 422 `idempotency_key_reused` (another one). Amounts are integer cents. Each step of a coup "
        "answers the coup with what it needs next (`coup.next`) and the whole game state (`game`)."
    ),
    "VERSION": "0.1.0",
    "SERVE_PERMISSIONS": ["floor.permissions.CanReadFloor"],  # staff roles only, as every read
    "COMPONENT_SPLIT_REQUEST": True,
    # Two fields named "kind": a bet's (KindEnum, as it was named before the second came) and an
    # unclaimed deposit's (stake, winnings).
    "ENUM_NAME_OVERRIDES": {
        "KindEnum": "tables.api.coups_serializers.BET_KINDS",
        "UnclaimedDepositKindEnum": "audit.models.UnclaimedDeposit.Kind",
    },
    # The project's plumbing (mixins, base views) never describes an operation (config/schema.py).
    "GET_LIB_DOC_EXCLUDES": "config.schema.doc_excludes",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.document_transport_answers",
    ],
}

# Logs: every record carries the request id (config/observability.py). LOG_FORMAT=plain
# (default here) for a terminal, json for a log pipeline (production's default).
from config.observability import logging_config  # noqa: E402

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)

# Probes (config/health.py): how long /readyz waits for Redis and for a Celery worker.
READYZ_TIMEOUT = float(env_int("READYZ_TIMEOUT_MS", 1000, minimum=1)) / 1000
READYZ_CELERY_TIMEOUT = float(env_int("READYZ_CELERY_TIMEOUT_MS", 1000, minimum=1)) / 1000

# /metrics (config/metrics.py): allowed from loopback and private addresses that reach us
# directly (not through the proxy), or with "Authorization: Bearer $METRICS_TOKEN".
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_ALLOW_PRIVATE = env_bool("METRICS_ALLOW_PRIVATE", True)
METRICS_CELERY_QUEUES = env_list("METRICS_CELERY_QUEUES", ["celery"])

# --------------------------------------------------------------------------- browser pages
# Content-Security-Policy (django-csp): nothing inline, nothing from another origin. The
# pages load htmx and their own script as static files; Swagger UI comes from the sidecar.
from csp.constants import NONE, SELF  # noqa: E402

INSTALLED_APPS += ["drf_spectacular_sidecar"]
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1, "csp.middleware.CSPMiddleware")
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        # Swagger UI's stylesheet draws its icons as data: SVGs.
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}
SPECTACULAR_SETTINGS.update(
    {
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
    }
)
# The language is the user's choice (the switch in the page header posts to set_language).
LANGUAGE_COOKIE_NAME = "chemin_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
