"""resolve_coups: play, check and reconstruct coups given as JSON Lines (RULES.md §2-3).

The command only parses and prints; every rule lives in tables.engine (ARCHITECTURE.md).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tables.engine.coup import resolve
from tables.engine.errors import EngineError
from tables.engine.profiles import DEFAULT_PROFILE, Profile, UnknownProfile, get_profile

HELP = """\
Resolve coups given as JSON Lines on stdin; print one JSON line per input line, in order.

Input line: {"id": any, "profile": optional (else --profile, else venezia),
  "cards": [card codes in shoe order], "punta_draws": bool (required unless the punta has
  a natural), "banker_draws": optional bool (must agree with the cards),
  "regola": {"punta": bool, "banker": bool} (venezia only: regola_not_allowed elsewhere),
  "banco_solo": bool,
  "next_cards": [the shoe's next cards, for a reconstruction],
  "reconstruction": {"punta_draws": bool, "banker_draws": bool}}.
Output line: {"id", "as_played", "conforming", "violations", "settled"}; "settled" is
  the reconstruction (status "final" with void_cards, or "pending" with needs).
Errors: {"id": the line's id or null, "error": {"code", "message"}}; a bad line never
  stops the others. Blank lines are skipped and produce no output. Unknown keys are
  refused (bad_input) so that a misspelt field is not silently ignored.
Exit status 0 unless stdin cannot be read.
"""

_FIELDS = {
    "id",
    "profile",
    "cards",
    "punta_draws",
    "banker_draws",
    "regola",
    "banco_solo",
    "next_cards",
    "reconstruction",
}


class BadInput(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _opt_bool(data: dict[str, Any], key: str, where: str = "") -> bool | None:
    value = data.get(key)
    if value is not None and type(value) is not bool:
        raise BadInput("bad_input", f"{where}{key} must be true, false or null")
    return value


def _card_list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if type(value) is not list or any(type(c) is not str for c in value):
        raise BadInput("bad_input", f"{key} must be a list of card codes (strings)")
    return value


def _flags(data: dict[str, Any], key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if type(value) is not dict:
        raise BadInput("bad_input", f"{key} must be an object")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise BadInput("bad_input", f"unknown key(s) in {key}: {', '.join(unknown)}")
    for name in allowed:
        _opt_bool(value, name, f"{key}.")
    return value


def resolve_line(data: Any, default: Profile) -> dict[str, Any]:
    """One parsed input value -> the output object (without error handling for EngineError)."""
    if type(data) is not dict:
        raise BadInput("bad_input", "each line must be a JSON object")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise BadInput("bad_input", f"unknown key(s): {', '.join(unknown)}")
    name = data.get("profile")
    if name is None:
        profile = default
    elif type(name) is str:
        try:
            profile = get_profile(name)
        except UnknownProfile as exc:
            raise BadInput("unknown_profile", str(exc)) from None
    else:
        raise BadInput("bad_input", "profile must be a string")
    if "cards" not in data:
        raise BadInput("bad_input", "cards is required")
    cards = _card_list(data, "cards")
    next_cards = _card_list(data, "next_cards")
    regola = _flags(data, "regola", ("punta", "banker"))
    rec = _flags(data, "reconstruction", ("punta_draws", "banker_draws"))
    banco_solo = _opt_bool(data, "banco_solo")
    if any(regola.values()) and not profile.regola_allowed:
        # RULES.md §3.2: declaring the Regola is venezia's; elsewhere a declaration would be
        # silently without effect, which an auditor replaying a coup must be told.
        raise BadInput("regola_not_allowed", f"profile {profile.name!r} does not allow declaring the Regola")
    result = resolve(
        cards,
        profile,
        punta_draws=_opt_bool(data, "punta_draws"),
        banker_draws=_opt_bool(data, "banker_draws"),
        regola_punta=bool(regola.get("punta")),
        regola_banker=bool(regola.get("banker")),
        banco_solo=bool(banco_solo),
        next_cards=next_cards,
        reconstruction_punta_draws=rec.get("punta_draws"),
        reconstruction_banker_draws=rec.get("banker_draws"),
    )
    return {"id": data.get("id"), **result.as_dict()}


def process_line(raw: bytes | str, default: Profile) -> dict[str, Any] | None:
    """One input line -> one output object, or None for a blank line. Never raises for bad input."""
    data: Any = None
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if not text.strip():
            return None
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:  # JSONDecodeError and NaN/Infinity both
            raise BadInput("bad_json", f"not valid JSON: {exc}") from None
        return resolve_line(data, default)
    except UnicodeDecodeError:
        return _error(None, "bad_json", "the line is not valid UTF-8")
    except BadInput as exc:
        return _error(data, exc.code, exc.message)
    except EngineError as exc:
        return {"id": data.get("id") if type(data) is dict else None, "error": exc.as_dict()}


def _error(data: Any, code: str, message: str) -> dict[str, Any]:
    return {"id": data.get("id") if type(data) is dict else None, "error": {"code": code, "message": message}}


class Command(BaseCommand):
    help = HELP
    # Tests pass stdin=io.StringIO(...) through call_command.
    stealth_options = ("stdin",)

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any):
        from argparse import RawDescriptionHelpFormatter

        kwargs.setdefault("formatter_class", RawDescriptionHelpFormatter)
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--profile",
            default=DEFAULT_PROFILE,
            help=f"rule profile for lines that name none (default {DEFAULT_PROFILE})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            default = get_profile(options["profile"])
        except UnknownProfile as exc:
            raise CommandError(str(exc)) from None
        stdin = options.get("stdin") or sys.stdin
        # Read bytes where possible, so one line that is not UTF-8 is one error, not a crash.
        source = getattr(stdin, "buffer", stdin)
        out = self.stdout
        try:
            for raw in iter(source.readline, b"" if source is not stdin else ""):
                if not raw:
                    break
                result = process_line(raw, default)
                if result is None:
                    continue
                out.write(json.dumps(result, ensure_ascii=False))
                out.flush()
        except OSError as exc:
            raise CommandError(f"cannot read stdin: {exc}") from exc
