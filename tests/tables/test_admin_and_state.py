"""The admin shows the game read-only; session_game_state carries what the tablet needs."""

from __future__ import annotations

from django.apps import apps
from django.contrib import admin

from tables import selectors, services


def test_admin_is_read_only(rf, django_user_model):
    request = rf.get("/")
    request.user = django_user_model(is_superuser=True, is_staff=True)
    # Every model of the game, the succession's included, is registered and read-only.
    for model in apps.get_app_config("tables").get_models():
        model_admin = admin.site._registry[model]
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request)
        assert not model_admin.has_delete_permission(request)


def test_state_through_a_coup(game):
    by = game.capo
    services.regola_mark(session=game.session, by=by, patron=game.banker, declared=True)
    services.faux_tirage_bar(session=game.session, by=by, patron=game.seat(8), reason="faux tirage")
    state = selectors.session_game_state(game.session)
    assert state["bank"]["banker"]["id"] == game.banker.pk and state["bank"]["regola"] is True
    assert state["shoe"]["cards_left"] == 312 and state["shoe"]["stop_card_reached"] is False
    assert state["can_open_coup"] and state["coup"] is None
    assert [b["patron"]["id"] for b in state["bars"]] == [game.seat(8).pk]
    coup = services.coup_open(session=game.session, by=by)
    services.bet_place(coup=coup, by=by, patron=game.seat(2), amount=300_00)
    services.bet_place(coup=coup, by=by, patron=game.standing[0], amount=200_00)
    state = selectors.session_game_state(game.session)["coup"]
    assert (state["state"], state["covered"], state["open"]) == ("betting", 500_00, 500_00)
    assert [b["standing"] for b in state["bets"]] == [False, True]
    services.rien_ne_va_plus(coup=coup, by=by)
    services.card_deal(coup=coup, by=by, card="2H")
    state = selectors.session_game_state(game.session)["coup"]
    assert state["hands"]["punta"] == {"cards": ["2H"], "total": 2}
    assert state["next"] == {"need": "card", "side": "banker", "natural": False}
    for card in ["AS", "3C", "2D"]:
        services.card_deal(coup=coup, by=by, card=card)
    state = selectors.session_game_state(game.session)["coup"]
    assert state["next"]["need"] == "punta_declaration"
    assert state["rule"] == {"side": "punta", "rule": "punta_several", "cell": "free", "advice": None}
    services.punta_declare(coup=coup, by=by, draws=False)
    state = selectors.session_game_state(game.session)
    assert state["coup"]["rule"]["rule"] == "banker_regola" and state["coup"]["rule"]["cell"] == "draw"
    assert state["cannot_open_because"] == ["coup_in_progress"]
    services.card_deal(coup=coup, by=by, card="4C")
    state = selectors.session_game_state(game.session)
    assert state["coup"] is None and state["last_coup"]["winner"] == "banker"
    assert state["shoe"]["cards_left"] == 307
    balances = {b["patron"]: b["balance"] for b in state["balances"]}
    assert balances[game.seat(2).pk] == -300_00 and state["house_cagnotte"] == 25_00
