"""The Commissario's floor dashboard: every table with its session, minimum, banker and
bank, coups and cagnotte; open / interrupt / resume / close sessions, change the minimum,
seat and release patrons on a drawing of the table.

It reads floor (sessions, seats) and tables (bank, coups, cagnotte), so it lives in tables:
floor never imports tables (ARCHITECTURE.md). Views stay thin: parse, authorize (the
Commissario writes; the Direzione and the auditor look), call one floor service, render."""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Callable, Collection
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Count, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.errors import Conflict
from floor import selectors as floor_selectors
from floor import services as floor_services
from floor.models import Casino, GamingDay, Patron, Seat, SessionInterruption, Table, TableSession
from floor.permissions import SuspendsPlay
from floor.roles import Role, has_role
from tables.models import Coup
from tables.selectors import (
    closed_sessions_with_drawer,
    drawers_left_to_count,
    handovers_not_counted,
    handovers_not_counted_by_session,
    session_game_states,
)
from tables.services.cash_count import COUNTS_DRAWER

from .templatetags.chemin_ui import euros
from .views_common import (
    BadForm,
    Outcome,
    euros_to_cents,
    forbidden,
    form_post,
    int_field,
    is_htmx,
    post_only,
)

READERS = (Role.COMMISSARIO, Role.DIREZIONE, Role.AUDITOR)
# who may suspend and resume play: the API's rule (floor.permissions.SuspendsPlay), one list
SUSPENDERS = SuspendsPlay.write_roles
SUSPEND_ACTIONS = frozenset({"interrupt", "resume"})


def _floor_page(_pk: int) -> str:
    """Where a GET on a floor form's action goes (post_only): the floor, whose form it is."""
    return reverse("floor-dashboard")


# The drawing (viewBox 0 0 400 256): the Capo Partita at the hollow of the kidney, the seats
# round its outer edge, seat 1 on his right (the left of the drawing as he faces the players).
# Each seat is a link (to the seat form), a touch target: the drawing is 320 px wide in the
# narrowest card (the floor's grid: 22rem less its padding), 0.8 px a unit, so a seat's circle
# is 55 units across (44 px) and two neighbours' boxes are SEAT_PITCH units apart, centre to
# centre, across or down (44 + 8 px: a thumb's target and the gap to the next).
_CX, _CY, _RX, _RY = 200, 108, 170, 115
SEAT_R = 27.5
SEAT_PITCH = 65.0
_END = math.radians(208)  # seat 1 (and the last, mirrored) round the side, up by the Capo Partita


def _walk(step: float, start: float, seats_left: int) -> list[float]:
    """From the angle `start` on the edge, the angles of `seats_left` seats going round to the
    left, each `step` units from the last across or down (the larger), whichever comes first."""
    angles, theta = [], start
    x0, y0 = _point(start)
    while len(angles) < seats_left:
        theta += math.radians(0.05)
        x, y = _point(theta)
        if max(abs(x - x0), abs(y - y0)) >= step:
            angles.append(theta)
            x0, y0 = x, y
    return angles


def _point(theta: float) -> tuple[float, float]:
    return _CX + _RX * math.cos(theta), _CY + _RY * math.sin(theta)


@functools.cache
def seat_positions(seats: int) -> list[tuple[int, float, float]]:
    """The centres of the seats, evenly apart (the widest step that puts the last seat at
    _END, and never less than SEAT_PITCH), symmetric about the middle of the edge: one seat
    there (an odd number) or two either side of it."""

    def left_half(step: float) -> list[float]:
        if seats % 2:
            return [math.pi / 2, *_walk(step, math.pi / 2, seats // 2)]
        # the first two SEAT_PITCH apart across the middle: each step / 2 from it
        first = math.pi / 2 + math.asin(min(1.0, step / 2 / _RX))
        return [first, *_walk(step, first, seats // 2 - 1)]

    low, high = SEAT_PITCH, 2 * _RX
    for _round in range(40):  # the widest step whose last seat is still short of _END
        mid = (low + high) / 2
        low, high = (mid, high) if left_half(mid)[-1] <= _END else (low, mid)
    left = left_half(low)
    angles = [*reversed(left), *(math.pi - a for a in left[seats % 2:])]
    return [(n, *(round(v, 1) for v in _point(a))) for n, a in enumerate(angles, 1)]


def _initials(name: str) -> str:
    return "".join(part[0] for part in name.split()[:2]).upper()


def _table_cards(
    tables: list[Table], live: dict[int, TableSession], seat_choice: dict[int, int] | None = None,
    handovers: dict[int, list] | None = None, *, days_open: Collection[int] | None,
) -> list[dict]:  # fmt: skip
    """The cards of `tables`, in a constant number of queries however many there are: the
    live sessions' game states, places and coups played read for all at once. `handovers`: the
    changeurs' handovers not counted by session (tables.selectors.handovers_not_counted), each
    linked from its running session's card to its count's form, for those who count them
    (COUNTS_DRAWER: _handovers_to_count); None: none linked. `days_open`: the ids of the
    casinos with a gaming day open, read once for the request by its caller (not per card): a
    closed table's card offers the open form only then (floor.services.table_session_open
    refuses it otherwise, `no_open_gaming_day`; the casino's section says where the day opens
    instead). None: not read, for the live fragment, which offers no form."""
    sessions = [live[t.pk] for t in tables if t.pk in live]
    states = session_game_states(sessions) if sessions else {}
    seats = floor_selectors.active_seats_by_session(sessions=sessions)
    played = dict(
        Coup.objects.filter(session__in=sessions, state=Coup.State.SETTLED)
        .values_list("session_id")
        .annotate(n=Count("id"))
        .order_by()
    ) if sessions else {}  # fmt: skip
    choice = seat_choice or {}
    cards = []
    for table in tables:
        session = live.get(table.pk)
        card: dict = {"table": table, "session": session, "seat_choice": choice.get(table.pk),
                      "handovers": (handovers or {}).get(session.pk, []) if session is not None else [],
                      "day_open": None if days_open is None else table.casino_id in days_open}  # fmt: skip
        if days_open is not None:  # (the card's poll says what its forms follow: table_live)
            card["said"] = card_said(session, table.casino_id in days_open)
        if session is not None:
            _fill_card(card, table, states[session.pk], seats[session.pk], played.get(session.pk, 0))
        cards.append(card)
    return cards


def _table_card(
    table: Table, session: TableSession | None, handovers: dict[int, list] | None = None, *,
    days_open: Collection[int] | None,
) -> dict:  # fmt: skip
    return _table_cards([table], {} if session is None else {table.pk: session}, handovers=handovers,
                        days_open=days_open)[0]  # fmt: skip


def card_said(session: TableSession | None, day_open: bool) -> dict[str, str]:
    """What a table's card says of the state its forms follow, as its poll (table_live) sends
    it back: its session (none: the table is closed), whether play runs or is interrupted and in
    which capacity (the Interrupt or the Resume form, or the Direzione's note), its limits (the
    form that changes them shows them), and whether its casino's gaming day is open (a closed
    table's open form)."""
    interrupted = session is not None and session.status == TableSession.Status.INTERRUPTED
    return {
        "session": "" if session is None else str(session.pk),
        "status": "" if session is None else str(session.status),
        "by": (getattr(session, "suspended_as", None) or "") if interrupted else "",
        # (its limits' form shows them as they were: changed elsewhere, it shows them again)
        "limits": "" if session is None else f"{session.minimum}-{session.maximum or ''}",
        "day": "1" if day_open else "0",
    }


def _handovers_to_count(request: HttpRequest, live: dict[int, TableSession]) -> dict[int, list] | None:
    """The running sessions' handovers not counted, by session, for the cards of those who count
    them (COUNTS_DRAWER); None for the others: one query, or none."""
    if not has_role(request.user, *COUNTS_DRAWER):
        return None
    return handovers_not_counted_by_session([s.pk for s in live.values()])


def _fill_card(card: dict, table: Table, state: dict, seats: list[Seat], coups: int) -> None:
    by_number = {s.seat_number: s for s in seats if not s.standing}
    card.update(
        state=state,
        # the coups played, as the report counts them: not the number of the coup on the
        # table, which counts annulled coups and the one in play
        coups=coups,
        coup_state=state["coup"]["state"] if state["coup"] else None,
        seated=[s for s in seats if not s.standing],
        standing=[s for s in seats if s.standing],
        svg_seats=[
            {
                "number": n,
                "x": x,
                "y": y,
                "seat": by_number.get(n),
                "initials": _initials(by_number[n].patron.full_name) if n in by_number else "",
                "banker": bool(state["bank"]) and by_number.get(n) is not None
                and by_number[n].patron_id == state["bank"]["banker"]["id"],
            }
            for n, x, y in seat_positions(table.seats)
        ],
        seat_r=SEAT_R,
        free_seats=[n for n, _x, _y in seat_positions(table.seats) if n not in by_number],
    )


def _live_sessions() -> dict[int, TableSession]:
    # With the capacity of the suspension running, if any (`suspended_as`), in the same query:
    # one the Direzione ordered is the Direzione's to lift (floor.services.may_resume).
    running = SessionInterruption.objects.filter(session=OuterRef("pk"), resumed_at__isnull=True)
    live = (
        floor_selectors.table_session_list()
        .exclude(status=TableSession.Status.CLOSED)
        .annotate(suspended_as=Subquery(running.values("interrupted_as")[:1]))
    )
    return {s.table_id: s for s in live}


def in_play(live: dict[int, TableSession], day: GamingDay) -> list[int]:
    """The numbers of the tables whose session of the day is not closed (open or interrupted,
    whoever suspended it), in order: the close of the day is refused while any is (floor.services.gaming_day_close, the
    page's policy "refuse"), so the close form names them instead of offering the close. Read
    from the live sessions the page has already (each with its table): no query of its own."""
    return sorted(s.table.number for s in live.values() if s.gaming_day_id == day.pk)


def _staff(role: Role):
    return get_user_model().objects.filter(groups__name=role, is_active=True).order_by("username")


def _common(request: HttpRequest) -> dict:
    live = TableSession.objects.exclude(status=TableSession.Status.CLOSED)
    search = (request.GET.get("patron") or "")[:80]
    return {
        "can_write": has_role(request.user, Role.COMMISSARIO),
        # Management may suspend play at any moment (RULES.md §6): the Direzione interrupts and
        # resumes a table from here too, and does nothing else on this page.
        "can_suspend": has_role(request.user, *SUSPENDERS),
        # A suspension the Direzione ordered is lifted by the Direzione alone (RULES.md §6: its
        # decision is final): the Commissario is told so, and offered no resume form for it.
        "lifts_direzione": has_role(request.user, Role.DIREZIONE),
        # one croupier and one changeur per table (RULES.md §6): only staff with no table
        # (in either role) are offered
        "capi": _staff(Role.CAPO_PARTITA).exclude(pk__in=live.values("capo_partita")).exclude(
            pk__in=live.values("changeur")
        ),
        "changeurs": _staff(Role.CHANGEUR).exclude(pk__in=live.values("capo_partita")).exclude(
            pk__in=live.values("changeur")
        ),
        # only patrons without a place: one place on the whole floor (RULES.md §6)
        # (a subquery: exclude(seats__left_at__isnull=True) also drops those never seated),
        # the first FLOOR_PATRONS by name, or those the page's search finds (?patron=)
        "patrons": _free_patrons(search)[:FLOOR_PATRONS],
        "patron_search": search,
        # the table forms post to their URL with the search, so the card they answer with
        # (htmx) or the page (without) still lists the patrons found, not the first by name
        "patron_query": ("?" + urlencode({"patron": search})) if search else "",
        "patrons_listed": FLOOR_PATRONS,
    }


# Patrons each table's seat form lists. A casino's registry grows by the thousand in a season:
# the others are found by the page's search (name or document), never left out of reach.
FLOOR_PATRONS = 500


def _free_patrons(search: str):
    free = floor_selectors.patron_list().exclude(pk__in=Seat.objects.filter(left_at__isnull=True).values("patron_id"))
    # The Commissario, who alone has the seat forms, reads documents (floor.serializers.IDENTITY_READERS).
    if "\x00" in search:  # no name or document holds one (and PostgreSQL takes none in a query)
        return free.none()
    return floor_selectors.patron_search(free, search) if search.strip() else free


@never_cache
@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    if not has_role(request.user, *READERS):
        return forbidden(request, _("The floor dashboard is the Commissario's."))
    return _page(request)


def _page(request: HttpRequest, outcome: Outcome | None = None) -> HttpResponse:
    live = _live_sessions()
    seat_table = request.GET.get("table")
    seat_choice = request.GET.get("seat")
    tables = list(floor_selectors.table_list().filter(active=True))
    chosen = {}
    # (a seat's number: a few digits; int() of thousands raises, a 500)
    if seat_table and (seat_choice or "").isascii() and (seat_choice or "").isdigit() and len(seat_choice) <= 4:
        chosen = {t.pk: int(seat_choice) for t in tables if seat_table == str(t.pk)}
    all_casinos = list(floor_selectors.casino_list())
    days = floor_selectors.gaming_days_open(casinos=all_casinos)
    next_dates = floor_selectors.next_gaming_day_dates(casinos=[c for c in all_casinos if c.pk not in days])
    drawers = closed_sessions_with_drawer([day.pk for day in days.values()]) if has_role(request.user, *READERS) else {}
    # The changeurs relieved whose drawer is not counted, the sessions running or closed: each
    # handover is counted on its session's page, from the change on (tables.services.cash_count).
    handovers = handovers_not_counted([day.pk for day in days.values()]) if has_role(request.user, *READERS) else {}
    # And linked from its running session's card, for those who count it: the same rows (a
    # running session's day is open), by session, no query of their own.
    by_session: dict[int, list] | None = None
    if has_role(request.user, *COUNTS_DRAWER):
        by_session = {}
        for change in (change for changes in handovers.values() for change in changes):
            by_session.setdefault(change.session_id, []).append(change)
    cards = _table_cards(tables, live, chosen, handovers=by_session, days_open=days.keys())
    # No day open: the last day's drawers not counted, to those who count them, while its books
    # are still open (a late count; the desk's page of the day lists them too)
    late = (
        drawers_left_to_count(casinos=[c for c in all_casinos if c.pk not in days])
        if has_role(request.user, *COUNTS_DRAWER)
        else {}
    )
    casinos = [
        {
            "casino": casino,
            "day": days.get(casino.pk),
            "in_play": in_play(live, days[casino.pk]) if casino.pk in days else [],
            "drawers": drawers.get(days[casino.pk].pk, []) if casino.pk in days else [],
            "handovers": handovers.get(days[casino.pk].pk, []) if casino.pk in days else [],
            "late": late.get(casino.pk),
            "next_date": next_dates.get(casino.pk),
            "cards": [card for card in cards if card["table"].casino_id == casino.pk],
        }
        for casino in all_casinos
    ]
    return render(
        request,
        "tables/dashboard.html",
        {"casinos": casinos, "outcome": outcome, **_common(request)},
        status=outcome.status if outcome else 200,
    )


@never_cache
@login_required
@require_GET
def table_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The part of a table's card that polling refreshes (status, figures, the drawing, and
    its changeurs' handovers to count, linked for those who count them: one query however
    many, _handovers_to_count), every 5 s.

    The poll says too what the card's forms follow (card_said: ?session=, ?status=, ?by=,
    ?limits=, ?day=). Changed elsewhere (play interrupted or resumed, from another tab, the API
    or by the Direzione; the session opened or closed; its limits changed; the casino's gaming
    day opened or closed), the
    whole card comes instead, out of band (HX-Reswap none), with the forms the table offers
    now: its open form only while the day is open, Interrupt or Resume as play stands. What
    the Commissario typed or chose in the card stays (chemin.js), and a card holding the field
    he is typing in is left as it is until he leaves it (its poll, inside, asks again). One
    query more than the fragment, for the day, however many tables."""
    if not has_role(request.user, *READERS):
        return forbidden(request)
    table = get_object_or_404(Table, pk=pk)
    live = _live_sessions()
    session = live.get(table.pk)
    handovers = _handovers_to_count(request, {table.pk: session}) if session is not None else None
    day_open = GamingDay.objects.filter(casino_id=table.casino_id, closed_at__isnull=True).exists()
    said = {name: request.GET.get(name) for name in ("session", "status", "by", "limits", "day")}
    # (a card loaded before its poll said it asks for its fragment only)
    if said["session"] is not None and said != card_said(session, day_open):
        days_open = {table.casino_id} if day_open else set()
        card = _table_card(table, session, handovers=handovers, days_open=days_open)
        response = render(request, "tables/_floor_table.html", {"c": card, "outcome": None, "oob": True,
                                                                 **_common(request)})  # fmt: skip
        response["HX-Reswap"] = "none"  # the card, in place, out of band
        return response
    card = _table_card(table, session, handovers=handovers, days_open=None)
    return render(request, "tables/_floor_live.html", {"c": card, **_common(request)})


@never_cache
@login_required
@require_GET
def casino_live(request: HttpRequest, pk: int) -> HttpResponse:
    """A casino's section of the floor asks here every 5 s (_floor_casino_head.html) whether its
    gaming day, or the tables in play on it, changed elsewhere (another tab, another Commissario,
    the API): the day it shows (?day=, 0 for none) and the tables it says are in play (?play=,
    their numbers). The same: 204. Else its head again, out of band (HX-Reswap none): the day
    as it is, its open form or its close (offered once no table is in play), and its drawers.
    The cards follow by their own polls (table_live). Three queries besides the user's while
    nothing changed, however many tables; its reads once, however many, when it did."""
    if not is_htmx(request):
        return redirect("floor-dashboard")  # the address opened as a page: the floor
    if not has_role(request.user, *READERS):
        return forbidden(request, _("The floor dashboard is the Commissario's."))
    casino = get_object_or_404(Casino, pk=pk)
    day = GamingDay.objects.filter(casino=casino, closed_at__isnull=True).first()
    playing = (
        sorted(TableSession.objects.filter(gaming_day=day).exclude(status=TableSession.Status.CLOSED)
               .values_list("table__number", flat=True))
        if day is not None else []
    )  # fmt: skip
    if (request.GET.get("day"), request.GET.get("play")) == (
        str(day.pk if day else 0), ",".join(str(n) for n in playing)
    ):
        return HttpResponse(status=204)
    counts = has_role(request.user, *COUNTS_DRAWER)
    g = {
        "casino": casino,
        "day": day,
        "in_play": playing,
        "drawers": closed_sessions_with_drawer([day.pk]).get(day.pk, []) if day else [],
        "handovers": handovers_not_counted([day.pk]).get(day.pk, []) if day else [],
        "late": drawers_left_to_count(casinos=[casino]).get(casino.pk) if day is None and counts else None,
        "next_date": floor_selectors.next_gaming_day_dates(casinos=[casino]).get(casino.pk) if day is None else None,
        # (its hint names its tables' open forms: said where it has tables)
        "cards": Table.objects.filter(casino=casino, active=True).exists(),
    }
    response = render(request, "tables/_floor_casino_head.html", {
        "g": g, "oob_head": True, "can_write": has_role(request.user, Role.COMMISSARIO)})  # fmt: skip
    response["HX-Reswap"] = "none"
    return response


# --------------------------------------------------------------------------- actions


def _session(request: HttpRequest, table: Table) -> TableSession:
    """The session the form was rendered for: a stale form never acts on a newer session."""
    pk = int_field(request.POST.get("session"), field="session")
    session = TableSession.objects.filter(pk=pk, table=table).first()
    if session is None:
        raise BadForm("unknown_session", _("This session is not at this table."), details={"session": pk})
    return session


def _user(request: HttpRequest, field: str):
    pk = int_field(request.POST.get(field), field=field, empty=_("Choose a member of staff."))
    user = get_user_model().objects.filter(pk=pk).first()
    if user is None:
        raise BadForm("unknown_user", _("Choose a member of staff."), details={field: pk})
    return user


def act_open(request, table, user):
    maximum = request.POST.get("maximum", "").strip()
    session = floor_services.table_session_open(
        table=table,
        by=user,
        capo_partita=_user(request, "capo_partita"),
        changeur=_user(request, "changeur"),
        shoe_number=request.POST.get("shoe_number", ""),
        minimum=euros_to_cents(request.POST.get("minimum")),
        maximum=euros_to_cents(maximum, field="maximum") if maximum else None,
    )
    return _("Table %(table)s open: session %(number)s.") % {"table": table.number, "number": session.number}


def act_minimum(request, table, user):
    # The maximum changes only if the field was changed from what the page showed: a page
    # loaded before another change of the maximum would otherwise bring the old one back.
    typed, shown = (request.POST.get("maximum") or "").strip(), (request.POST.get("shown_maximum") or "").strip()
    if "maximum" not in request.POST or typed == shown:
        maximum = floor_services.KEEP
    else:
        maximum = euros_to_cents(typed, field="maximum") if typed else None
    session = floor_services.table_minimum_change(
        session=_session(request, table),
        by=user,
        minimum=euros_to_cents(request.POST.get("minimum")),
        maximum=maximum,
        reason=request.POST.get("reason", ""),
    )
    if session.maximum is None:
        return _("Limits: minimum € %(minimum)s, no maximum.") % {"minimum": euros(session.minimum)}
    return _("Limits: minimum € %(minimum)s, maximum € %(maximum)s.") % {
        "minimum": euros(session.minimum),
        "maximum": euros(session.maximum),
    }


def act_staff(request, table, user):
    session = _session(request, table)
    # The form names the whole staff; it changes what the page showed, or nothing: a page
    # loaded before another relief would otherwise bring back the one relieved since.
    shown = (request.POST.get("current_capo_partita"), request.POST.get("current_changeur"))
    if shown != (str(session.capo_partita_id), str(session.changeur_id)):
        raise Conflict(
            "staff_changed_meanwhile",
            _("The staff of this table changed since the page was loaded: look again."),
            details={"session": session.pk},
        )
    session = floor_services.table_session_staff_change(
        session=session,
        by=user,
        capo_partita=_user(request, "capo_partita"),
        changeur=_user(request, "changeur"),
        reason=request.POST.get("reason", ""),
    )
    return _("Staff changed: %(capo)s is the Capo Partita, %(changeur)s the changeur.") % {
        "capo": session.capo_partita.get_full_name() or session.capo_partita.username,
        "changeur": session.changeur.get_full_name() or session.changeur.username,
    }


def act_interrupt(request, table, user):
    floor_services.table_session_interrupt(
        session=_session(request, table), by=user, reason=request.POST.get("reason", "")
    )
    return _("Play interrupted.")


def act_resume(request, table, user):
    floor_services.table_session_resume(
        session=_session(request, table), by=user, reason=request.POST.get("reason", "")
    )
    return _("Play resumed.")


def act_close(request, table, user):
    # One tap must not end a table's evening: the page asks for a ticked box, as for the day.
    if request.POST.get("confirm") != "yes":
        raise BadForm("confirm_required", _("Tick the box to confirm the close."))
    floor_services.table_session_close(session=_session(request, table), by=user)
    return _("Session closed.")


def act_seat_assign(request, table, user):
    patron_pk = int_field(request.POST.get("patron"), field="patron", empty=_("Choose a patron."))
    patron = Patron.objects.filter(pk=patron_pk).first()
    if patron is None:
        raise BadForm("unknown_patron", _("Choose a patron."), details={"patron": patron_pk})
    where = request.POST.get("seat_number", "")
    standing = where == "standing"
    seat = floor_services.seat_assign(
        session=_session(request, table),
        patron=patron,
        by=user,
        seat_number=None if standing else int_field(where, field="seat_number", empty=_("Choose a seat, or standing.")),
        standing=standing,
    )
    if standing:
        return _("%(name)s stands at the table.") % {"name": patron.full_name}
    return _("%(name)s sits at seat %(number)s.") % {"name": patron.full_name, "number": seat.seat_number}


def act_seat_release(request, table, user):
    pk = int_field(request.POST.get("seat"), field="seat")
    seat = Seat.objects.filter(pk=pk, session__table=table).select_related("patron").first()
    if seat is None:
        raise BadForm("unknown_seat", _("This place is not at this table."), details={"seat": pk})
    floor_services.seat_release(seat=seat, by=user)
    return _("%(name)s leaves the table.") % {"name": seat.patron.full_name}


ACTIONS: dict[str, Callable] = {
    "open": act_open,
    "minimum": act_minimum,
    "staff": act_staff,
    "interrupt": act_interrupt,
    "resume": act_resume,
    "close": act_close,
    "seat-assign": act_seat_assign,
    "seat-release": act_seat_release,
}


# Actions that take staff from the free lists or give it back: every table's open form and
# relief offer only those with no table, so the other cards change with them.
STAFF_ACTIONS = frozenset({"open", "close", "staff"})
# Actions that change whether the gaming day may close: its close form changes with them.
DAY_CLOSE_ACTIONS = frozenset({"open", "close"})
# Actions that change the day's closed sessions, listed with their drawers (an open adds none),
# or its changeurs' handovers not counted (a relief of the changeur adds one).
DRAWER_LIST_ACTIONS = frozenset({"close", "staff"})


def _answer(request: HttpRequest, table: Table | None, outcome: Outcome, action: str = "") -> HttpResponse:
    if is_htmx(request) and table is not None:
        live = _live_sessions()
        common = _common(request)
        handovers = _handovers_to_count(request, live)
        # Every casino's open day, read once, after the action: for this card and the others
        # swapped out of band (any casino's), and for the close of this table's day below.
        days = floor_selectors.gaming_days_open()
        card = _table_card(table, live.get(table.pk), handovers, days_open=days.keys())
        response = render(
            request,
            "tables/_floor_table.html",
            {"c": card, "outcome": outcome, **common},
            status=outcome.status,
        )
        if outcome.ok and action in STAFF_ACTIONS:
            # the other tables' cards, swapped in place too (out of band), with the staff
            # now free or busy: not offered stale until the page is reloaded. Every casino's:
            # the page shows them all, and the staff lists are the whole floor's (_common)
            others = list(floor_selectors.table_list().filter(active=True).exclude(pk=table.pk))
            for other in _table_cards(others, live, handovers=handovers, days_open=days.keys()):
                context = {"c": other, "outcome": None, "oob": True, **common}
                response.content += render(request, "tables/_floor_table.html", context).content
        day = None
        if outcome.ok and action in DAY_CLOSE_ACTIONS | DRAWER_LIST_ACTIONS and common["can_write"]:
            day = days.get(table.casino_id)
        if day is not None:
            g = {"casino": table.casino, "day": day, "in_play": in_play(live, day)}
            if action in DAY_CLOSE_ACTIONS:
                # the close of the day, swapped in place too: offered once the last session
                # closes, withdrawn (naming the table) once one opens, without reloading the page
                response.content += render(request, "tables/_floor_day_close.html", {"g": g, "oob": True}).content
            if action in DRAWER_LIST_ACTIONS:
                # the day's closed sessions, the one just closed with its drawer to count, and its
                # handovers not counted, the one just made among them: listed (and linked) at
                # once, as the close of the day is
                g["drawers"] = closed_sessions_with_drawer([day.pk]).get(day.pk, [])
                g["handovers"] = handovers_not_counted([day.pk]).get(day.pk, [])
                response.content += render(request, "tables/_floor_drawers.html", {"g": g, "oob": True}).content
        return response
    return _page(request, outcome)


@login_required
@post_only(_floor_page)
def table_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    if not has_role(request.user, Role.COMMISSARIO) and not (
        action in SUSPEND_ACTIONS and has_role(request.user, *SUSPENDERS)
    ):
        return forbidden(request, _("Only the Commissario di Gioco may do this."))
    handler = ACTIONS.get(action)
    if handler is None:
        return render(request, "404.html", status=404)
    table = get_object_or_404(Table, pk=pk)
    outcome = form_post(request, lambda: handler(request, table, request.user))
    return _answer(request, table, outcome, action)


@login_required
@post_only(_floor_page)
def gaming_day_open(request: HttpRequest, pk: int) -> HttpResponse:
    if not has_role(request.user, Role.COMMISSARIO):
        return forbidden(request, _("Only the Commissario di Gioco may do this."))
    casino = get_object_or_404(Casino, pk=pk)

    def run() -> str:
        raw = (request.POST.get("date") or "").strip()
        if raw and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
            raise BadForm("bad_input", _("A date is expected (YYYY-MM-DD)."), details={"date": raw})
        try:
            date = dt.date.fromisoformat(raw) if raw else None  # blank: today
        except ValueError:
            raise BadForm("bad_input", _("A date is expected (YYYY-MM-DD)."), details={"date": raw}) from None
        day = floor_services.gaming_day_open(casino=casino, by=request.user, date=date)
        return _("Gaming day %(date)s open.") % {"date": day.date.isoformat()}

    return _page(request, form_post(request, run))


@login_required
@post_only(_floor_page)
def gaming_day_close(request: HttpRequest, pk: int) -> HttpResponse:
    """The Commissario closes the gaming day (its sessions closed first: refused otherwise, as
    by the API); the end-of-day report is then built (Celery)."""
    if not has_role(request.user, Role.COMMISSARIO):
        return forbidden(request, _("Only the Commissario di Gioco may do this."))
    day = get_object_or_404(GamingDay, pk=pk)

    def run() -> str:
        if request.POST.get("confirm") != "yes":
            raise BadForm("confirm_required", _("Tick the box to confirm the close."))
        closed = floor_services.gaming_day_close(gaming_day=day, by=request.user, open_sessions="refuse")
        return _("Gaming day %(date)s closed: the end-of-day report is being built.") % {
            "date": closed.date.isoformat()
        }

    return _page(request, form_post(request, run))
