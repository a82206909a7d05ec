"""The auditor's desk (browser pages): gaming days, reports, downloads, verification; the
direzione's cagnotte counts and control register. Included at the root by config/urls.py."""

from django.urls import path

from . import views

urlpatterns = [
    path("desk/", views.desk, name="desk"),
    path("desk/verify/", views.trail_verify, name="desk-trail-verify"),
    path("desk/events/", views.events, name="desk-events"),
    path("desk/days/<int:pk>/", views.day, name="desk-day"),
    path("desk/days/<int:pk>/cagnotte/", views.cagnotte_count, name="desk-cagnotte-count"),
    path("desk/days/<int:pk>/register/", views.register_prepare, name="desk-register-prepare"),
    path("desk/days/<int:pk>/unclaimed/", views.unclaimed_deposit, name="desk-unclaimed-deposit"),
    path("desk/unclaimed/<int:pk>/return/", views.unclaimed_return, name="desk-unclaimed-return"),
    path("desk/counts/<int:pk>/correct/", views.cagnotte_count_correct, name="desk-cagnotte-count-correct"),
    path("desk/registers/<int:pk>/sign/", views.register_sign, name="desk-register-sign"),
    path("desk/registers/<int:pk>/correct/", views.register_correct, name="desk-register-correct"),
    path("desk/reports/<int:pk>/", views.report_fragment, name="desk-report"),
    path("desk/reports/<int:pk>/files/<slug:fmt>/", views.report_file, name="desk-report-file"),
    path("desk/reports/<int:pk>/verify/", views.report_verify_view, name="desk-report-verify"),
]
