"""docker/compose.yml as the README's "Deploying with Docker Compose" uses it."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("migrate", "web", "worker", "beat")


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())


def test_the_settings_set_in_docker_env_reach_the_app_containers():
    """`--env-file docker/.env` only fills in the compose file's ${...}: a variable the
    environment block does not name (TRUSTED_PROXY_HOPS, METRICS_TOKEN, LOG_LEVEL, the
    throttle's limits) never reached the app, whatever docker/.env said. Each app service
    reads the file the README has the operator write, and the values the compose file
    computes (DATABASE_URL, REDIS_URL) still win over it."""
    services = _compose()["services"]
    for name in APP_SERVICES:
        env_files = services[name].get("env_file")
        env_files = [env_files] if isinstance(env_files, str) else env_files or []
        paths = [entry if isinstance(entry, str) else entry["path"] for entry in env_files]
        assert (ROOT / "docker" / paths[0]).resolve() == (ROOT / "docker" / ".env").resolve(), (name, paths)
        assert services[name]["environment"]["DATABASE_URL"].startswith("postgres://chemin:")
    readme = (ROOT / "README.md").read_text()
    assert "cp docker/env.example docker/.env" in readme


def test_gunicorn_is_published_on_this_host_s_loopback_only():
    """The app trusts X-Forwarded-Proto and, with TRUSTED_PROXY_HOPS, X-Forwarded-For from
    whoever connects: published on every interface ("8000:8000"), any client on the network
    could bypass the TLS proxy and set both (a new address per failed login)."""
    ports = _compose()["services"]["web"]["ports"]
    assert ports == ["127.0.0.1:8000:8000"]
