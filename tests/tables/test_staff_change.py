"""The croupiers' relief at the table: a coup in play goes on with the new Capo Partita, the
outgoing one's writes are refused from the change on (services and API), and each step names
who recorded it."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from config.errors import NotAllowed
from floor import services as floor_services
from floor.roles import Role
from tables import services
from tables.models import Coup

from .api.conftest import Tablet
from .test_coups import BANKER_WINS

pytestmark = pytest.mark.django_db


def test_a_coup_in_play_goes_on_with_the_new_capo_partita(game, make_user):
    old = game.capo
    coup = services.coup_open(session=game.session, by=old)
    services.bet_place(coup=coup, by=old, patron=game.seat(2), amount=300_00)
    services.rien_ne_va_plus(coup=coup, by=old)
    for card in BANKER_WINS[:2]:
        services.card_deal(coup=coup, by=old, card=card)

    relief = make_user("capo_relief", Role.CAPO_PARTITA)
    floor_services.table_session_staff_change(
        session=game.session, by=game.commissario, capo_partita=relief, reason="break"
    )
    with pytest.raises(NotAllowed) as refused:
        services.card_deal(coup=coup, by=old, card=BANKER_WINS[2])
    assert refused.value.code == "not_session_capo_partita"

    for card in BANKER_WINS[2:4]:
        services.card_deal(coup=coup, by=relief, card=card)
    services.punta_declare(coup=coup, by=relief, draws=True)
    services.card_deal(coup=coup, by=relief, card=BANKER_WINS[4])
    coup = services.banker_decide(coup=coup, by=relief, draws=False)
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker"
    actors = {
        event.action: event.actor_id
        for event in AuditEvent.objects.filter(stream__name=game.session.audit_stream, action__startswith="coup.")
    }
    assert actors["coup.opened"] == old.pk and actors["coup.settled"] == relief.pk


def test_the_relieved_capo_partita_is_refused_by_the_api(game, make_user):
    old_tablet = Tablet(game.capo)
    sid = game.session.pk
    relief = make_user("capo_relief", Role.CAPO_PARTITA)
    floor_services.table_session_staff_change(
        session=game.session, by=game.commissario, capo_partita=relief, reason="break"
    )
    body = {"cards": BANKER_WINS, "punta_draws": True, "bets": [{"patron": game.seat(2).pk, "amount": 100_00}]}
    refused = old_tablet.post(f"/api/sessions/{sid}/coups/record/", body)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
    assert not Coup.objects.filter(session=game.session).exists()
    new_tablet = Tablet(relief)
    new_tablet.ok(new_tablet.post(f"/api/sessions/{sid}/coups/record/", body), 201)
