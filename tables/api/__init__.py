"""The game's HTTP API: thin views over tables.services (ARCHITECTURE.md, layers)."""
