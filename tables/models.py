"""The game at one table, persisted: shoes and the cards out of them, banks, coups, bets,
the double-entry postings of each coup, the Regola marks and the faux-tirage bars.

Money is integer cents. Every rule lives in tables.engine and is applied by
tables/services (never in save() or signals); the invariants that a race could break are
also database constraints (one active shoe / bank / coup in play per session), so a race
the session lock somehow missed ends in an IntegrityError and a rollback.

Indexes cost every coup a write each. A foreign key whose column leads a composite unique
index (coup -> session, bet -> coup, card -> shoe...) and the columns naming the user who
acted, which nothing looks up by, have no index of their own (db_index=False)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from floor.models import Patron, Seat, StaffChange, TableSession

_user = settings.AUTH_USER_MODEL


class Shoe(models.Model):
    """One shoe (sabot) loaded at a session: RULES.md §1 and §6 (art. 58).

    `state` is the engine's Shoe.to_dict(): every card out of it, in order, the voided and
    the burned ones; the engine rebuilds it (and re-checks it) from there."""

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="shoes", db_index=False)
    seq = models.PositiveIntegerField(help_text="1, 2, ... in the session.")
    number = models.CharField(max_length=40, help_text="The physical shoe's number (RULES.md §6).")
    decks = models.PositiveSmallIntegerField()
    burn_cards = models.PositiveSmallIntegerField(default=0)
    stop_card_from_end = models.PositiveSmallIntegerField()
    state = models.JSONField()
    loaded_at = models.DateTimeField()
    loaded_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")
    stop_card_reached_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    finished_by = models.ForeignKey(_user, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["session_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="tables_shoe_session_seq_unique"),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(finished_at__isnull=True),
                name="tables_shoe_one_active_per_session",
            ),
        ]

    def __str__(self) -> str:
        return f"shoe {self.seq} ({self.number}) @ session {self.session_id}"


class ShoeCard(models.Model):
    """Every card out of a shoe, in order, voided ones too (RULES.md §1)."""

    class Use(models.TextChoices):
        DEALT = "dealt", "dealt in a coup"
        RECONSTRUCTION = "reconstruction", "drawn for a reconstruction"
        VOID = "void", "voided (seen face up in the sabot, or dropped)"

    shoe = models.ForeignKey(Shoe, on_delete=models.PROTECT, related_name="cards", db_index=False)
    position = models.PositiveIntegerField(help_text="1-based order out of the shoe.")
    code = models.CharField(max_length=3)
    use = models.CharField(max_length=16, choices=Use.choices)
    coup = models.ForeignKey(
        "Coup", on_delete=models.PROTECT, null=True, blank=True, related_name="shoe_cards"
    )
    side = models.CharField(max_length=8, blank=True, help_text="punta | banker, for a dealt card.")
    voided = models.BooleanField(default=False)
    void_reason = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+", db_index=False)

    class Meta:
        ordering = ["shoe_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["shoe", "position"], name="tables_shoecard_shoe_position_unique"),
            models.CheckConstraint(condition=Q(position__gte=1), name="tables_shoecard_position_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.code} #{self.position} of shoe {self.shoe_id}"


class Bank(models.Model):
    """One banker's tenure (a mano): RULES.md §2.1, §4, §5.

    `amount` is the current bank B. Invariant (checked by the tests):
    amount + reserve_returned == initial_amount + raised + the banker's postings for this bank."""

    class Status(models.TextChoices):
        ACTIVE = "active", "active"
        ENDED = "ended", "ended"

    class EndReason(models.TextChoices):
        LOST = "lost", "lost a coup"
        WITHDRAWN = "withdrawn", "withdrawn"
        SESSION_CLOSED = "session_closed", "session closed"

    class Origin(models.TextChoices):
        FIRST = "first", "first bank of the session"
        CONTINUATION = "continuation", "continuation"
        SUCCESSION = "succession", "succession"
        AUCTION = "auction", "auction"
        DIRECT = "direct", "entered directly by the Capo Partita"

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="banks", db_index=False)
    number = models.PositiveIntegerField(help_text="1, 2, ... in the session (art. 71 register).")
    banker = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="banks")
    seat = models.ForeignKey(Seat, on_delete=models.PROTECT, related_name="banks")
    amount = models.PositiveBigIntegerField(help_text="Current bank B, cents.")
    initial_amount = models.PositiveBigIntegerField()
    reserve_returned = models.PositiveBigIntegerField(
        default=0, help_text="domestic: the uncovered reserve returned to the banker after wins, cents."
    )
    raised = models.PositiveBigIntegerField(
        default=0, help_text="domestic: what the banker put up beyond the required continuation, cents."
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    end_reason = models.CharField(max_length=16, choices=EndReason.choices, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    coups_completed = models.PositiveIntegerField(default=0)
    turn_seat = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="The seat whose turn in the rotation this bank holds, the table's rotation pointer "
        "(RULES.md §5, tables.engine.succession): the banker's seat; for a standing banker or a "
        "domestic distant successor, the turn he did not take.",
    )
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.ForeignKey(_user, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["session_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="tables_bank_session_number_unique"),
            models.UniqueConstraint(
                fields=["session"], condition=Q(status="active"), name="tables_bank_one_active_per_session"
            ),
            models.CheckConstraint(
                condition=Q(status="active", end_reason="") | (Q(status="ended") & ~Q(end_reason="")),
                name="tables_bank_end_reason_iff_ended",
            ),
        ]

    def __str__(self) -> str:
        return f"bank {self.number} @ session {self.session_id}"


# A coup no longer in play: settled, or annulled (no other may open meanwhile).
COUP_FINISHED = ("settled", "annulled")


class Coup(models.Model):
    """One coup (RULES.md §2): its bets, cards, declarations, the coup as played, its
    conformance, the reconstruction (§3.3) and the settlement (§4). Both versions are kept."""

    class State(models.TextChoices):
        BETTING = "betting", "betting"
        CLOSED = "closed", "rien ne va plus"
        DEALING = "dealing", "dealing"
        PENDING = "pending", "reconstruction pending"
        SETTLED = "settled", "settled"
        ANNULLED = "annulled", "annulled"

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="coups", db_index=False)
    bank = models.ForeignKey(Bank, on_delete=models.PROTECT, related_name="coups")
    shoe = models.ForeignKey(Shoe, on_delete=models.PROTECT, related_name="coups")
    number = models.PositiveIntegerField(help_text="1, 2, ... in the session.")
    state = models.CharField(max_length=8, choices=State.choices, default=State.BETTING)
    bank_amount = models.PositiveBigIntegerField(help_text="B for this coup, cents.")
    covered = models.PositiveBigIntegerField(default=0, help_text="S, the bets covered, cents.")
    banco_solo = models.BooleanField(default=False)
    punta = models.ForeignKey(Patron, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    punta_seat = models.ForeignKey(Seat, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    regola_punta = models.BooleanField(default=False)
    regola_banker = models.BooleanField(default=False)
    cards = models.JSONField(default=list, help_text="Card codes of the coup as played, in shoe order.")
    punta_draws = models.BooleanField(null=True, blank=True)
    banker_draws = models.BooleanField(null=True, blank=True)
    next_cards = models.JSONField(default=list, help_text="Shoe cards drawn for the reconstruction.")
    reconstruction = models.JSONField(
        default=dict, help_text='Decisions entered for the reconstruction: {"punta_draws", "banker_draws"}.'
    )
    needs = models.JSONField(null=True, blank=True, help_text="What a pending reconstruction waits for.")
    as_played = models.JSONField(null=True, blank=True)
    conforming = models.BooleanField(null=True, blank=True)
    violations = models.JSONField(default=list)
    settled = models.JSONField(null=True, blank=True, help_text="The version settled on (engine).")
    settlement = models.JSONField(
        null=True, blank=True, help_text="The engine's settlement (figures, postings)."
    )
    winner = models.CharField(max_length=8, blank=True)
    cagnotte = models.PositiveBigIntegerField(default=0)
    banker_net = models.BigIntegerField(default=0)
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+", db_index=False)
    closed_at = models.DateTimeField(null=True, blank=True, help_text="Rien ne va plus.")
    settled_at = models.DateTimeField(null=True, blank=True)
    settled_by = models.ForeignKey(_user, on_delete=models.PROTECT, null=True, blank=True, related_name="+", db_index=False)
    annulled_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Annulled: before its cards by the Capo Partita, or once they have started (before its "
        "settlement) by the Commissario or the Direzione Giochi.",
    )
    # No index: every coup would maintain it, for a column almost always null that nothing looks up by.
    annulled_by = models.ForeignKey(
        _user, on_delete=models.PROTECT, null=True, blank=True, related_name="+", db_index=False
    )
    annul_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["session_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="tables_coup_session_number_unique"),
            models.UniqueConstraint(
                fields=["session"],
                condition=~Q(state__in=COUP_FINISHED),
                name="tables_coup_one_in_play_per_session",
            ),
            # An annulled coup was never settled: no winner, no settlement (tables.services.coup_annul).
            # Its cards, if the Commissario or the Direzione annulled it once they had started, stay as
            # entered: they left the shoe (RULES.md §1), and the record says which.
            models.CheckConstraint(
                condition=~Q(state="annulled")
                | (Q(winner="") & Q(settled_at__isnull=True) & Q(annulled_at__isnull=False)),
                name="tables_coup_annulled_unsettled",
            ),
            # RULES.md §2.2: the total S never exceeds B.
            models.CheckConstraint(
                condition=Q(covered__lte=F("bank_amount")), name="tables_coup_covered_within_bank"
            ),
            models.CheckConstraint(condition=Q(bank_amount__gt=0), name="tables_coup_bank_positive"),
        ]

    def __str__(self) -> str:
        return f"coup {self.number} @ session {self.session_id}"


class BancoCall(models.Model):
    """A call of banco solo (RULES.md §2.2). Several may call; the winner is decided by the
    engine (first in turn from the banker, banco suivi priority) and becomes a Bet."""

    coup = models.ForeignKey(Coup, on_delete=models.PROTECT, related_name="banco_calls", db_index=False)
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    seat = models.ForeignKey(Seat, on_delete=models.PROTECT, related_name="+")
    order = models.PositiveIntegerField()
    won = models.BooleanField(null=True, blank=True, help_text="Decided at rien ne va plus.")
    carried = models.BooleanField(default=False, help_text="Carried from a tie (classic, chemmy-fi).")
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+", db_index=False)

    class Meta:
        ordering = ["coup_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["coup", "patron"], name="tables_bancocall_one_per_patron"),
        ]

    def __str__(self) -> str:
        return f"banco by {self.patron_id} on coup {self.coup_id}"


class Bet(models.Model):
    class Kind(models.TextChoices):
        BANCO = "banco", "banco solo"
        AVEC_LA_TABLE = "avec_la_table", "banco avec la table"
        INDIVIDUAL = "individual", "individual"

    coup = models.ForeignKey(Coup, on_delete=models.PROTECT, related_name="bets", db_index=False)
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    seat = models.ForeignKey(Seat, on_delete=models.PROTECT, related_name="+")
    standing = models.BooleanField(default=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    amount = models.PositiveBigIntegerField()
    order = models.PositiveIntegerField(help_text="Betting order in the coup.")
    carried_from = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="A bet that stayed on the table after a tie (classic, chemmy-fi).",
    )
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+", db_index=False)

    class Meta:
        ordering = ["coup_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["coup", "patron"], name="tables_bet_one_per_patron"),
            models.UniqueConstraint(fields=["coup", "order"], name="tables_bet_order_unique"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="tables_bet_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} by {self.patron_id} on coup {self.coup_id}"


class Posting(models.Model):
    """Double entry per coup (RULES.md §4): bettors, the banker, the house's cagnotte.

    The postings of one coup sum to zero (a constraint across rows cannot be a CHECK: the
    settlement service asserts it, and the tests reconcile every coup)."""

    class Role(models.TextChoices):
        BETTOR = "bettor", "bettor"
        BANKER = "banker", "banker"
        HOUSE = "house", "house (cagnotte)"

    coup = models.ForeignKey(Coup, on_delete=models.PROTECT, related_name="postings")
    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="postings", db_index=False)
    patron = models.ForeignKey(
        Patron, on_delete=models.PROTECT, null=True, blank=True, related_name="postings"
    )
    bet = models.ForeignKey(Bet, on_delete=models.PROTECT, null=True, blank=True, related_name="postings")
    role = models.CharField(max_length=8, choices=Role.choices)
    amount = models.BigIntegerField(help_text="Signed cents: + receives, - pays.")
    at = models.DateTimeField()

    class Meta:
        ordering = ["coup_id", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(role="house") & Q(patron__isnull=True))
                | (~Q(role="house") & Q(patron__isnull=False)),
                name="tables_posting_house_has_no_patron",
            ),
        ]
        indexes = [models.Index(fields=["session", "patron"], name="tables_posting_session_patron")]

    def __str__(self) -> str:
        return f"{self.role} {self.amount:+d} on coup {self.coup_id}"


class RegolaMark(models.Model):
    """The Capo Partita marks who plays alla Regola (RULES.md §3.2); the current mark per patron."""

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="regola_marks")
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    declared = models.BooleanField()
    set_at = models.DateTimeField()
    set_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["session_id", "patron_id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "patron"], name="tables_regola_mark_one_per_patron"),
        ]

    def __str__(self) -> str:
        return f"{self.patron_id} regola={self.declared} @ session {self.session_id}"


class FauxTirageBar(models.Model):
    """Barred from holding the cards for the rest of the session (RULES.md §4, art. 60)."""

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="faux_tirage_bars")
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    coup = models.ForeignKey(Coup, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    reason = models.CharField(max_length=200)
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["session_id", "at"]
        constraints = [
            models.UniqueConstraint(fields=["session", "patron"], name="tables_bar_one_per_patron"),
        ]

    def __str__(self) -> str:
        return f"{self.patron_id} barred @ session {self.session_id}"


class FirstBankPass(models.Model):
    """The player whose turn it is for the session's first bank declines it ("passe", RULES.md
    §5-§6): the turn goes to the next occupied seat in the profile's rotation (services.bank
    first_bank_turn). Once per player and session."""

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="first_bank_passes")
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    seat = models.ForeignKey(Seat, on_delete=models.PROTECT, related_name="+")
    seat_number = models.PositiveSmallIntegerField()
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["session_id", "at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "patron"], name="tables_first_bank_pass_once"),
        ]

    def __str__(self) -> str:
        return f"{self.patron_id} passed the first bank @ session {self.session_id}"


class Succession(models.Model):
    """Passing the bank when it ends (RULES.md §5): laid out at once, offer by offer, in the
    order of the right to the bank (tables.engine.succession), then answered one by one, so
    the record shows who had the right to the bank and why.

    offering -> taken (an offer accepted) | unclaimed (everybody passed: an auction may open)
    | lapsed (domestic: nobody opens a bank); unclaimed -> auction -> taken | lapsed (no bid).
    A live succession (offering, unclaimed, auction) is at most one per session."""

    class Reason(models.TextChoices):
        LOST = "lost", "the banker lost a coup"
        WITHDRAWN = "withdrawn", "the banker withdrew"

    class Kind(models.TextChoices):
        ROTATION = "rotation", "new bank, next in rotation"
        ALL_ALTEZZA = "all_altezza", "seguito all'altezza"
        EQUAL_BANK = "equal_bank", "an equal bank, nearest in turn"
        CONTINUATION = "continuation", "at least the mandatory continuation, then from the minimum"

    class Status(models.TextChoices):
        OFFERING = "offering", "offered in turn"
        UNCLAIMED = "unclaimed", "nobody took it; an auction may open"
        AUCTION = "auction", "at auction"
        TAKEN = "taken", "taken"
        LAPSED = "lapsed", "lapsed"

    LIVE = (Status.OFFERING, Status.UNCLAIMED, Status.AUCTION)

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="successions", db_index=False)
    number = models.PositiveIntegerField(help_text="1, 2, ... in the session.")
    previous_bank = models.OneToOneField(Bank, on_delete=models.PROTECT, related_name="succession")
    outgoing_banker = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=10, choices=Reason.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    profile = models.CharField(max_length=20, help_text="The table's profile when the bank ended.")
    amount = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The bank offered all'altezza (or its equal), cents."
    )
    floor = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="domestic: the mandatory continuation, cents."
    )
    minimum = models.PositiveIntegerField(help_text="The table minimum, cents: when the bank ended, then the one the succession ended under.")
    after_seat = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The rotation pointer: the offers start with the seat after it."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OFFERING)
    new_bank = models.OneToOneField(
        Bank, on_delete=models.PROTECT, null=True, blank=True, related_name="from_succession"
    )
    lapse_reason = models.CharField(max_length=32, blank=True)
    started_at = models.DateTimeField()
    started_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.ForeignKey(_user, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["session_id", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "number"], name="tables_succession_session_number_unique"
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=["offering", "unclaimed", "auction"]),
                name="tables_succession_one_live_per_session",
            ),
            models.CheckConstraint(
                condition=Q(status="taken", new_bank__isnull=False)
                | (~Q(status="taken") & Q(new_bank__isnull=True)),
                name="tables_succession_new_bank_iff_taken",
            ),
        ]

    def __str__(self) -> str:
        return f"succession {self.number} @ session {self.session_id}"


class SuccessionOffer(models.Model):
    """One player's right to the bank in a succession, with its terms and his answer."""

    class Round(models.TextChoices):
        NEW_BANK = "new_bank", "a new bank, in rotation"
        SEATED = "seated", "all'altezza, seated in order"
        STANDING = "standing", "all'altezza, standing: first to speak"
        CLAIM = "claim", "an equal bank: nearest claimant"
        HEIGHT = "height", "at least the mandatory continuation"
        MINIMUM = "minimum", "a new bank from the minimum"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        ACCEPTED = "accepted", "accepted"
        CLAIMED = "claimed", "claimed"
        PASSED = "passed", "passed"
        SKIPPED = "skipped", "skipped"

    succession = models.ForeignKey(Succession, on_delete=models.PROTECT, related_name="offers", db_index=False)
    order = models.PositiveSmallIntegerField(help_text="The order of the right to the bank, 1, 2, ...")
    round = models.CharField(max_length=10, choices=Round.choices)
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    seat = models.ForeignKey(Seat, on_delete=models.PROTECT, related_name="+")
    seat_number = models.PositiveSmallIntegerField(null=True, blank=True)
    standing = models.BooleanField(default=False)
    amount_min = models.PositiveBigIntegerField()
    amount_max = models.PositiveBigIntegerField(null=True, blank=True, help_text="None: no bound of its own (the table maximum binds it); answered, the maximum it was answered under (None: no maximum).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    reason = models.CharField(max_length=16, blank=True, help_text="Why skipped.")
    amount = models.PositiveBigIntegerField(null=True, blank=True, help_text="Accepted or claimed at, cents.")
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.ForeignKey(_user, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["succession_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["succession", "order"], name="tables_offer_order_unique"),
            models.UniqueConstraint(
                fields=["succession", "round", "patron"], name="tables_offer_one_per_patron_per_round"
            ),
            models.UniqueConstraint(
                fields=["succession"], condition=Q(status="accepted"), name="tables_offer_one_accepted"
            ),
        ]

    def __str__(self) -> str:
        return f"offer {self.order} ({self.status}) of succession {self.succession_id}"


class Auction(models.Model):
    """The asta (RULES.md §5): bids in a definite order (seq, under this row's lock), an
    explicit close, the winning bid becomes the new bank (origin auction)."""

    class Status(models.TextChoices):
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="auctions")
    succession = models.OneToOneField(Succession, on_delete=models.PROTECT, related_name="auction")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    bids_count = models.PositiveIntegerField(default=0, help_text="The last bid's seq.")
    winning_bid = models.OneToOneField(
        "Bid", on_delete=models.PROTECT, null=True, blank=True, related_name="won_auction"
    )
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(_user, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["session_id", "opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["session"], condition=Q(status="open"), name="tables_auction_one_open_per_session"
            ),
            models.CheckConstraint(
                condition=Q(status="open", closed_at__isnull=True, winning_bid__isnull=True)
                | Q(status="closed", closed_at__isnull=False),
                name="tables_auction_closed_iff_closed_at",
            ),
        ]

    def __str__(self) -> str:
        return f"auction of succession {self.succession_id}"


class Bid(models.Model):
    """One bid at an auction: patron, amount, seated or standing, time, and its seq."""

    auction = models.ForeignKey(Auction, on_delete=models.PROTECT, related_name="bids")
    seq = models.PositiveIntegerField(help_text="1, 2, ... the definite order of arrival.")
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="+")
    seat = models.ForeignKey(Seat, on_delete=models.PROTECT, related_name="+")
    seat_number = models.PositiveSmallIntegerField(null=True, blank=True)
    standing = models.BooleanField(default=False)
    amount = models.PositiveBigIntegerField()
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["auction_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["auction", "seq"], name="tables_bid_auction_seq_unique"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="tables_bid_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"bid {self.seq} of {self.amount} by {self.patron_id} @ auction {self.auction_id}"


# The largest single exchange the changeur's register takes, cents: a million euro, far above
# any table's exchange and within every column, so an absurd amount is a refusal, never a
# database error (the API and the pages check it too).
MAX_EXCHANGE_CENTS = 1_000_000_00


class CashExchange(models.Model):
    """A line of the changeur's register (RULES.md §6: one changeur per table, who exchanges
    cash for chips with the house's float of chips): cash for chips (`buy_in`) or chips for
    cash (`cash_out`), in cents, with the patron when named, who recorded it and when.

    The patron is required at or above settings.AML_IDENTIFY_CENTS, alone or with the linked
    exchanges (EU AMLD art. 11(d)): `linked_total` is what the linked exchanges came to with
    this one (the patron's in the session; for an unnamed one, the session's unnamed ones),
    and `identification_required` says the patron had to be named. A mistaken line is voided
    once, with its reason, never deleted nor edited (tables.services.cash)."""

    class Direction(models.TextChoices):
        BUY_IN = "buy_in", "cash for chips"
        CASH_OUT = "cash_out", "chips for cash"

    # No index of its own: the unique (session, number) index leads with it.
    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="cash_exchanges", db_index=False)
    number = models.PositiveIntegerField(help_text="1, 2, ... in the session (the register's line).")
    direction = models.CharField(max_length=8, choices=Direction.choices)
    amount = models.PositiveBigIntegerField(help_text="Cents.")
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    linked_total = models.PositiveBigIntegerField(
        help_text="Cents: the linked exchanges (not voided) with this one, both directions."
    )
    identification_required = models.BooleanField(
        default=False, help_text="The amount or the linked total reached AML_IDENTIFY_CENTS: the patron is named."
    )
    at = models.DateTimeField()
    by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+", db_index=False)
    voided_at = models.DateTimeField(null=True, blank=True)
    voided_by = models.ForeignKey(
        _user, on_delete=models.PROTECT, null=True, blank=True, related_name="+", db_index=False
    )
    void_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["session_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="tables_cash_session_number_unique"),
            models.CheckConstraint(
                condition=Q(amount__gt=0, amount__lte=MAX_EXCHANGE_CENTS), name="tables_cash_amount_in_range"
            ),
            models.CheckConstraint(condition=Q(direction__in=["buy_in", "cash_out"]), name="tables_cash_direction"),
            models.CheckConstraint(condition=Q(linked_total__gte=F("amount")), name="tables_cash_linked_with_it"),
            models.CheckConstraint(
                condition=Q(identification_required=False) | Q(patron__isnull=False),
                name="tables_cash_identified_when_required",
            ),
            # Voided: its time, who and why, all three or none.
            models.CheckConstraint(
                condition=Q(voided_at__isnull=True, voided_by__isnull=True, void_reason="")
                | (Q(voided_at__isnull=False, voided_by__isnull=False) & ~Q(void_reason="")),
                name="tables_cash_void_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.direction} {self.amount} #{self.number} @ session {self.session_id}"

    @property
    def voided(self) -> bool:
        return self.voided_at is not None


class CashCount(models.Model):
    """The count of a table session's cash drawer, once the session is closed (a casino counts
    each table's drawer at the end of its session, before the supervisor, and records the
    difference): the float the drawer started with (`float_issued`, from the float slip; 0 if
    none), the cash found in it (`counted`), who counted and when.

    `net` is the changeur's register's net cash taken (buy-ins less cash-outs, voided lines
    left out, as tables.selectors.cash_exchange_totals computes it) and `expected` the float
    plus that net, both computed by the service when the count is entered: the figures of
    record whatever a screen showed (on PostgreSQL a row trigger, tables migration 0018, refuses
    a row whose `net` is not the register's when it is written, behind the service too).
    `difference` = counted - expected (a surplus > 0, a shortfall < 0). A mistaken count is never
    edited: a correction is a new row with `corrects` set and its reason in `note`; the corrected
    row stays (tables.services.cash_count), as the cagnotte's counts (audit.models.CagnotteCount).

    The chips mirror the cash: every chip the changeur sold was paid in cash, every chip he
    bought back paid out, so his tray should hold the chips it started with (`chips_float`, from
    the float slip) less that same net. When the chips are counted, `chips_counted` is what the
    tray held and `chips_expected` = chips_float - net (computed by the service; below 0 only when
    the slip or the register is wrong, and then on record, not refused); `chips_difference` =
    chips_counted - chips_expected. The three are all null (chips not counted: a count recorded
    before they were, or a drawer whose tray was not counted) or all set."""

    # No index of its own: the partial unique index (one original count per session) leads with it.
    session = models.ForeignKey(
        TableSession, on_delete=models.PROTECT, related_name="cash_counts", db_index=False
    )
    # A handover count: the drawer counted when this staff change relieved the session's
    # changeur (null: the final count, once the session is closed). The service holds it to a
    # change of this session that changed the changeur. No index of its own: the partial unique
    # index (one original count per handover) leads with it, as the session's.
    staff_change = models.ForeignKey(
        StaffChange, on_delete=models.PROTECT, null=True, blank=True, related_name="cash_counts", db_index=False,
        help_text="The changeur's handover counted (null: the session's final count).",
    )  # fmt: skip
    float_issued = models.BigIntegerField(
        help_text="Cents: the cash float the drawer started with (0: none)."
    )
    net = models.BigIntegerField(
        help_text="Cents: the register's net cash taken (buy-ins - cash-outs, no voids)."
    )
    expected = models.BigIntegerField(help_text="Cents: float_issued + net.")
    counted = models.BigIntegerField(help_text="Cents: the cash found in the drawer.")
    chips_float = models.BigIntegerField(
        null=True, blank=True, help_text="Cents: the chips' value the tray started with (null: chips not counted)."
    )
    chips_expected = models.BigIntegerField(
        null=True, blank=True, help_text="Cents: chips_float - net (null: chips not counted)."
    )
    chips_counted = models.BigIntegerField(
        null=True, blank=True, help_text="Cents: the chips' value found in the tray (null: chips not counted)."
    )
    counted_by = models.ForeignKey(_user, on_delete=models.PROTECT, related_name="+", db_index=False)
    counted_at = models.DateTimeField()
    note = models.CharField(max_length=300, blank=True, help_text="A note; a correction's reason.")
    corrects = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="corrected_by"
    )

    class Meta:
        ordering = ["session_id", "counted_at", "id"]
        constraints = [
            # One original final count per session, and one original count per changeur's
            # handover; corrections chain from each, one each (the one-to-one `corrects`): so one
            # count in force per drawer counted, the one no other corrects.
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(corrects__isnull=True, staff_change__isnull=True),
                name="tables_cash_count_one_per_session",
            ),
            models.UniqueConstraint(
                fields=["staff_change"],
                condition=Q(corrects__isnull=True, staff_change__isnull=False),
                name="tables_cash_count_one_per_handover",
            ),
            models.CheckConstraint(
                condition=Q(float_issued__gte=0, float_issued__lte=MAX_EXCHANGE_CENTS),
                name="tables_cash_count_float_in_range",
            ),
            models.CheckConstraint(
                condition=Q(counted__gte=0, counted__lte=MAX_EXCHANGE_CENTS),
                name="tables_cash_count_counted_in_range",
            ),
            models.CheckConstraint(
                condition=Q(expected=F("float_issued") + F("net")), name="tables_cash_count_expected_adds_up"
            ),
            # The chips: counted (the three figures) or not (none of them).
            models.CheckConstraint(
                condition=Q(chips_float__isnull=True, chips_counted__isnull=True, chips_expected__isnull=True)
                | Q(chips_float__isnull=False, chips_counted__isnull=False, chips_expected__isnull=False),
                name="tables_cash_count_chips_all_or_none",
            ),
            models.CheckConstraint(
                condition=Q(chips_float__isnull=True) | Q(chips_float__gte=0, chips_float__lte=MAX_EXCHANGE_CENTS),
                name="tables_cash_count_chips_float_in_range",
            ),
            models.CheckConstraint(
                condition=Q(chips_counted__isnull=True)
                | Q(chips_counted__gte=0, chips_counted__lte=MAX_EXCHANGE_CENTS),
                name="tables_cash_count_chips_counted_in_range",
            ),
            models.CheckConstraint(
                condition=Q(chips_expected__isnull=True) | Q(chips_expected=F("chips_float") - F("net")),
                name="tables_cash_count_chips_expected_adds_up",
            ),
            # A correction says why.
            models.CheckConstraint(
                condition=Q(corrects__isnull=True) | ~Q(note=""),
                name="tables_cash_count_correction_has_reason",
            ),
            models.CheckConstraint(condition=~Q(corrects=F("pk")), name="tables_cash_count_not_itself"),
        ]

    def __str__(self) -> str:
        return f"drawer of session {self.session_id}: {self.counted} (expected {self.expected})"

    @property
    def difference(self) -> int:
        return self.counted - self.expected

    @property
    def chips_difference(self) -> int | None:
        """chips_counted - chips_expected (a surplus > 0, a shortfall < 0); None: not counted."""
        if self.chips_counted is None or self.chips_expected is None:
            return None
        return self.chips_counted - self.chips_expected
