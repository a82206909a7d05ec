"""Errors the engine raises. Each has a stable `code`; the API maps them to 4xx responses."""

from __future__ import annotations

from typing import Any


class EngineError(ValueError):
    """An impossible or inconsistent input. `code` is stable and documented."""

    def __init__(self, code: str, message: str, **details: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out
