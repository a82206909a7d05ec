"""factory_boy factories for the whole suite.

They write rows directly (no services, no audit events): use them to arrange a test's
world quickly. A test about a use case calls the service itself."""

from __future__ import annotations

import datetime as dt

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from floor.models import Casino, GamingDay, Patron, Seat, Site, Table, TableSession

PASSWORD = "chemin-test-password"


class UserFactory(factory.django.DjangoModelFactory):
    """`UserFactory(roles=["commissario"])`; the password is PASSWORD."""

    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    first_name = factory.Faker("first_name", locale="it_IT")
    last_name = factory.Faker("last_name", locale="it_IT")
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if not create or not extracted:
            return
        # get_or_create: transactional tests flush the groups the migration created.
        self.groups.add(*(Group.objects.get_or_create(name=str(role))[0] for role in extracted))


class CasinoFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Casino
        django_get_or_create = ("code",)

    name = factory.Sequence(lambda n: f"Casinò {n}")
    code = factory.Sequence(lambda n: f"casino-{n}")


class SiteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Site

    casino = factory.SubFactory(CasinoFactory)
    name = factory.Sequence(lambda n: f"Sala {n}")


class TableFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Table

    casino = factory.SubFactory(CasinoFactory)
    site = factory.SubFactory(SiteFactory, casino=factory.SelfAttribute("..casino"))
    number = factory.Sequence(lambda n: n + 1)
    seats = 8
    profile = "venezia"


def open_day_for(casino: Casino) -> GamingDay:
    """The casino's open gaming day, opened today if there is none (one open day per casino)."""
    day = GamingDay.objects.filter(casino=casino, closed_at__isnull=True).first()
    if day is not None:
        return day
    return GamingDayFactory(casino=casino)


class GamingDayFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GamingDay

    casino = factory.SubFactory(CasinoFactory)
    date = factory.LazyFunction(timezone.localdate)
    opened_at = factory.LazyFunction(timezone.now)
    opened_by = factory.SubFactory(UserFactory, roles=["commissario"])


class TableSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TableSession

    table = factory.SubFactory(TableFactory)
    gaming_day = factory.LazyAttribute(lambda o: open_day_for(o.table.casino))
    number = factory.LazyAttribute(
        lambda o: TableSession.objects.filter(table=o.table, gaming_day=o.gaming_day).count() + 1
    )
    capo_partita = factory.SubFactory(UserFactory, roles=["capo_partita"])
    changeur = factory.SubFactory(UserFactory, roles=["changeur"])
    shoe_number = factory.Sequence(lambda n: f"S-{n:03d}")
    minimum = 100_00
    status = TableSession.Status.OPEN
    opened_at = factory.LazyFunction(timezone.now)
    opened_by = factory.SubFactory(UserFactory, roles=["commissario"])


class PatronFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Patron

    first_name = factory.Faker("first_name", locale="it_IT")
    last_name = factory.Faker("last_name", locale="it_IT")
    document_type = Patron.DocumentType.ID_CARD
    document_number = factory.Sequence(lambda n: f"CA{n:07d}")
    nationality = "IT"
    birth_date = dt.date(1970, 1, 1)
    created_at = factory.LazyFunction(timezone.now)
    created_by = factory.SubFactory(UserFactory, roles=["commissario"])


class SeatFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Seat

    session = factory.SubFactory(TableSessionFactory)
    patron = factory.SubFactory(PatronFactory)
    seat_number = factory.Sequence(lambda n: n % 8 + 1)
    standing = False
    taken_at = factory.LazyFunction(timezone.now)
    taken_by = factory.SubFactory(UserFactory, roles=["commissario"])
