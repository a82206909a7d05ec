"""The changeur's register: the cash he exchanges for chips at his table, and back (RULES.md
§6: one changeur per table, who changes chips and banknotes with the house's float of chips).

Who: only the changeur assigned to the session, holding the role now, records an exchange;
a line he recorded he may void while he serves the session, and the Commissario di Gioco
may void any (a mistaken line is voided once with its reason, never deleted nor edited).
Nothing is written into a closed session (its totals went into its close's event); an
interrupted one still exchanges (players cash out while play is suspended).

Anti-money laundering (EU AMLD, Directive (EU) 2015/849 art. 11(d)): a casino identifies
the customer of a transaction of settings.AML_IDENTIFY_CENTS (EUR 2,000) or more, whether
carried out in a single operation or in several that appear to be linked. Here:
- an exchange of that amount or more names its patron (`patron_required`);
- a named patron's exchanges in the session, both directions (the wagered stake and the
  collected winnings alike), not voided, are linked: their sum with the new one is kept on
  the line (`linked_total`), and the line whose linked total reaches the threshold, and
  every later one of his, says the patron had to be named (`identification_required`);
- unnamed exchanges cannot be told apart, so the session's unnamed ones are linked
  together: once they would reach the threshold, every further exchange names its patron
  (`patron_required`, details.linked). Everyone at a table holds a registered place (a
  patron registered with his identity document), so naming him is one choice on the tablet.
The register is per session; a patron's exchanges at several tables of the day are not
summed here: the end-of-day report sums the day's (audit/reports/cash.py)."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Sum

from config.errors import ApplicationError, Conflict, NotAllowed, clean_text
from config.transactions import service_atomic
from floor.models import Patron, Seat, TableSession
from floor.roles import Role, has_role

from ..models import MAX_EXCHANGE_CENTS, CashExchange
from ._common import User, audit, lock_session, now

# Who voids any line of the register besides the changeur who recorded it.
VOIDS_ANY = (Role.COMMISSARIO,)


def threshold() -> int:
    return settings.AML_IDENTIFY_CENTS


def check_changeur(session: TableSession, by: User) -> None:
    # The API authorizes (tables.api.cash); the service still refuses anyone but the changeur
    # serving this table now, whoever calls it.
    if by is None or by.pk != session.changeur_id or not has_role(by, Role.CHANGEUR):
        raise NotAllowed(
            "not_session_changeur",
            "Only the changeur assigned to this table session records its cash exchanges.",
            details={"session": session.pk},
        )


def linked_total(session: TableSession | int, patron: Patron | int | None) -> int:
    """The session's exchanges linked with a new one of `patron` (None: the unnamed ones),
    not voided, both directions, cents."""
    session_id = session if isinstance(session, int) else session.pk
    rows = CashExchange.objects.filter(session_id=session_id, voided_at__isnull=True)
    if patron is None:
        rows = rows.filter(patron__isnull=True)
    else:
        rows = rows.filter(patron_id=patron if isinstance(patron, int) else patron.pk)
    return rows.aggregate(total=Sum("amount"))["total"] or 0


@service_atomic
def cash_exchange_record(
    *, session: TableSession, by: User, direction: str, amount: int, patron: Patron | None = None
) -> CashExchange:
    """Record one exchange at the table: `buy_in` (cash for chips) or `cash_out` (chips for
    cash), `amount` cents, the patron when named (required at the AML threshold, see above)."""
    session = lock_session(session, by, play=False, any_actor=True)
    check_changeur(session, by)
    if direction not in CashExchange.Direction.values:
        raise ApplicationError(
            "bad_direction",
            "An exchange is buy_in (cash for chips) or cash_out (chips for cash).",
            details={"known": list(CashExchange.Direction.values)},
        )
    if type(amount) is not int or amount <= 0:
        raise ApplicationError("bad_amount", "An exchange is a positive amount in cents.", details={"amount": amount})
    if amount > MAX_EXCHANGE_CENTS:
        raise ApplicationError(
            "exchange_above_maximum",
            "An exchange is at most the register's maximum.",
            details={"amount": amount, "maximum": MAX_EXCHANGE_CENTS},
        )
    if patron is not None and not Seat.objects.filter(session=session, patron=patron).exists():
        # Anyone he exchanges with holds (or held: he cashes out on leaving) a place at the table.
        raise ApplicationError(
            "patron_not_at_table",
            "The patron holds no place at this table session, and held none.",
            details={"patron": patron.pk, "session": session.pk},
        )
    limit = threshold()
    total = linked_total(session, patron) + amount
    if patron is None and total >= limit:
        raise ApplicationError(
            "patron_required",
            "The patron is named for an exchange of the identification threshold or more, alone or with the "
            "linked ones (anti-money laundering).",
            details={"amount": amount, "linked_total": total, "threshold": limit, "linked": amount < limit},
        )
    last = CashExchange.objects.filter(session=session).order_by("-number").values_list("number", flat=True).first()
    at = now()
    row = CashExchange.objects.create(
        session=session,
        number=(last or 0) + 1,
        direction=direction,
        amount=amount,
        patron=patron,
        linked_total=total,
        identification_required=total >= limit,
        at=at,
        by=by,
    )
    audit(
        session,
        by,
        "cash.exchanged",
        row,
        {
            "number": row.number,
            "direction": direction,
            "amount": amount,
            "patron": patron.pk if patron else None,
            "linked_total": total,
            "threshold": limit,
            "identification_required": row.identification_required,
            "at": at.isoformat(),
        },
    )
    return row


@service_atomic
def cash_exchange_void(*, exchange: CashExchange, by: User, reason: str) -> CashExchange:
    """Void a mistaken line, once, with its reason: by the changeur who recorded it while he
    serves the session, or by the Commissario. Its amount leaves the totals and the linked
    sums from then on; the other lines keep what they recorded."""
    session_id = exchange.session_id
    session = lock_session(session_id, by, play=False, any_actor=True)
    row = CashExchange.objects.select_for_update().get(pk=exchange.pk)
    recorder = by is not None and by.pk == row.by_id and by.pk == session.changeur_id and has_role(by, Role.CHANGEUR)
    if not (recorder or has_role(by, *VOIDS_ANY)):
        raise NotAllowed(
            "not_exchange_recorder",
            "Only the changeur who recorded this exchange, while he serves the table, or the Commissario voids it.",
            details={"exchange": row.pk},
        )
    if row.voided_at is not None:
        raise Conflict("exchange_already_voided", "This exchange is voided already.", details={"exchange": row.pk})
    reason = clean_text(reason, CashExchange, "void_reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the exchange is voided.")
    row.voided_at, row.voided_by, row.void_reason = now(), by, reason
    row.save(update_fields=["voided_at", "voided_by", "void_reason"])
    audit(
        session,
        by,
        "cash.exchange_voided",
        row,
        {
            "number": row.number,
            "direction": row.direction,
            "amount": row.amount,
            "patron": row.patron_id,
            "reason": reason,
            "at": row.voided_at.isoformat(),
        },
    )
    return row


def cash_totals_for_session_close(*, session: TableSession, by: User) -> None:
    """At the close (tables/session_close.py, in its transaction, the session locked): the
    register's totals into the session's stream, when it has lines, so the close says what the
    table's cash came to (RULES.md §8, art. 70: the session's register is closed with its figures)."""
    from ..selectors import cash_exchange_totals

    totals = cash_exchange_totals(session=session)
    if totals["count"] == 0 and totals["voided"] == 0:
        return
    audit(session, by, "cash.session_totals", session, totals)
