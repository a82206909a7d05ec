"""Exports of end-of-day reports: CSV, XLSX and PDF, streamed from a ReportDocument."""
