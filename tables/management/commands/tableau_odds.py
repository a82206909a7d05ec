"""`manage.py tableau_odds`: exact odds of a coup, printed as JSON (tables/engine/odds.py)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tables.engine.errors import EngineError
from tables.engine.odds import check_decks, exact_odds, resolve_profile

ERROR_STATUS = 2

REGOLA_SIDES = ("punta", "banker")


class Command(BaseCommand):
    help = (
        "Exact odds of one coup from a full shoe, counted as ordered 6-card sequences, for a profile, "
        "the rules in force and a strategy for the free cells (unnamed free cells stand). "
        "Prints one JSON object on stdout. On a bad input (unknown profile, bad decks, a Regola the "
        "profile does not allow, a bad strategy, a strategy for a cell that is not free) it prints "
        '{"error": {"code": ..., "message": ..., "details": ...}} on stdout, also as JSON, and exits '
        "with status 2."
    )
    # Pure arithmetic: no database, so no system or migration checks.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser) -> None:
        parser.add_argument("--profile", default=None, help="rule profile (default: venezia)")
        parser.add_argument("--decks", default=None, help="decks in the shoe (default: the profile's)")
        parser.add_argument(
            "--regola",
            default="",
            help="who declared the Regola: punta, banker or punta,banker (profiles that allow it)",
        )
        parser.add_argument("--banco-solo", action="store_true", help="the punta plays banco solo")
        parser.add_argument(
            "--strategy",
            default=None,
            help='JSON for the free cells, e.g. \'{"punta": {"5": "1/2"}, "banker": {"3/9": "draw", "6/-": "1/3"}}\'',
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = self._odds(options)
        except EngineError as exc:
            self.stdout.write(json.dumps({"error": exc.as_dict()}, ensure_ascii=False))
            raise CommandError(f"{exc.code}: {exc.message}", returncode=ERROR_STATUS) from None
        self.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False, indent=2))

    def _odds(self, options: dict[str, Any]):
        profile = resolve_profile(options["profile"])
        decks = profile.decks if options["decks"] is None else _parse_decks(options["decks"])
        regola = _parse_regola(options["regola"])
        return exact_odds(
            profile,
            decks=decks,
            regola_punta="punta" in regola,
            regola_banker="banker" in regola,
            banco_solo=options["banco_solo"],
            strategy=options["strategy"],
        )


def _parse_decks(value: Any) -> int:
    if not isinstance(value, int):
        try:
            value = int(str(value).strip())
        except ValueError:
            raise EngineError(
                "bad_decks", f"decks must be a whole number >= 1, got {value!r}.", decks=str(value)
            ) from None
    return check_decks(value)


def _parse_regola(value: str | None) -> set[str]:
    sides = {part.strip().lower() for part in (value or "").split(",") if part.strip()}
    unknown = sorted(sides - set(REGOLA_SIDES))
    if unknown:
        raise EngineError(
            "bad_regola",
            f"--regola takes punta, banker or punta,banker; got {value!r}.",
            unknown=unknown,
        )
    return sides
