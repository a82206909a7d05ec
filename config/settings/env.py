"""Reading settings from the environment, failing loudly on a bad value."""

import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None, *, required: bool = False) -> str | None:
    value = os.environ.get(name)
    if value is None or value == "":
        if required:
            raise ImproperlyConfigured(f"The environment variable {name} must be set.")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from exc
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below its minimum, {minimum}.")
    return number


_RATE = re.compile(r"[1-9]\d*/[smhd][a-z]*")  # what DRF reads: the period's first letter


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate, `N/period` (30/hour): checked here, not at the first request."""
    value = env_str(name, default)
    if not _RATE.fullmatch(value):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate such as 30/hour (second, minute, hour, day).")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]
