from tables import services
from tables.models import Posting


def test_smoke(game):
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=300_00)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    for c in ["KH", "5S", "3C", "2D"]:
        services.card_deal(coup=coup, by=game.capo, card=c)
    services.punta_declare(coup=coup, by=game.capo, draws=True)
    services.card_deal(coup=coup, by=game.capo, card="2S")
    coup = services.banker_decide(coup=coup, by=game.capo, draws=False)
    coup.refresh_from_db()
    assert coup.state == "settled"
    assert coup.winner == "banker"
    assert sum(Posting.objects.filter(coup=coup).values_list("amount", flat=True)) == 0
