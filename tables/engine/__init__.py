"""The rules engine: pure Python, no Django import, ever (ARCHITECTURE.md)."""
