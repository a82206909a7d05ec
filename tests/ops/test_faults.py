"""bench/faults.py (issue #8 point 2) and the fixes its scenarios led to.

- The script's verdicts, on made-up figures: a duplicated, lost or mismatched coup, a partial
  coup, a 500 or an unanswered request each make a scenario FAIL; clean figures pass.
- It never touches the machine's shared PostgreSQL and Redis ports.
- One cheap scenario end to end (`postgres`: a private cluster stopped with -m immediate
  under 2 tablets), in a subprocess, when the server binaries are here.
- The fixes: a Redis outage is a clean 503 in the API's error shape (a login needs the
  cache), the Redis result backend gives up in about a second (a day closed with Redis down
  answered after ~19 s), the broker's visibility timeout comes from the environment, and a
  progress update that cannot be stored never fails a report build."""

from __future__ import annotations

import glob
import importlib.util
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

ROOT = Path(__file__).resolve().parents[2]


def _load_faults():
    spec = importlib.util.spec_from_file_location("chemin_bench_faults", ROOT / "bench" / "faults.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


faults = _load_faults()


# --------------------------------------------------------------------------- the verdicts


def test_exactly_once_passes_when_every_key_is_one_coup():
    answered = {"k1": 10, "k2": 11}
    stored = {"k1": 10, "k2": 11, "k3": 12}  # k3 committed, its answer lost: still one coup
    assert (
        faults.check_exactly_once(answered=answered, stored=stored, rows={10, 11, 12}, conflicting=[]) == []
    )


@pytest.mark.parametrize(
    ("answered", "stored", "rows", "conflicting", "expected"),
    [
        # A retry that recorded the coup again: a row no key accounts for.
        ({"k1": 10}, {"k1": 10}, {10, 11}, [], "without the key"),
        # A 201 whose coup is not in the database.
        ({"k1": 10, "k2": 11}, {"k1": 10, "k2": 11}, {10}, [], "not in the database"),
        # The replay answered another coup than the first answer.
        ({"k1": 10}, {"k1": 12}, {10, 12}, [], "stored answer is not the coup"),
        # Two keys answered with one coup.
        ({"k1": 10, "k2": 10}, {"k1": 10, "k2": 10}, {10}, [], "answered to two keys"),
        # The tablet saw two different coups for one key.
        ({"k1": 10}, {"k1": 10}, {10}, ["k1"], "two different coups"),
    ],
)
def test_exactly_once_names_each_way_of_failing(answered, stored, rows, conflicting, expected):
    problems = faults.check_exactly_once(answered=answered, stored=stored, rows=rows, conflicting=conflicting)
    assert any(expected in p for p in problems), problems


def _coup(**kw):
    return {"id": 1, "state": "settled", "postings": 3, "postings_sum": 0, "bets": 1, **kw}


@pytest.mark.parametrize(
    ("coup", "expected"),
    [
        (_coup(state="dealing"), "not settled"),
        (_coup(postings_sum=100), "do not sum to zero"),
        (_coup(postings=0), "without their postings"),
        (_coup(bets=0), "without bets"),
    ],
)
def test_a_partial_coup_is_named(coup, expected):
    assert faults.check_complete([_coup(id=2), coup]) and expected in " ".join(faults.check_complete([coup]))
    assert faults.check_complete([_coup(id=2)]) == []


def _totals(**kw):
    return {"bad_5xx": [], "gave_up": [], "errors": Counter(), **kw}


def test_http_verdict():
    assert faults.check_http(_totals()) == []
    assert "5xx" in faults.check_http(_totals(bad_5xx=["POST /x: 500 {}"]))[0]
    assert "never got a final answer" in faults.check_http(_totals(gave_up=["k9"]))[0]
    assert "tablet errors" in faults.check_http(_totals(errors=Counter({"409:coup_in_play": 1})))[0]


def test_a_clean_503_is_the_error_shape_with_retry_after():
    body = {"error": {"code": "service_unavailable", "message": "retry", "details": {}}}
    assert faults.clean_503(503, body, "2")
    assert not faults.clean_503(503, body, None)
    assert not faults.clean_503(500, body, "2")
    assert not faults.clean_503(503, {"detail": "Service Unavailable"}, "2")


@pytest.mark.parametrize("port", [5432, 6379])
def test_the_shared_services_ports_are_refused(port):
    with pytest.raises(SystemExit, match="shared services"):
        faults.private_port(port)


def test_port_zero_picks_a_free_private_port():
    port = faults.private_port(0)
    assert port > 0 and port not in faults.SHARED_PORTS


# --------------------------------------------------------------------------- the fixes


def test_redis_down_is_a_clean_503():
    class NeedsRedis(APIView):
        def post(self, request):
            raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    class _User:
        is_authenticated = True
        is_active = True
        pk = 1

    request = APIRequestFactory().post("/needs-redis", {}, format="json")
    force_authenticate(request, user=_User())
    response = NeedsRedis.as_view()(request)
    assert response.status_code == 503
    assert response.data["error"]["code"] == "service_unavailable"
    assert set(response.data["error"]) == {"code", "message", "details"}
    assert response["Retry-After"] == "2"


def test_celery_gives_up_on_a_dead_redis_quickly_and_redelivers_after_the_visibility_timeout(settings):
    policy = settings.CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS["retry_policy"]
    worst = sum(min(policy["interval_start"] + i * policy["interval_step"], policy["interval_max"])
                for i in range(policy["max_retries"]))  # fmt: skip
    assert worst <= 2
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] >= 1
    assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1


def test_the_visibility_timeout_comes_from_the_environment():
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'])"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "CELERY_VISIBILITY_TIMEOUT": "42",
        "PATH": "/usr/bin",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "42", out.stderr
    env["CELERY_VISIBILITY_TIMEOUT"] = "0"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0 and "CELERY_VISIBILITY_TIMEOUT" in out.stderr


def test_a_progress_update_that_cannot_be_stored_does_not_fail_the_report(
    db, commissario, casino, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    from audit.models import DayReport
    from audit.tasks import report_build
    from floor import services as floor_services

    settings.MEDIA_ROOT = tmp_path
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    with django_capture_on_commit_callbacks(execute=False):  # no report enqueued by the close
        floor_services.gaming_day_close(gaming_day=day, by=commissario)

    def redis_down(*args, **kwargs):
        raise RuntimeError(
            "Retry limit exceeded while trying to reconnect to the Celery result store backend."
        )

    monkeypatch.setattr(report_build, "update_state", redis_down)
    result = report_build.apply(args=[day.pk], task_id="faults-progress").get()
    assert result["status"] == "done"
    report = DayReport.objects.get(gaming_day=day)
    assert report.status == DayReport.Status.DONE and report.files.count() == 3


# --------------------------------------------------------------------------- one scenario, end to end


@pytest.mark.skipif(
    not (glob.glob("/usr/lib/postgresql/*/bin/initdb") and shutil.which("redis-server")),
    reason="needs the PostgreSQL server binaries and redis-server",
)
def test_the_postgres_scenario_passes_end_to_end():
    """About 30-40 s: initdb, migrate, 2 tablets for 8 s, PostgreSQL down 2 s (-m immediate)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "faults.py"), "--scenario", "postgres", "--tablets", "2",
         "--seconds", "8", "--pg-down", "2", "--scenario-timeout", "120"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "PASS postgres" in out.stdout
    assert "clean 503s" in out.stdout and " 0 other 5xx" in out.stdout
