"""Prometheus metrics at /metrics.

Per process (the request middleware observes them):
  chemin_http_requests_total{method,route,status}
  chemin_http_request_duration_seconds{method,route,status}  (histogram)
`route` is the URL pattern's name (`tables:coup-detail`), never the raw path, so the number
of series stays bounded whatever the URLs requested; unknown methods count as OTHER.

Computed at scrape time (the same answer from whichever process is scraped):
  chemin_coups_settled{casino}        coups settled in the casino's open gaming day
  chemin_coups_reconstructed{casino}  of those, the non-conforming ones settled on the
                                      reconstruction (RULES.md §3.3)
  chemin_celery_queue_length{queue}   messages waiting in Redis (LLEN), when REDIS_URL is set
  chemin_scrape_error{source}         1 when the database or Redis could not be read

Why the coup figures come from the database at scrape time rather than from a counter that
the settlement increments: the database is the truth (a rolled-back coup never counts, a
retry never counts twice), every gunicorn worker gives the same figure, and the game's code
needs no metrics call. One indexed COUNT over the open day's coups per scrape.

gunicorn runs several processes: for the per-process request metrics to be summed across
them, set PROMETHEUS_MULTIPROC_DIR to an empty directory writable by the workers (cleared at
each start); without it each scrape sees the process that answered it.

Access (`metrics_view`): from a loopback or private address that came straight to us (no
X-Forwarded-For: a request relayed by the proxy is not trusted by address), or with
`Authorization: Bearer <METRICS_TOKEN>`. METRICS_ALLOW_PRIVATE=0 makes the token the only way."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_LABELS = ("method", "route", "status")

HTTP_REQUESTS = Counter("chemin_http_requests", "HTTP requests answered.", _LABELS)
HTTP_LATENCY = Histogram(
    "chemin_http_request_duration_seconds",
    "Time to answer an HTTP request, seconds.",
    _LABELS,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)

# kombu's Redis transport keeps one list per priority step: "celery", "celery\x06\x163", ...
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)


def request_observed(*, method: str, route: str, status: int, seconds: float) -> None:
    labels = (method if method in _METHODS else "OTHER", route, str(status))
    HTTP_REQUESTS.labels(*labels).inc()
    HTTP_LATENCY.labels(*labels).observe(seconds)


class FloorCollector(Collector):
    """The figures read at scrape time: the open days' coups and the Celery queue."""

    def collect(self):
        errors = GaugeMetricFamily(
            "chemin_scrape_error", "1 when this source could not be read for this scrape.", labels=["source"]
        )
        try:
            settled, reconstructed = self._coups()
        except Exception:
            logger.warning("metrics: the database could not be read", exc_info=True)
            errors.add_metric(["database"], 1)
        else:
            errors.add_metric(["database"], 0)
            yield settled
            yield reconstructed
        if settings.REDIS_URL:
            try:
                queues = self._queues()
            except Exception:
                logger.warning("metrics: Redis could not be read", exc_info=True)
                errors.add_metric(["redis"], 1)
            else:
                errors.add_metric(["redis"], 0)
                yield queues
        yield errors

    @staticmethod
    def _coups() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        from django.db.models import Count, Q

        from floor.models import GamingDay

        settled = GaugeMetricFamily(
            "chemin_coups_settled", "Coups settled in the open gaming day.", labels=["casino"]
        )
        reconstructed = GaugeMetricFamily(
            "chemin_coups_reconstructed",
            "Coups of the open gaming day settled on a Regola reconstruction (non-conforming).",
            labels=["casino"],
        )
        rows = (
            GamingDay.objects.filter(closed_at__isnull=True)
            .values("casino__code")
            .annotate(
                settled=Count("sessions__coups", filter=Q(sessions__coups__state="settled")),
                reconstructed=Count(
                    "sessions__coups",
                    filter=Q(sessions__coups__state="settled", sessions__coups__conforming=False),
                ),
            )
            .order_by()
        )
        for row in rows:
            settled.add_metric([row["casino__code"]], row["settled"])
            reconstructed.add_metric([row["casino__code"]], row["reconstructed"])
        return settled, reconstructed

    @staticmethod
    def _queues() -> GaugeMetricFamily:
        import redis

        family = GaugeMetricFamily(
            "chemin_celery_queue_length", "Celery messages waiting in Redis.", labels=["queue"]
        )
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
        try:
            for queue in settings.METRICS_CELERY_QUEUES:
                names = [queue] + [f"{queue}{_PRIORITY_SEP}{step}" for step in _PRIORITY_STEPS]
                pipe = client.pipeline(transaction=False)
                for name in names:
                    pipe.llen(name)
                family.add_metric([queue], sum(pipe.execute()))
        finally:
            client.close()
        return family


_FLOOR = FloorCollector()


def registry() -> CollectorRegistry:
    """The registry one scrape reads: this process's metrics (or, under gunicorn with
    PROMETHEUS_MULTIPROC_DIR, every worker's), plus the figures read now."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        scrape = CollectorRegistry(auto_describe=False)
        multiprocess.MultiProcessCollector(scrape)
    else:
        scrape = CollectorRegistry(auto_describe=False)
        scrape.register(_Delegate(REGISTRY))
    scrape.register(_FLOOR)
    return scrape


class _Delegate(Collector):
    def __init__(self, source: CollectorRegistry):
        self.source = source

    def collect(self):
        return self.source.collect()


# --------------------------------------------------------------------------- the view


# Spelled out: ipaddress's is_private also counts the documentation ranges and others.
_PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(net) for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)


def _address_allowed(request) -> bool:
    if not settings.METRICS_ALLOW_PRIVATE or "HTTP_X_FORWARDED_FOR" in request.META:
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_loopback or any(address in net for net in _PRIVATE_NETWORKS)


def _token_ok(request) -> bool:
    expected = settings.METRICS_TOKEN
    if not expected:
        return False
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())


def metrics_allowed(request) -> bool:
    return _token_ok(request) or _address_allowed(request)


@require_safe
def metrics_view(request):
    if not metrics_allowed(request):
        return HttpResponse("Forbidden\n", status=403, content_type="text/plain")
    response = HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
