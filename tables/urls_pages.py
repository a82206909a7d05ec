"""The browser pages of the game: the Capo Partita's tablet and the Commissario's floor
dashboard (which reads tables and floor both, so it lives here: floor never imports tables).
Included at the root by config/urls.py, before floor.urls."""

from django.urls import path

from . import views_dashboard, views_tablet

urlpatterns = [
    path("tablet/", views_tablet.tablet_home, name="tablet"),
    path("tablet/sessions/<int:pk>/", views_tablet.tablet_session, name="tablet-session"),
    path("tablet/sessions/<int:pk>/start-needs/", views_tablet.tablet_start_needs, name="tablet-start-needs"),
    path("tablet/sessions/<int:pk>/live/", views_tablet.tablet_live, name="tablet-live"),
    path("tablet/sessions/<int:pk>/<slug:action>/", views_tablet.tablet_action, name="tablet-action"),
    path("floor/", views_dashboard.dashboard, name="floor-dashboard"),
    path("floor/tables/<int:pk>/live/", views_dashboard.table_live, name="floor-table-live"),
    path("floor/tables/<int:pk>/<slug:action>/", views_dashboard.table_action, name="floor-table-action"),
    path("floor/casinos/<int:pk>/live/", views_dashboard.casino_live, name="floor-casino-live"),
    path("floor/casinos/<int:pk>/open-day/", views_dashboard.gaming_day_open, name="floor-day-open"),
    path("floor/days/<int:pk>/close/", views_dashboard.gaming_day_close, name="floor-day-close"),
]
