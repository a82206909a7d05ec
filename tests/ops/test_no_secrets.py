"""No secret is committed: no private key, no cloud access key or token, no Django secret
key other than the development default that production refuses to run with."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHES = "-" * 5

PATTERNS = {
    "private key": re.compile(
        DASHES + r"BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY" + DASHES
    ),
    "AWS access key id": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "AWS secret access key": re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+]{40}"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36}\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    # A literal value given to DJANGO_SECRET_KEY or SECRET_KEY (not read from the environment).
    "Django secret key": re.compile(
        r"""\b(?:DJANGO_)?SECRET_KEY\b["']?\s*[:=]\s*["']?(?P<value>[^\s"',)]{8,})"""
    ),
}
# Values that are not secrets: the development default (production refuses to start with
# it: DJANGO_SECRET_KEY is required there), the Docker build's throwaway, references.
ALLOWED_SECRET_VALUES = {
    "dev-only-insecure-key-do-not-use-in-production",
    "build-only-collectstatic-signs-nothing-and-this-key-is-not-kept",
}
NOT_A_LITERAL = re.compile(
    r"^(?:\$|env_str\(|os\.environ|secrets\.|settings\.|\{|<|\.\.\.|change-?me|your-|placeholder)",
    re.IGNORECASE,
)


def tracked_files() -> list[Path]:
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_secret_in_the_tracked_files():
    found = []
    for path in tracked_files():
        if path == Path(__file__) or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary (compiled translations, images)
        for kind, pattern in PATTERNS.items():
            for match in pattern.finditer(text):
                value = match.groupdict().get("value")
                if value is not None and (value in ALLOWED_SECRET_VALUES or NOT_A_LITERAL.match(value)):
                    continue
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {kind}")
    assert not found, "secrets in the repository:\n" + "\n".join(found)


def test_no_real_env_file_is_tracked():
    env_files = [p.relative_to(ROOT) for p in tracked_files() if p.name == ".env" or p.suffix == ".env"]
    assert not env_files, env_files


def test_the_scanner_finds_what_it_looks_for():
    samples = {
        "private key": DASHES + "BEGIN RSA PRIVATE KEY" + DASHES,
        "AWS access key id": "key = AKIA" + "ABCDEFGHIJKLMNOP",
        "Django secret key": "DJANGO_SECRET_KEY=" + "q7#x9!realLookingValue42",
    }
    for kind, sample in samples.items():
        assert PATTERNS[kind].search(sample), kind
    value = PATTERNS["Django secret key"].search('SECRET_KEY = env_str("DJANGO_SECRET_KEY", required=True)')
    assert value is None or NOT_A_LITERAL.match(value.group("value"))
