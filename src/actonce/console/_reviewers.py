"""Who may sign in to the console: reviewers, their password hashes, one-time tokens.

A reviewer's password is never stored, only its scrypt hash with a random
salt (``scrypt$n$r$p$salt$hash``, one ``name:hash`` line per reviewer), in
a file beside the ledger (``actonce.db.reviewers``), in the file named by
``--reviewers`` / ``$ACTONCE_CONSOLE_REVIEWERS_FILE``, or as lines in
``$ACTONCE_CONSOLE_REVIEWERS``. ``actonce console add-reviewer NAME``
writes one. A one-time token (``--token-for NAME``) is a random secret
printed once at start-up, held only as its SHA-256 in memory, good for one
sign-in within its lifetime.

Wrong answers are throttled per client and name: after :data:`MAX_FAILURES`
within :data:`FAILURE_WINDOW` seconds that name is refused *from that
client* (its address) until the window passes, whatever the password; the
reviewer can still sign in from anywhere else, so a stranger's guesses
cannot lock a reviewer out. An unknown name costs the same scrypt work as a
known one, so timing does not tell which names exist.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from actonce import UsageError

__all__ = [
    "FAILURE_WINDOW",
    "MAX_FAILURES",
    "NAME",
    "Reviewers",
    "check_name",
    "hash_password",
    "password_matches",
    "write_reviewer",
]

#: scrypt cost: 16 MiB and about 50 ms per check on one core.
SCRYPT_N, SCRYPT_R, SCRYPT_P, DKLEN = 2**14, 8, 1, 32
#: A reviewer's name: what every decision records as its identity.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_PASSWORD = 10
MAX_FAILURES = 5
FAILURE_WINDOW = 900.0
TOKEN_SECONDS = 900.0


def check_name(name: str) -> str:
    """``name`` if it is a valid reviewer name, else :class:`UsageError`."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise UsageError(
            "a reviewer's name is 1-64 characters of letters, digits and . _ @ - "
            f"(starting with a letter or digit), not {name!r}"
        )
    return name


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=DKLEN, maxmem=64 * 1024 * 1024
    )


def hash_password(password: str) -> str:
    """The storable hash of ``password`` (scrypt, a random 16-byte salt)."""
    if len(password) < MIN_PASSWORD:
        raise UsageError(f"a reviewer's password needs at least {MIN_PASSWORD} characters")
    salt = os.urandom(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    """Whether ``password`` hashes to ``stored`` (constant-time comparison)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        got = _scrypt(password, bytes.fromhex(salt), int(n), int(r), int(p))
        return hmac.compare_digest(got, bytes.fromhex(digest))
    except (ValueError, MemoryError):
        return False


# Checked when a name is unknown, so that a miss costs what a hit costs.
_DUMMY = f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${'00' * 16}${'00' * DKLEN}"


def parse(text: str, source: str) -> dict[str, str]:
    """``name:hash`` lines (``#`` comments and blank lines allowed)."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, stored = line.partition(":")
        if not sep or not NAME.fullmatch(name) or not stored.startswith("scrypt$"):
            raise UsageError(f"{source}, line {number}: expected 'name:scrypt$...'")
        out[name] = stored
    return out


def write_reviewer(path: Path, name: str, password: str) -> None:
    """Add or replace ``name`` in the reviewers file at ``path`` (mode 0600, atomic)."""
    check_name(name)
    entries = parse(path.read_text(encoding="utf-8"), str(path)) if path.exists() else {}
    entries[name] = hash_password(password)
    text = "".join(f"{n}:{h}\n" for n, h in sorted(entries.items()))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("# actonce console reviewers: name:scrypt hash (never a password)\n")
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class _Token:
    name: str
    digest: bytes
    expires: float


class Reviewers:
    """The reviewers who may sign in, and the checks of their answers.

    Args:
        hashes: name -> stored scrypt hash.
        clock: monotonic seconds (a test may pass its own).
    """

    def __init__(
        self, hashes: dict[str, str] | None = None, *, clock: Callable[[], float] | None = None
    ) -> None:
        self._hashes = dict(hashes or {})
        self._tokens: list[_Token] = []
        self._failures: dict[tuple[str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._now = clock or time.monotonic

    @classmethod
    def load(cls, path: Path | None = None, text: str | None = None) -> Reviewers:
        """Reviewers from a file, or from ``name:hash`` lines."""
        hashes: dict[str, str] = {}
        if path is not None:
            try:
                hashes.update(parse(path.read_text(encoding="utf-8"), str(path)))
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise UsageError(f"cannot read the reviewers file {path}: {exc.strerror}") from None
        if text:
            hashes.update(parse(text.replace(",", "\n"), "$ACTONCE_CONSOLE_REVIEWERS"))
        return cls(hashes)

    @property
    def names(self) -> list[str]:
        """Reviewers with a password, sorted."""
        return sorted(self._hashes)

    def __bool__(self) -> bool:
        return bool(self._hashes) or bool(self._tokens)

    def one_time_token(self, name: str, seconds: float = TOKEN_SECONDS) -> str:
        """A fresh one-time sign-in secret for ``name`` (returned once, kept as a hash)."""
        check_name(name)
        token = secrets.token_urlsafe(18)
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            self._tokens.append(_Token(name, digest, self._now() + seconds))
        return token

    def check(self, name: str, secret: str, client: str = "") -> bool:
        """Whether ``secret`` signs ``name`` in (a password, or an unused token).

        Every answer counts, per ``client`` (its address) and name: a name
        throttled for that client is refused from it without a check.
        """
        now = self._now()
        slot = (client, name)
        with self._lock:
            if len(self._failures) > 100_000:  # a flood of names: forget the oldest windows
                self._failures = {k: v for k, v in self._failures.items()
                                  if now - v[0] < FAILURE_WINDOW}  # fmt: skip
            start, failures = self._failures.get(slot, (now, 0))
            if now - start >= FAILURE_WINDOW:
                start, failures = now, 0
            if failures >= MAX_FAILURES:
                return False
        ok = password_matches(secret, self._hashes.get(name, _DUMMY)) and name in self._hashes
        if not ok:
            ok = self._use_token(name, secret, now)
        with self._lock:
            if ok:
                self._failures.pop(slot, None)
            else:
                self._failures[slot] = (start, failures + 1)
        return ok

    def _use_token(self, name: str, secret: str, now: float) -> bool:
        digest = hashlib.sha256(secret.encode("utf-8", "replace")).digest()
        with self._lock:
            self._tokens = [t for t in self._tokens if t.expires > now]
            for token in self._tokens:
                if token.name == name and hmac.compare_digest(token.digest, digest):
                    self._tokens.remove(token)  # one use
                    return True
        return False
