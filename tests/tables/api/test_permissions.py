"""Every role x every endpoint of the coup API: reads for the supervisors and auditors, and
for the session's own table staff (another table's are refused: test_read_scope.py), writes
only for the Capo Partita assigned to the session (and annulling a coup whose cards have
started, only for a Commissario: test_annul.py); a refusal writes nothing at all (not even its
idempotency key); anonymous calls get 401."""

from __future__ import annotations

import pytest

from floor.roles import Role
from tests.factories import UserFactory

from .conftest import TIE, Tablet, dump, error

pytestmark = pytest.mark.django_db

STAFF = [Role.COMMISSARIO, Role.CAPO_PARTITA, Role.CHANGEUR, Role.AUDITOR, Role.DIREZIONE]


@pytest.fixture
def world(game, make_game):
    own = Tablet(game.capo)
    coup = own.ok(own.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]
    other = make_game("venezia")  # another table; its Capo Partita is not ours
    other_capo = UserFactory(roles=[Role.CAPO_PARTITA])
    other.session.capo_partita = other_capo
    other.session.save(update_fields=["capo_partita"])
    sid, bid, p = game.session.pk, game.bank.pk, game.seat(2).pk
    posts = [
        (f"/api/sessions/{sid}/shoes/", {"number": "S-9"}),
        (f"/api/sessions/{sid}/void-cards/", {"card": "AS", "reason": "seen"}),
        (f"/api/sessions/{sid}/banks/", {"patron": p, "amount": 100_00}),
        (f"/api/banks/{bid}/withdraw/", {}),
        (f"/api/banks/{bid}/raise/", {"amount": 2000_00}),
        (f"/api/sessions/{sid}/coups/", {}),
        (f"/api/sessions/{sid}/coups/record/", {"cards": TIE, "punta_draws": False,
                                                "bets": [{"patron": p, "amount": 10_00}]}),
        (f"/api/coups/{coup}/banco/", {"patron": p}),
        (f"/api/coups/{coup}/bets/", {"patron": p, "amount": 10_00}),
        (f"/api/coups/{coup}/rien-ne-va-plus/", {}),
        (f"/api/coups/{coup}/cards/", {"card": "AS"}),
        (f"/api/coups/{coup}/declaration/", {"draws": True}),
        (f"/api/coups/{coup}/banker-decision/", {"draws": False}),
        (f"/api/coups/{coup}/reconstruction/card/", {"card": "AS"}),
        (f"/api/coups/{coup}/reconstruction/decision/", {"side": "banker", "draws": True}),
        (f"/api/sessions/{sid}/regola/", {"patron": p, "declared": True}),
        (f"/api/sessions/{sid}/bars/", {"patron": p, "reason": "faux tirage"}),
        (f"/api/coups/{coup}/bets/withdraw/", {"patron": p}),
        (f"/api/coups/{coup}/annul/", {"reason": "dispute"}),
    ]  # fmt: skip
    gets = [
        f"/api/sessions/{sid}/game/",
        f"/api/sessions/{sid}/balances/",
        f"/api/sessions/{sid}/banks/",
        f"/api/sessions/{sid}/coups/",
        f"/api/coups/{coup}/",
    ]
    return {"game": game, "posts": posts, "gets": gets, "other_capo": other_capo}


REFUSED_WRITERS = ["commissario", "changeur", "auditor", "direzione", "outsider", "other_capo", "multi_role"]


def user_for(name: str, world):
    if name == "other_capo":
        return world["other_capo"]
    if name == "outsider":
        return UserFactory()
    if name == "multi_role":  # the two roles one person may hold together (floor.roles)
        return UserFactory(roles=[Role.COMMISSARIO, Role.DIREZIONE])
    return UserFactory(roles=[name])


@pytest.mark.parametrize("who", REFUSED_WRITERS)
def test_writes_refused_for_everyone_but_the_assigned_capo_partita(world, who):
    tablet = Tablet(user_for(who, world))
    for url, body in world["posts"]:
        before = dump()
        response = tablet.post(url, body)
        expected = "permission_denied"
        if url.endswith("/annul/") and who in ("commissario", "direzione", "multi_role"):
            # A Commissario or the Direzione reaches the annul service, which answers that a
            # coup before its cards is its Capo Partita's to annul (once they have started, theirs).
            expected = "not_session_capo_partita"
        assert (response.status_code, error(response)) == (403, expected), (who, url)
        assert dump() == before, (who, url)  # 403s store no idempotency key either


def test_anonymous_gets_401_everywhere(world):
    anonymous = Tablet(None)
    for url, body in world["posts"]:
        before = dump()
        response = anonymous.post(url, body)
        assert (response.status_code, error(response)) == (401, "not_authenticated"), url
        assert response.headers["WWW-Authenticate"] == "Token"
        assert dump() == before
    for url in world["gets"]:
        assert anonymous.get(url).status_code == 401


@pytest.mark.parametrize("role", STAFF)
def test_reads_for_every_staff_role(world, role):
    session = world["game"].session
    own = {Role.CAPO_PARTITA: session.capo_partita, Role.CHANGEUR: session.changeur}.get(role)
    tablet = Tablet(own or UserFactory(roles=[role]))
    for url in world["gets"]:
        assert tablet.get(url).status_code == 200, (role, url)
    if own is not None:  # one of the role at another table reads none of this one
        tablet = Tablet(UserFactory(roles=[role]))
        for url in world["gets"]:
            assert (tablet.get(url).status_code, error(tablet.get(url))) == (403, "permission_denied"), (role, url)


def test_reads_refused_without_a_role(world):
    tablet = Tablet(UserFactory())
    for url in world["gets"]:
        response = tablet.get(url)
        assert (response.status_code, error(response)) == (403, "permission_denied"), url


def test_the_assigned_capo_partita_passes_authorization_everywhere(world):
    # His requests reach the services: each answers its own outcome (a success or the
    # state's refusal), never a permission refusal.
    tablet = Tablet(world["game"].capo)
    for url, body in world["posts"]:
        response = tablet.post(url, body)
        if url.endswith("/annul/") and response.status_code == 403:
            # By then a card is out: only a Commissario annuls it (the service's own refusal).
            assert error(response) == "not_commissario", response.json()
            continue
        assert response.status_code not in (401, 403, 500), (url, response.json())
    for url in world["gets"]:
        assert tablet.get(url).status_code == 200


def test_a_capo_partita_who_lost_the_role_may_not_write(world):
    game = world["game"]
    game.capo.groups.clear()
    game.capo.groups.add(*UserFactory(roles=[Role.AUDITOR]).groups.all())
    tablet = Tablet(type(game.capo).objects.get(pk=game.capo.pk))  # a fresh request's user
    url, body = world["posts"][7]
    assert error(tablet.post(url, body)) == "permission_denied"
