from django.urls import path

from . import api_reports as reports
from .apis import AuditEventListApi, AuditStreamListApi, AuditVerifyApi

app_name = "audit"

urlpatterns = [
    path("audit/events/", AuditEventListApi.as_view(), name="events"),
    path("audit/streams/", AuditStreamListApi.as_view(), name="streams"),
    path("audit/verify/", AuditVerifyApi.as_view(), name="verify"),
    # End of day (RULES.md §8): reports, cagnotte counts and register, control register.
    path("reports/", reports.ReportListApi.as_view(), name="report-list"),
    path("reports/<int:pk>/", reports.ReportDetailApi.as_view(), name="report-detail"),
    path("reports/<int:pk>/files/<slug:fmt>/", reports.ReportFileDownloadApi.as_view(), name="report-file"),
    path("reports/<int:pk>/verify/", reports.ReportVerifyApi.as_view(), name="report-verify"),
    path("gaming-days/<int:pk>/report/", reports.GamingDayReportApi.as_view(), name="gaming-day-report"),
    path("gaming-days/<int:pk>/cagnotte-counts/", reports.CagnotteCountListApi.as_view(), name="cagnotte-counts"),
    path("gaming-days/<int:pk>/cagnotte-register/", reports.CagnotteRegisterApi.as_view(), name="cagnotte-register"),
    path("gaming-days/<int:pk>/control-register/", reports.ControlRegisterApi.as_view(), name="control-register"),
    # Unclaimed stakes and winnings, deposited by the Commissario (RULES.md §6).
    path("unclaimed-deposits/", reports.UnclaimedDepositListApi.as_view(), name="unclaimed-deposits"),
    path(
        "gaming-days/<int:pk>/unclaimed-deposits/",
        reports.UnclaimedDepositCreateApi.as_view(),
        name="unclaimed-deposit-create",
    ),
    path(
        "unclaimed-deposits/<int:pk>/return/", reports.UnclaimedDepositReturnApi.as_view(), name="unclaimed-deposit-return"
    ),
    path("cagnotte-counts/<int:pk>/correct/", reports.CagnotteCountCorrectApi.as_view(), name="cagnotte-count-correct"),
    path("control-registers/<int:pk>/sign/", reports.ControlRegisterSignApi.as_view(), name="control-register-sign"),
    path(
        "control-registers/<int:pk>/correct/",
        reports.ControlRegisterCorrectApi.as_view(),
        name="control-register-correct",
    ),
]
