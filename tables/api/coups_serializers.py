"""Serializers of the coup API (tables/api/coups.py).

Inputs check shape only (types, lengths, bounds that keep a value out of a database error);
the services check meaning and answer with their stable codes (bet_over_bank, bad_card...).

The game-state serializers describe, for the docs, the plain dict that
tables.selectors.session_game_state builds: the views return that dict as it is (it is
already JSON), the serializers only document it. tests/tables/api checks that they agree.
Component names carry a Game / Coup prefix so that they never collide with another app's."""

from __future__ import annotations

from django.db import connection
from drf_spectacular.utils import OpenApiExample, extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from config.api import StrictBooleanField, StrictInput, StrictIntegerField, is_strict_int
from config.prepared import Prepared
from floor.models import Patron
from tables.models import Bank, Bet, Coup, Posting

# Amounts are cents in PostgreSQL bigint columns: bounded so that an absurd number is a 400,
# never a database error. 10^12 cents is ten billion euro.
MAX_CENTS = 10**12
CARD = {"max_length": 4, "help_text": "A card code: rank + suit, e.g. `AS`, `10H`, `TD`, `KC`, `9♠`."}


def _in_range(pk: int) -> bool:
    """Whether the id fits the primary key's column (beyond it, the query would fail)."""
    low, high = connection.ops.integer_field_range(Patron._meta.pk.get_internal_type())
    return (low is None or pk >= low) and (high is None or pk <= high)


_PATRON = Prepared(lambda pk: Patron.objects.filter(pk=pk))
_PATRONS: dict[int, Prepared] = {}  # patrons by id, one query shape per number of ids


def patrons_by_id(ids: set[int]) -> dict[int, Patron]:
    """Patron.objects.in_bulk(ids), compiled once per connection and number of ids (a one-shot
    coup names a handful); ids beyond the column's range are simply not found."""
    ids = sorted(pk for pk in ids if _in_range(pk))
    if not ids:
        return {}
    query = _PATRONS.get(len(ids))
    if query is None:
        query = _PATRONS.setdefault(
            len(ids), Prepared(lambda *pks: Patron.objects.filter(pk__in=pks), args=(int,) * len(ids))
        )
    return {patron.pk: patron for patron in query.all(*ids)}


class PatronField(serializers.PrimaryKeyRelatedField):
    """A patron by id: PrimaryKeyRelatedField(queryset=Patron.objects.all()), the same answers
    and messages, its query compiled once per connection (config.prepared)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("queryset", Patron.objects.all())
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        try:
            # Never a float (4.5 would be read as patron 4: int() truncates), a boolean, a
            # sign, spaces or another script's digits, as config.api.IdField for the floor's ids.
            if not is_strict_int(data):
                raise TypeError
            pk = Patron._meta.pk.get_prep_value(data)
        except (TypeError, ValueError):
            self.fail("incorrect_type", data_type=type(data).__name__)
        patron = _PATRON.first(pk) if _in_range(pk) else None
        if patron is None:
            self.fail("does_not_exist", pk_value=data)
        return patron


def card_field(**kwargs) -> serializers.CharField:
    return serializers.CharField(**{**CARD, **kwargs})


# =========================================================================== inputs


class ShoeLoadInput(StrictInput):
    number = serializers.CharField(
        max_length=40, help_text="The physical shoe's number; the first shoe is the session's own."
    )
    decks = StrictIntegerField(
        min_value=1, max_value=16, required=False, help_text="Defaults to the table's decks."
    )
    burn = serializers.ListField(
        child=card_field(allow_null=True),
        max_length=16,
        required=False,
        help_text="chemmy-fi burns 7: the burned cards, null for the unseen ones (all unseen if omitted).",
    )


class CardVoidInput(StrictInput):
    card = card_field()
    reason = serializers.CharField(max_length=200, help_text="Seen face up in the sabot, dropped...")


class BankOpenInput(StrictInput):
    patron = PatronField()
    amount = StrictIntegerField(max_value=MAX_CENTS, help_text="The bank B, cents (at least the minimum).")


class BankRaiseInput(StrictInput):
    amount = StrictIntegerField(max_value=MAX_CENTS, help_text="The new bank, cents.")


class BancoCallInput(StrictInput):
    patron = PatronField()


BET_KINDS = [Bet.Kind.INDIVIDUAL.value, Bet.Kind.AVEC_LA_TABLE.value]


class BetPlaceInput(StrictInput):
    patron = PatronField()
    amount = StrictIntegerField(
        max_value=MAX_CENTS,
        required=False,
        allow_null=True,
        help_text="Cents. May be omitted for avec_la_table (half the bank, rounded up).",
    )
    kind = serializers.ChoiceField(
        choices=BET_KINDS, default=Bet.Kind.INDIVIDUAL.value, help_text="banco solo: POST .../banco/."
    )


class CardDealInput(StrictInput):
    card = card_field()
    expect_cards = StrictIntegerField(
        required=False, min_value=0, max_value=6,
        help_text="Optional: how many cards (of the coup; of the reconstruction, for its cards) the "
        "tablet had seen when this one was entered. If others were entered since (another tablet, an "
        "old page), 409 `coup_moved_on` and nothing is dealt, rather than dealing this card to "
        "the hand that comes next now.",
    )  # fmt: skip


class CardCorrectInput(StrictInput):
    was = card_field(help_text="The coup's last card as it was entered (the wrong one), e.g. 7D.")
    card = card_field(help_text="The card it really is, e.g. 7H: the same card out of the shoe, read anew.")


class RequiredBooleanField(StrictBooleanField):
    """A boolean the request must carry, whatever its content type. DRF reads a boolean missing
    from a form body (x-www-form-urlencoded, multipart) as false, like an unticked HTML checkbox:
    a form post without `draws` would record "non" (stands). Here it is missing: a 400."""

    default_empty_html = empty


class DrawsInput(StrictInput):
    draws = RequiredBooleanField(help_text="true: carte / draws; false: non / stands.")


class ReconstructionDecisionInput(StrictInput):
    side = serializers.ChoiceField(choices=["punta", "banker"])
    draws = RequiredBooleanField()


class RegolaMarkInput(StrictInput):
    patron = PatronField()
    declared = RequiredBooleanField()


class FauxTirageBarInput(StrictInput):
    patron = PatronField()
    reason = serializers.CharField(max_length=200)


class CoupAnnulInput(StrictInput):
    reason = serializers.CharField(max_length=200, help_text="Why the coup is annulled (for the record).")


class CoupRecordBetInput(StrictInput):
    patron = StrictIntegerField(min_value=1, help_text="Patron id.")
    amount = StrictIntegerField(max_value=MAX_CENTS, required=False, allow_null=True)
    kind = serializers.ChoiceField(choices=BET_KINDS, default=Bet.Kind.INDIVIDUAL.value)


class CoupReconstructionInput(StrictInput):
    # A mistyped key ("banker_draw") is refused (StrictInput), not dropped with its decision.
    punta_draws = StrictBooleanField(required=False)
    banker_draws = StrictBooleanField(required=False)


class CoupRecordInput(StrictInput):
    """The one-shot coup (tables.services.coup_record)."""

    bets = CoupRecordBetInput(many=True, required=False, help_text="In betting order.")
    banco = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        max_length=32,
        required=False,
        help_text="Patron ids calling banco solo, in the order they called (instead of bets).",
    )
    cards = serializers.ListField(
        child=card_field(), max_length=12, help_text="Every card of the coup in shoe order (4 to 6)."
    )
    punta_draws = StrictBooleanField(
        required=False, allow_null=True, help_text="The punta's declaration: carte (true) / non (false)."
    )
    banker_draws = StrictBooleanField(
        required=False,
        allow_null=True,
        help_text="May be omitted: a banker's third card in `cards` means he drew, none means he stood.",
    )
    next_cards = serializers.ListField(
        child=card_field(),
        max_length=6,
        required=False,
        help_text="Shoe cards for a non-conforming coup's reconstruction (RULES.md §3.3).",
    )
    reconstruction = CoupReconstructionInput(
        required=False, help_text="Decisions for free cells the real coup never reached."
    )

    def validate_bets(self, bets):
        if len(bets) > 64:
            raise serializers.ValidationError("At most 64 bets.")
        return bets

    def validate(self, data):
        # One query for every patron named (a PrimaryKeyRelatedField per bet would be one each).
        ids = {b["patron"] for b in data.get("bets", [])} | set(data.get("banco", []))
        patrons = patrons_by_id(ids)
        unknown = sorted(ids - set(patrons))
        if unknown:
            raise serializers.ValidationError({"patron": [f"Unknown patron id(s): {unknown}."]})
        data["bets"] = [{**b, "patron": patrons[b["patron"]]} for b in data.get("bets", [])]
        data["banco"] = [patrons[pk] for pk in data.get("banco", [])]
        return data


# The docs' examples name the demo floor's patrons (`make run`, README "Playing a coup through the
# API"): at table 1, session 1, patron 1 at seat 1 holds the first bank and patrons 2-7 sit at
# seats 2-7, so that "Try it out" with an example plays on the demo as it stands. Swagger UI
# fills the body with the first example: the README's own step comes first.
# tests/tables/api/test_docs.py plays every one of them on the demo floor.
RECORD_EXAMPLES = [
    OpenApiExample(
        "Banker alla Regola stood on 3 against a 2: reconstructed with the next shoe card",
        description="The README's step 4 on the demo floor: mark the banker (patron 1) alla Regola "
        "first (POST /api/sessions/{id}/regola/). The punta (highest bettor, patron 2) has 2+3 = 5, "
        "says carte and gets a 2 (7); the banker has A+2 = 3 and stands where the Regola has him draw: "
        "the coup as played is kept, and settles on its reconstruction with the next shoe card (6D): "
        "the banker wins 9 to 7; cagnotte 5% of 1,000.00 = 50.00.",
        value={
            "bets": [{"patron": 2, "amount": 60000}, {"patron": 3, "amount": 40000}],
            "cards": ["2H", "AS", "3C", "2D", "2S"],
            "punta_draws": True,
            "next_cards": ["6D"],
        },
        request_only=True,
    ),
    OpenApiExample(
        "Two bets, the banker wins (venezia, 5% cagnotte)",
        description="Punta (highest bettor, patron 2) has K+3 = 3, says carte and gets a 2 (5); the "
        "banker has 5+2 = 7 and stands. S = 533.33; cagnotte 5% rounded to 10 cents = 26.70.",
        value={
            "bets": [{"patron": 2, "amount": 33333}, {"patron": 3, "amount": 20000}],
            "cards": ["KH", "5S", "3C", "2D", "2S"],
            "punta_draws": True,
        },
        request_only=True,
    ),
    OpenApiExample(
        "Banco solo, punta's natural",
        description="Patron 2 calls banco (the whole bank) and wins with a natural 9.",
        value={"banco": [2], "cards": ["9H", "KS", "KC", "5D"]},
        request_only=True,
    ),
    OpenApiExample(
        "Banco avec la table and an individual bet, the punta stands",
        description="Patron 2 takes half the bank (avec la table: he is the punta), patron 3 bets "
        "100.00 €; the punta stands on 7, the banker on 6: the punta wins.",
        value={
            "bets": [{"patron": 2, "kind": "avec_la_table"}, {"patron": 3, "amount": 10000}],
            "cards": ["7H", "6S", "KH", "KD"],
            "punta_draws": False,
        },
        request_only=True,
    ),
    OpenApiExample(
        "A reconstruction that needs a decision the real coup never took",
        description="No mark needed: the punta (patron 2) stood on 4, where he must draw. The "
        "reconstruction gives him the fifth card (9D: 3); the banker on 5 against a third card 9 then "
        "decides what the real coup never asked him (`reconstruction`: he draws) and takes the next shoe "
        "card (3H: 8). The banker wins 8 to 3; cagnotte 5% of 100.00 = 5.00.",
        value={
            "bets": [{"patron": 2, "amount": 10000}],
            "cards": ["2H", "KS", "2C", "5D", "9D"],
            "punta_draws": False,
            "reconstruction": {"banker_draws": True},
            "next_cards": ["3H"],
        },
        request_only=True,
    ),
]

# The README's steps 1-3 on the demo floor.
SHOE_EXAMPLES = [
    OpenApiExample(
        "The session's first shoe",
        description="The demo's session 1 was opened with shoe S-101; the table's decks (6 at venezia) "
        "unless `decks` is given.",
        value={"number": "S-101"},
        request_only=True,
    ),
]
BANK_EXAMPLES = [
    OpenApiExample(
        "The first bank, to the player at seat 1",
        description="Patron 1 (seat 1 of the demo's table 1) opens the bank at 1,000.00 € (cents).",
        value={"patron": 1, "amount": 100000},
        request_only=True,
    ),
]
REGOLA_EXAMPLES = [
    OpenApiExample(
        "The banker plays alla Regola",
        description="Patron 1, the demo's first banker; `false` takes the mark off.",
        value={"patron": 1, "declared": True},
        request_only=True,
    ),
]

# The step-by-step coup of the README (step 4), on the demo floor: the same coup as the first
# record example, one request at a time, each answer's `coup.next` saying what comes next.
BET_EXAMPLES = [
    OpenApiExample(
        "An individual bet",
        description="Patron 2 (seat 2 of the demo's table 1) bets 600.00 €; the README's coup then has "
        "patron 3 bet 400.00 € (`{\"patron\": 3, \"amount\": 40000}`).",
        value={"patron": 2, "amount": 60000},
        request_only=True,
    ),
    OpenApiExample(
        "Banco avec la table",
        description="Half the bank, rounded up: `amount` may be omitted.",
        value={"patron": 2, "kind": "avec_la_table"},
        request_only=True,
    ),
]
CARD_EXAMPLES = [
    OpenApiExample(
        "The next card out of the shoe",
        description="One card a request, in shoe order (punta, banker, punta, banker, then the third "
        "cards): the README's coup deals 2H, AS, 3C, 2D, then 2S after the punta's carte.",
        value={"card": "2H"},
        request_only=True,
    ),
    OpenApiExample(
        "Guarded by the cards seen",
        description="`expect_cards`: how many of the coup's cards the tablet had seen (here the first "
        "four): if another was entered since, 409 `coup_moved_on` and nothing is dealt.",
        value={"card": "2S", "expect_cards": 4},
        request_only=True,
    ),
]
CARD_CORRECT_EXAMPLES = [
    OpenApiExample(
        "7H tapped as 7D",
        description="The coup's last card was entered as 7D; it is the 7 of hearts. The same shoe card "
        "(same position) is recorded as 7H, the hand it went to gets it, and `coup.next` is what the "
        "coup needs after a 7H.",
        value={"was": "7D", "card": "7H"},
        request_only=True,
    ),
]
DECLARATION_EXAMPLES = [
    OpenApiExample("Carte: the punta draws", value={"draws": True}, request_only=True),
    OpenApiExample("Non: the punta stands", value={"draws": False}, request_only=True),
]
BANKER_DECISION_EXAMPLES = [
    OpenApiExample(
        "The banker stands",
        description="The README's coup: the banker alla Regola stands on 3 against the punta's third "
        "card 2, where the Regola has him draw; the coup waits for its reconstruction "
        "(`coup.next.need`: `reconstruction`, `needs`: `{\"cards\": 1}`).",
        value={"draws": False},
        request_only=True,
    ),
    OpenApiExample(
        "The banker draws", description="Then deal his card (POST .../cards/).", value={"draws": True},
        request_only=True,
    ),
]
RECONSTRUCTION_CARD_EXAMPLES = [
    OpenApiExample(
        "The next shoe card",
        description="The README's coup: 6D, the banker's third card in the reconstruction (9 to 7).",
        value={"card": "6D"},
        request_only=True,
    ),
]
RECONSTRUCTION_DECISION_EXAMPLES = [
    OpenApiExample(
        "The banker draws in the reconstruction",
        description="A free cell the real coup never reached (`needs`: `{\"decision\": \"banker\"}`).",
        value={"side": "banker", "draws": True},
        request_only=True,
    ),
]


# =========================================================================== the game state


class GamePatronRefSerializer(serializers.Serializer):
    id = StrictIntegerField()
    name = serializers.CharField()


class GameHandSerializer(serializers.Serializer):
    cards = serializers.ListField(child=serializers.CharField())
    total = StrictIntegerField(allow_null=True)


class GameHandsSerializer(serializers.Serializer):
    punta = GameHandSerializer()
    banker = GameHandSerializer()


class GameNextSerializer(serializers.Serializer):
    need = serializers.ChoiceField(
        choices=["bets", "card", "punta_declaration", "banker_decision", "reconstruction", "complete"],
        help_text="What the coup waits for: bets (then rien ne va plus), the next card, the punta's "
        "declaration, the banker's decision, or the reconstruction (see `needs`).",
    )
    side = serializers.CharField(allow_null=True, help_text="punta | banker: whose card or decision.")
    natural = serializers.BooleanField()
    needs = serializers.DictField(required=False, help_text='reconstruction: {"cards": 1} or {"decision": "banker"}.')


class GameRuleSerializer(serializers.Serializer):
    side = serializers.CharField()
    rule = serializers.CharField(help_text="The rule in force, e.g. `banker_regola`, `free`.")
    cell = serializers.CharField(help_text="draw | stand | free")
    advice = serializers.CharField(allow_null=True, help_text="For a free cell: what the table recommends.")


class GameViolationSerializer(serializers.Serializer):
    side = serializers.CharField()
    rule = serializers.CharField()
    punta_total = StrictIntegerField()
    banker_total = StrictIntegerField()
    punta_third_card = serializers.CharField(allow_null=True)
    punta_third_value = StrictIntegerField(allow_null=True)
    required = serializers.CharField()
    done = serializers.CharField()


class GamePlayedSerializer(serializers.Serializer):
    punta = GameHandSerializer()
    banker = GameHandSerializer()
    winner = serializers.CharField(help_text="punta | banker | tie")
    natural = serializers.BooleanField()


class GameSettledSerializer(serializers.Serializer):
    """The version settled on: final (the hands, the winner, the void cards) or pending."""

    status = serializers.CharField(help_text="final | pending")
    needs = serializers.DictField(allow_null=True)
    punta = GameHandSerializer(required=False)
    banker = GameHandSerializer(required=False)
    winner = serializers.CharField(required=False)
    natural = serializers.BooleanField(required=False)
    void_cards = serializers.ListField(child=serializers.CharField(), required=False)


class GameBetSerializer(serializers.Serializer):
    id = StrictIntegerField()
    patron = GamePatronRefSerializer()
    kind = serializers.CharField()
    amount = StrictIntegerField()
    order = StrictIntegerField()
    seat_number = StrictIntegerField(allow_null=True)
    standing = serializers.BooleanField()
    carried = serializers.BooleanField(help_text="Stayed on the table after a tie (classic, chemmy-fi).")


class GameBancoCallSerializer(serializers.Serializer):
    patron = GamePatronRefSerializer()
    order = StrictIntegerField()
    seat_number = StrictIntegerField(allow_null=True)
    won = serializers.BooleanField(allow_null=True)
    carried = serializers.BooleanField(help_text="Carried from a tie (classic, chemmy-fi).")


class GameCoupSerializer(serializers.Serializer):
    """A coup as the tablet sees it: bets, hands, what it needs next, the rule in force."""

    id = StrictIntegerField()
    number = StrictIntegerField()
    state = serializers.ChoiceField(choices=Coup.State.choices)
    bank_amount = StrictIntegerField(help_text="B, cents.")
    covered = StrictIntegerField(help_text="S, cents.")
    open = StrictIntegerField(help_text="B - S: what bets may still cover, cents.")
    banco_solo = serializers.BooleanField()
    punta = GamePatronRefSerializer(allow_null=True)
    regola_punta = serializers.BooleanField()
    regola_banker = serializers.BooleanField()
    bets = GameBetSerializer(many=True)
    banco_calls = GameBancoCallSerializer(many=True)
    cards = serializers.ListField(child=serializers.CharField())
    punta_draws = serializers.BooleanField(allow_null=True)
    banker_draws = serializers.BooleanField(allow_null=True)
    hands = GameHandsSerializer(allow_null=True)
    next = GameNextSerializer(allow_null=True, help_text="null once settled or annulled.")
    rule = GameRuleSerializer(allow_null=True, help_text="The rule in force for the decision awaited (hint).")
    needs = serializers.DictField(allow_null=True)
    as_played = GamePlayedSerializer(allow_null=True)
    conforming = serializers.BooleanField(allow_null=True)
    violations = GameViolationSerializer(many=True)
    settled = GameSettledSerializer(allow_null=True)
    next_cards = serializers.ListField(child=serializers.CharField())
    winner = serializers.CharField(allow_null=True)
    cagnotte = StrictIntegerField()
    annul_reason = serializers.CharField(
        allow_null=True, help_text="Why the coup was annulled before its cards; null otherwise."
    )


class GameSessionSerializer(serializers.Serializer):
    id = StrictIntegerField()
    status = serializers.CharField()
    table = StrictIntegerField(help_text="The table's number.")
    profile = serializers.CharField()
    minimum = StrictIntegerField()
    maximum = StrictIntegerField(allow_null=True)
    regola_allowed = serializers.BooleanField()


class GameBankSerializer(serializers.Serializer):
    id = StrictIntegerField()
    number = StrictIntegerField()
    banker = GamePatronRefSerializer()
    seat_number = StrictIntegerField(allow_null=True)
    amount = StrictIntegerField()
    initial_amount = StrictIntegerField()
    coups_completed = StrictIntegerField()
    origin = serializers.CharField()
    regola = serializers.BooleanField()


class GameShoeSerializer(serializers.Serializer):
    id = StrictIntegerField()
    seq = StrictIntegerField()
    number = serializers.CharField()
    decks = StrictIntegerField(required=False)
    cards_out = StrictIntegerField(required=False)
    cards_left = StrictIntegerField(required=False)
    dealable = StrictIntegerField(required=False)
    voided = StrictIntegerField(required=False)
    stop_at = StrictIntegerField(required=False)
    stop_card_reached = serializers.BooleanField(required=False)


class GameSeatSerializer(serializers.Serializer):
    patron = GamePatronRefSerializer()
    seat_number = StrictIntegerField(allow_null=True)
    standing = serializers.BooleanField()
    barred = serializers.BooleanField()
    regola = serializers.BooleanField()


class GameMarkSerializer(serializers.Serializer):
    patron = GamePatronRefSerializer()
    declared = serializers.BooleanField()


class GameBarSerializer(serializers.Serializer):
    patron = GamePatronRefSerializer()
    reason = serializers.CharField()
    at = serializers.DateTimeField()


class GameBalanceSerializer(serializers.Serializer):
    patron = StrictIntegerField()
    name = serializers.CharField()
    balance = StrictIntegerField(help_text="Sum of the patron's postings at the session, cents.")


class GameStateSerializer(serializers.Serializer):
    """The tablet's whole view of a table (tables.selectors.session_game_state)."""

    session = GameSessionSerializer()
    bank = GameBankSerializer(allow_null=True)
    coup = GameCoupSerializer(allow_null=True, help_text="The coup in play, if any.")
    last_coup = GameCoupSerializer(allow_null=True, help_text="The last coup, when none is in play.")
    can_open_coup = serializers.BooleanField()
    cannot_open_because = serializers.ListField(
        child=serializers.CharField(),
        help_text="session_closed, session_interrupted, no_active_bank, not_enough_players (with "
        "no_active_bank: the session's first bank waits for the table's min_seats_to_start seats taken; "
        "`seats` lists them), no_shoe, stop_card_reached, coup_in_progress, banker_barred.",
    )
    shoe = GameShoeSerializer(allow_null=True)
    seats = GameSeatSerializer(many=True)
    regola_marks = GameMarkSerializer(many=True)
    bars = GameBarSerializer(many=True)
    balances = GameBalanceSerializer(many=True)
    house_cagnotte = StrictIntegerField()
    # The bank passing (RULES.md §5): shaped and documented by the succession API
    # (tables/api/succession.py); optional here so this schema never lags behind it.
    rotation = serializers.DictField(
        required=False, allow_null=True, help_text="Whose turn the bank is next (succession API)."
    )
    succession = serializers.DictField(
        required=False, allow_null=True, help_text="The bank passing in progress, if any (succession API)."
    )


# =========================================================================== write answers


class CoupAnswerSerializer(serializers.Serializer):
    coup = GameCoupSerializer(
        help_text="The coup acted on, with what it needs next (also in game.coup while in play, "
        "game.last_coup once settled)."
    )
    game = GameStateSerializer()


class ShoeAnswerSerializer(serializers.Serializer):
    shoe = GameShoeSerializer()
    game = GameStateSerializer()


class VoidCardSerializer(serializers.Serializer):
    id = StrictIntegerField()
    position = StrictIntegerField(help_text="1-based order out of the shoe.")
    code = serializers.CharField()
    reason = serializers.CharField(source="void_reason")
    coup = StrictIntegerField(source="coup_id", allow_null=True)


class VoidCardAnswerSerializer(serializers.Serializer):
    card = VoidCardSerializer()
    game = GameStateSerializer()


class CoupBankSerializer(serializers.ModelSerializer):
    banker = serializers.SerializerMethodField()
    # Plain strings: an enum here would collide in the docs with other apps' "status" enums.
    status = serializers.CharField(help_text="active | ended")
    end_reason = serializers.CharField(help_text="lost | withdrawn | session_closed, or empty")
    origin = serializers.CharField(help_text="first | continuation | succession | auction | direct")
    seat_number = StrictIntegerField(source="seat.seat_number", allow_null=True)

    class Meta:
        model = Bank
        fields = [
            "id",
            "session",
            "number",
            "banker",
            "seat_number",
            "amount",
            "initial_amount",
            "reserve_returned",
            "raised",
            "status",
            "end_reason",
            "origin",
            "coups_completed",
            "opened_at",
            "ended_at",
        ]

    @extend_schema_field(GamePatronRefSerializer)
    def get_banker(self, bank) -> dict:
        return {"id": bank.banker_id, "name": bank.banker.full_name}


# What CoupBankSerializer(bank).data is, built directly: a write's answer shows its bank, and
# a ModelSerializer works out its fields from the model on every instantiation (measured:
# about 0.7 ms of CPU per bank opened). The serializer stays for the docs and the list;
# tests/tables/api/test_docs.py pins the two equal. Datetimes go through DRF's own field.
_DATETIME = serializers.DateTimeField()


def bank_data(bank: Bank) -> dict:
    """CoupBankSerializer(bank).data as a plain dict (the same keys, order and values)."""
    seat_number = bank.seat.seat_number
    return {
        "id": bank.pk,
        "session": bank.session_id,
        "number": int(bank.number),
        "banker": {"id": bank.banker_id, "name": bank.banker.full_name},
        "seat_number": None if seat_number is None else int(seat_number),
        "amount": int(bank.amount),
        "initial_amount": int(bank.initial_amount),
        "reserve_returned": int(bank.reserve_returned),
        "raised": int(bank.raised),
        "status": str(bank.status),
        "end_reason": str(bank.end_reason),
        "origin": str(bank.origin),
        "coups_completed": int(bank.coups_completed),
        "opened_at": None if bank.opened_at is None else _DATETIME.to_representation(bank.opened_at),
        "ended_at": None if bank.ended_at is None else _DATETIME.to_representation(bank.ended_at),
    }


class BankAnswerSerializer(serializers.Serializer):
    bank = CoupBankSerializer()
    game = GameStateSerializer()


class MarkAnswerSerializer(serializers.Serializer):
    mark = GameMarkSerializer()
    game = GameStateSerializer()


class BarAnswerSerializer(serializers.Serializer):
    bar = GameBarSerializer()
    game = GameStateSerializer()


class FirstBankPassInput(StrictInput):
    patron = PatronField()


class FirstBankPassSerializer(serializers.Serializer):
    patron = GamePatronRefSerializer()
    seat_number = serializers.IntegerField()
    at = serializers.DateTimeField()
    next_seat = serializers.IntegerField(
        allow_null=True, help_text="The seat whose turn it is now; null: every seated player declined."
    )


class FirstBankPassAnswerSerializer(serializers.Serializer):
    passed = FirstBankPassSerializer()
    game = GameStateSerializer()


class SessionBalanceSerializer(serializers.Serializer):
    patron = GamePatronRefSerializer()
    balance = StrictIntegerField()


class SessionBalancesSerializer(serializers.Serializer):
    session = StrictIntegerField()
    balances = SessionBalanceSerializer(many=True)
    house_cagnotte = StrictIntegerField(help_text="The expected cagnotte: the sum of the levies.")
    total = StrictIntegerField(help_text="Every posting summed: 0, the books balance.")


# =========================================================================== coups as recorded


class CoupBetSerializer(serializers.ModelSerializer):
    patron = serializers.SerializerMethodField()
    kind = serializers.CharField(help_text="banco | avec_la_table | individual")
    carried = serializers.SerializerMethodField()

    class Meta:
        model = Bet
        fields = ["id", "patron", "kind", "amount", "order", "standing", "carried", "at"]

    @extend_schema_field(GamePatronRefSerializer)
    def get_patron(self, bet) -> dict:
        return {"id": bet.patron_id, "name": bet.patron.full_name}

    def get_carried(self, bet) -> bool:
        return bet.carried_from_id is not None


class CoupPostingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Posting
        fields = ["id", "role", "patron", "bet", "amount"]


class CoupSummarySerializer(serializers.ModelSerializer):
    banker = serializers.SerializerMethodField()
    punta = serializers.SerializerMethodField()
    bank_number = StrictIntegerField(source="bank.number")
    shoe_seq = StrictIntegerField(source="shoe.seq")
    winner = serializers.SerializerMethodField(
        help_text="punta | banker | tie; null until settled, as in the game state."
    )

    class Meta:
        model = Coup
        fields = [
            "id",
            "session",
            "number",
            "state",
            "bank",
            "bank_number",
            "banker",
            "shoe",
            "shoe_seq",
            "bank_amount",
            "covered",
            "banco_solo",
            "punta",
            "regola_punta",
            "regola_banker",
            "cards",
            "conforming",
            "winner",
            "cagnotte",
            "banker_net",
            "opened_at",
            "closed_at",
            "settled_at",
            "annulled_at",
            "annul_reason",
        ]

    @extend_schema_field(GamePatronRefSerializer)
    def get_banker(self, coup) -> dict:
        banker = coup.bank.banker
        return {"id": banker.pk, "name": banker.full_name}

    @extend_schema_field(GamePatronRefSerializer(allow_null=True))
    def get_punta(self, coup) -> dict | None:
        return None if coup.punta is None else {"id": coup.punta.pk, "name": coup.punta.full_name}

    def get_winner(self, coup) -> str | None:
        return coup.winner or None


class CoupDetailSerializer(CoupSummarySerializer):
    """A coup with both versions (as played, and as settled on), its violations, its bets
    and its double-entry postings."""

    as_played = GamePlayedSerializer(allow_null=True)
    violations = GameViolationSerializer(many=True)
    settled = GameSettledSerializer(allow_null=True)
    bets = CoupBetSerializer(many=True)
    postings = CoupPostingSerializer(many=True)

    class Meta(CoupSummarySerializer.Meta):
        fields = [
            *CoupSummarySerializer.Meta.fields,
            "punta_draws",
            "banker_draws",
            "next_cards",
            "reconstruction",
            "needs",
            "as_played",
            "violations",
            "settled",
            "bets",
            "postings",
        ]
