"""End-of-day records (RULES.md §8): the report Celery builds, the cagnotte register and
count (art. 70-71), the control register with its sign-offs (art. 72)."""
