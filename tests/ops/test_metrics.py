"""/metrics: Prometheus text, request counts and latencies by route name (never the raw
path), the open day's coups and reconstructions read from the database, the Celery queue
length read from Redis; open to loopback / private addresses reached directly, or to the
METRICS_TOKEN bearer."""

from __future__ import annotations

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

CLOSED_PORT_REDIS = "redis://127.0.0.1:1/0"


def scrape(client, **extra) -> dict[str, list]:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    families = text_string_to_metric_families(response.content.decode())
    return {family.name: family.samples for family in families}


def value(samples, name: str, **labels) -> float | None:
    for sample in samples:
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    return None


@pytest.mark.django_db
def test_requests_are_counted_by_route_name_not_by_path(client, commissario):
    client.force_login(commissario)
    before = value(scrape(client)["chemin_http_requests"], "chemin_http_requests_total",
                   method="GET", route="healthz", status="200") or 0  # fmt: skip
    client.get("/healthz")
    client.get("/healthz")
    client.get("/api/tables/987654321/")
    client.get("/nowhere/123456789/")
    metrics = scrape(client)
    requests = metrics["chemin_http_requests"]
    assert (
        value(requests, "chemin_http_requests_total", method="GET", route="healthz", status="200")
        == before + 2
    )
    assert value(requests, "chemin_http_requests_total", route="<unmatched>", status="404") >= 1
    labels = {v for s in requests for v in s.labels.values()}
    assert not any("987654321" in v or "123456789" in v for v in labels), labels
    table_404 = [s for s in requests if s.labels["status"] == "404" and "table" in s.labels["route"]]
    assert table_404, requests
    latency = metrics["chemin_http_request_duration_seconds"]
    assert value(latency, "chemin_http_request_duration_seconds_count", route="healthz") >= 2
    assert value(latency, "chemin_http_request_duration_seconds_bucket", route="healthz", le="+Inf") >= 2


@pytest.mark.django_db
def test_the_open_days_coups_and_reconstructions(client, commissario, capo_partita, changeur, direzione):
    from tables.models import Coup
    from tests.audit.test_reports import build_day

    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    settled = Coup.objects.filter(session__gaming_day=world.day, state="settled").count()
    assert settled >= 5
    metrics = scrape(client)
    assert value(metrics["chemin_coups_settled"], "chemin_coups_settled", casino="venezia") == settled
    # build_day's table 2: one Regola coup, non-conforming, settled on the reconstruction.
    assert value(metrics["chemin_coups_reconstructed"], "chemin_coups_reconstructed", casino="venezia") == 1
    assert value(metrics["chemin_scrape_error"], "chemin_scrape_error", source="database") == 0


@pytest.mark.django_db
def test_the_celery_queue_length_is_read_from_redis(client, settings):
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    settings.METRICS_CELERY_QUEUES = ["ops-metrics-test"]
    r = redis.Redis.from_url(settings.REDIS_URL)
    r.delete("ops-metrics-test", "ops-metrics-test\x06\x166")
    try:
        r.lpush("ops-metrics-test", "a", "b", "c")
        r.lpush("ops-metrics-test\x06\x166", "d")  # a priority-6 message: kombu's list
        metrics = scrape(client)
        assert value(metrics["chemin_celery_queue_length"], "chemin_celery_queue_length",
                     queue="ops-metrics-test") == 4  # fmt: skip
        assert value(metrics["chemin_scrape_error"], "chemin_scrape_error", source="redis") == 0
    finally:
        r.delete("ops-metrics-test", "ops-metrics-test\x06\x166")


@pytest.mark.django_db
def test_redis_down_is_a_scrape_error_not_a_failed_scrape(client, settings):
    settings.REDIS_URL = CLOSED_PORT_REDIS
    metrics = scrape(client)
    assert value(metrics["chemin_scrape_error"], "chemin_scrape_error", source="redis") == 1
    assert "chemin_celery_queue_length" not in metrics
    assert "chemin_coups_settled" in metrics


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("address", "forwarded", "allowed"),
    [
        ("127.0.0.1", False, True),
        ("::1", False, True),
        ("10.1.2.3", False, True),
        ("172.18.0.5", False, True),
        ("192.168.1.20", False, True),
        ("203.0.113.5", False, False),
        ("8.8.8.8", False, False),
        # Relayed by the proxy: the proxy's private address says nothing about the client.
        ("172.18.0.1", True, False),
    ],
)
def test_access_by_address(client, settings, address, forwarded, allowed):
    settings.METRICS_TOKEN = None
    extra = {"REMOTE_ADDR": address}
    if forwarded:
        extra["HTTP_X_FORWARDED_FOR"] = "198.51.100.7"
    response = client.get("/metrics", **extra)
    assert response.status_code == (200 if allowed else 403)
    if not allowed:
        assert b"chemin_" not in response.content


@pytest.mark.django_db
def test_access_by_bearer_token(client, settings):
    settings.METRICS_TOKEN = "s3cr3t-metrics-token"
    outside = {"REMOTE_ADDR": "203.0.113.5", "HTTP_X_FORWARDED_FOR": "203.0.113.5"}
    assert client.get("/metrics", **outside).status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong", **outside).status_code == 403
    assert (
        client.get("/metrics", HTTP_AUTHORIZATION="Token s3cr3t-metrics-token", **outside).status_code == 403
    )
    scrape(client, HTTP_AUTHORIZATION="Bearer s3cr3t-metrics-token", **outside)


@pytest.mark.django_db
def test_private_addresses_can_be_refused_altogether(client, settings):
    settings.METRICS_ALLOW_PRIVATE = False
    settings.METRICS_TOKEN = "tok-123"
    assert client.get("/metrics").status_code == 403
    scrape(client, HTTP_AUTHORIZATION="Bearer tok-123")
