"""Settings: production passes `check --deploy`; bad environment values fail loudly."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import env_bool, env_int, env_list, env_rate, env_str

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=120
    )


def test_production_settings_pass_check_deploy():
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_debug_is_off_unless_asked_for_and_make_run_asks_for_it():
    """A deployment that forgets the production settings module shows no debug pages: the
    base settings leave DEBUG off without DJANGO_DEBUG. The demo (`make run`) turns it on for
    each of its commands (seed_demo refuses without it; runserver serves the static files)."""
    show = "from django.conf import settings; print('DEBUG', settings.DEBUG)"
    unset = _manage("shell", "-c", show, DJANGO_SETTINGS_MODULE="config.settings.base")
    assert unset.returncode == 0, unset.stderr[-500:]
    assert "DEBUG False" in unset.stdout
    asked = _manage("shell", "-c", show, DJANGO_SETTINGS_MODULE="config.settings.base", DJANGO_DEBUG="1")
    assert "DEBUG True" in asked.stdout, asked.stderr[-500:]

    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_DEBUG", "MAKEFLAGS", "MAKELEVEL")}
    dry = subprocess.run(["make", "-n", "-o", ".venv/.installed", "run"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert dry.returncode == 0, dry.stderr[-500:]
    commands = [line for line in dry.stdout.splitlines() if "manage.py" in line]
    assert [c.split("manage.py ")[1].split()[0] for c in commands] == ["migrate", "seed_demo", "runserver"]
    assert all(c.startswith("DJANGO_DEBUG=1 ") for c in commands), commands


def test_production_refuses_to_start_without_a_secret_key():
    result = _manage(
        "check",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


@pytest.mark.parametrize(
    "key",
    [
        "change-me-to-a-long-random-string",  # docker/env.example's, left as it was
        "django-insecure-" + "k7Qz-9xVm2" * 5,  # startproject's
        "ab" * 40,  # long, and guessable
    ],
)
def test_production_refuses_a_secret_key_check_deploy_calls_weak(key):
    """The key signs the sessions and seals the audit heads and the recovery codes: a
    placeholder copied from docker/env.example is everyone's. check --deploy only warns about
    it (security.W009), and nothing runs check --deploy when the containers start."""
    result = _manage(
        "check",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=key,
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is too weak" in result.stderr, result.stderr[-500:]
    assert key not in result.stderr  # the message does not repeat the key


@pytest.mark.parametrize(
    ("keys", "starts"),
    [
        ("hunter2x", False),  # accepted before: guessable offline from any head and its seal
        ("ab" * 40, False),
        ("{strong},hunter2x", True),  # an old key listed to verify, during a rotation
        ("{strong}", True),
    ],
)
def test_production_refuses_a_weak_key_to_seal_the_audit_heads(keys, starts):
    keys = keys.format(strong=secrets.token_urlsafe(50))  # made here: xdist's workers collect the same ids
    result = _manage(
        "check",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
        AUDIT_HEAD_KEYS=keys,
    )
    if starts:
        assert result.returncode == 0, result.stderr[-500:]
    else:
        assert result.returncode != 0
        assert "AUDIT_HEAD_KEYS: its first key, which seals, is too weak" in result.stderr, result.stderr[-500:]
        assert keys not in result.stderr


def test_production_refuses_to_start_without_allowed_hosts():
    result = _manage(
        "check",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
    )
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS" in result.stderr


@pytest.mark.parametrize(
    ("missing", "overrides"),
    [("DATABASE_URL", {"DATABASE_URL": "sqlite:///demo.sqlite3"}), ("REDIS_URL", {"REDIS_URL": ""})],
)
def test_production_refuses_the_demo_s_database_or_no_redis(missing, overrides):
    env = {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/chemin", "REDIS_URL": "redis://127.0.0.1:6379/0"}
    result = _manage(
        "check",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
        **{**env, **overrides},
    )
    assert result.returncode != 0
    assert missing in result.stderr


def test_env_readers_fail_loudly_on_bad_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ImproperlyConfigured):
        env_bool("X_BOOL", False)
    monkeypatch.setenv("X_INT", "ten")
    with pytest.raises(ImproperlyConfigured):
        env_int("X_INT", 1)
    monkeypatch.delenv("X_REQ", raising=False)
    with pytest.raises(ImproperlyConfigured):
        env_str("X_REQ", required=True)


def test_numbers_below_their_minimum_and_bad_rates_fail_at_startup(monkeypatch):
    monkeypatch.setenv("X_INT", "-3")
    with pytest.raises(ImproperlyConfigured, match="below its minimum"):
        env_int("X_INT", 1, minimum=0)
    assert env_int("X_INT", 1) == -3  # no minimum: any integer
    for bad in ("bogus", "30", "0/hour", "30/fortnight", "-1/day"):
        monkeypatch.setenv("X_RATE", bad)
        with pytest.raises(ImproperlyConfigured):
            env_rate("X_RATE", "30/hour")
    monkeypatch.setenv("X_RATE", "100/day")
    assert env_rate("X_RATE", "30/hour") == "100/day"
    # ... and the settings use them: the process refuses to start, no 500 at the first request.
    for name, value in (("THROTTLE_AUDIT_VERIFY", "bogus"), ("TRUSTED_PROXY_HOPS", "-3"), ("SESSION_HOURS", "0"),
                        ("LOGIN_MAX_FAILURES", "0")):  # fmt: skip
        result = _manage("check", **{name: value})
        assert result.returncode != 0 and name in result.stderr, (name, result.stderr[-300:])


def test_a_negative_hsts_age_stops_production_rather_than_sending_max_age_minus_five():
    """`Strict-Transport-Security: max-age=-5` is no policy a browser keeps, and check --deploy
    took the value for one (it only asks for a non-zero one)."""
    result = _manage(
        "check",
        "--deploy",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
        DJANGO_HSTS_SECONDS="-5",
    )
    assert result.returncode != 0
    assert "DJANGO_HSTS_SECONDS=-5 is below its minimum" in result.stderr


def test_the_docker_image_collects_its_static_files_under_the_production_settings():
    """docker/Dockerfile runs collectstatic at build time, with no database nor Redis: the
    production settings must load with the values that RUN line gives them."""
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    line = re.search(r"&& ((?:\w+=\S+ )+)python manage\.py collectstatic", dockerfile)
    assert line, "the Dockerfile no longer runs collectstatic"
    env = dict(pair.split("=", 1) for pair in line.group(1).split())
    build = {"DATABASE_URL": "", "REDIS_URL": "", **env}  # nothing from this machine's environment
    result = _manage("collectstatic", "--noinput", "--dry-run", DJANGO_SETTINGS_MODULE="config.settings.production",
                     **build)  # fmt: skip
    assert result.returncode == 0, result.stderr[-500:]


def test_env_readers_parse_good_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a.example, b.example,")
    assert env_bool("X_BOOL", False) is True
    assert env_int("X_INT", 1) == 42
    assert env_list("X_LIST", []) == ["a.example", "b.example"]
    assert env_bool("X_UNSET_BOOL", True) is True


def test_production_asks_the_supervisors_for_a_second_factor_and_names_must_be_roles():
    env = {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/chemin", "REDIS_URL": "redis://127.0.0.1:6379/0",
           "DJANGO_SETTINGS_MODULE": "config.settings.production", "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
           "DJANGO_ALLOWED_HOSTS": "chemin.example.org"}  # fmt: skip
    shown = _manage("shell", "-c", "from django.conf import settings; print(settings.MFA_ROLES)", **env)
    assert shown.returncode == 0, shown.stderr[-500:]
    assert "['commissario', 'direzione', 'auditor', 'superuser']" in shown.stdout
    bad = _manage("check", MFA_ROLES="commissario,croupier")
    assert bad.returncode != 0 and "MFA_ROLES names no such role: croupier" in bad.stderr


@pytest.mark.parametrize(("value", "ok"), [("none", True), ("", False), (" , ", False), ("auditor", True)])
def test_a_blank_mfa_roles_fails_rather_than_turning_the_second_factor_off(value, ok):
    result = _manage("check", MFA_ROLES=value)
    assert (result.returncode == 0) is ok, result.stderr[-300:]
    if not ok:
        assert "MFA_ROLES is blank" in result.stderr


@pytest.mark.parametrize(
    ("redis_db", "worker", "cache_db"),
    [("5", "gw0", "6"), ("5", "gw1", "7"), ("13", "gw1", "15"), ("14", "gw1", None), ("15", "gw0", None)],
)
def test_each_pytest_worker_keeps_its_cache_in_its_own_redis_database(redis_db, worker, cache_db):
    """Under pytest -n each worker empties its cache at every test: its own Redis database,
    the next ones after REDIS_URL's; one past 15 is refused, never wrapped round onto the
    broker's or another run's."""
    script = "from django.conf import settings; print(settings.CACHES['default']['LOCATION'])"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        REDIS_URL=f"redis://127.0.0.1:6379/{redis_db}",
        PYTEST_XDIST_WORKER=worker,
    )
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if cache_db is None:
        assert result.returncode != 0 and "Redis has 0-15" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"redis://127.0.0.1:6379/{cache_db}"


@pytest.mark.parametrize(("value", "ok"), [("it", True), ("en", True), ("fr", False), ("IT", False), ("italian", False)])
def test_the_report_language_must_be_one_of_the_languages(value, ok):
    """REPORT_LANGUAGE (the end-of-day report's words) is refused at start-up unless it names
    one of LANGUAGES: a typo would otherwise write every report in English, silently."""
    result = _manage("shell", "-c", "from django.conf import settings; print(settings.REPORT_LANGUAGE)",
                     REPORT_LANGUAGE=value)  # fmt: skip
    assert (result.returncode == 0) is ok, result.stderr[-300:]
    if ok:
        assert result.stdout.splitlines()[-1] == value
    else:
        assert f"REPORT_LANGUAGE={value!r} is not one of the languages: en, it." in result.stderr


def test_the_report_language_is_english_unless_set():
    result = _manage("shell", "-c", "from django.conf import settings; print(settings.REPORT_LANGUAGE)",
                     REPORT_LANGUAGE="")  # fmt: skip
    assert result.returncode == 0 and result.stdout.splitlines()[-1] == "en", result.stderr[-300:]
