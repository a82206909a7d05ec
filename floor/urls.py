"""floor.urls is included at the root path: the API routes carry their "api/" prefix here."""

from django.contrib.auth.views import LogoutView
from django.urls import include, path, re_path

from . import apis, views

api = [
    path("auth/token/", apis.TokenLoginApi.as_view(), name="auth-token"),
    path("auth/logout/", apis.TokenLogoutApi.as_view(), name="auth-logout"),
    path("me/", apis.MeApi.as_view(), name="me"),
    path("casinos/", apis.CasinoListApi.as_view(), name="casino-list"),
    path("tables/", apis.TableListApi.as_view(), name="table-list"),
    path("tables/<int:pk>/", apis.TableDetailApi.as_view(), name="table-detail"),
    path("gaming-days/", apis.GamingDayListApi.as_view(), name="gaming-day-list"),
    path("gaming-days/<int:pk>/close/", apis.GamingDayCloseApi.as_view(), name="gaming-day-close"),
    path("sessions/", apis.TableSessionListApi.as_view(), name="session-list"),
    path("sessions/<int:pk>/", apis.TableSessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<int:pk>/interrupt/", apis.TableSessionInterruptApi.as_view(), name="session-interrupt"),
    path("sessions/<int:pk>/resume/", apis.TableSessionResumeApi.as_view(), name="session-resume"),
    path("sessions/<int:pk>/close/", apis.TableSessionCloseApi.as_view(), name="session-close"),
    path("sessions/<int:pk>/minimum/", apis.MinimumChangeApi.as_view(), name="session-minimum"),
    path("sessions/<int:pk>/minimum-changes/", apis.MinimumChangeListApi.as_view(), name="session-minimum-changes"),
    path("sessions/<int:pk>/staff/", apis.StaffChangeApi.as_view(), name="session-staff"),
    path("sessions/<int:pk>/staff-changes/", apis.StaffChangeListApi.as_view(), name="session-staff-changes"),
    path("sessions/<int:pk>/seats/", apis.SeatListApi.as_view(), name="session-seats"),
    path("seats/<int:pk>/release/", apis.SeatReleaseApi.as_view(), name="seat-release"),
    path("patrons/", apis.PatronListApi.as_view(), name="patron-list"),
    path("patrons/<int:pk>/", apis.PatronDetailApi.as_view(), name="patron-detail"),
]

urlpatterns = [
    path("api/", include(api)),
    # floor.urls comes last in config/urls.py: whatever /api/ path nobody matched is a 404
    # in the API's error shape, not Django's HTML page.
    re_path(r"^api/", apis.ApiNotFound.as_view(), name="api-not-found"),
    path("accounts/login/", views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
]
