"""``ledger.find``: a full key, or a unique prefix of four characters or more (issue 23 item 2).

The ``_run`` area's sample (dev-run-1) found the words of a miss unstated.
Each way to miss says which key it missed, and a prefix that names two
effects says so. Memory store, a frozen clock.
"""

from __future__ import annotations

import pytest

from actonce import Confirmed, Effect, Ledger, MemoryStore, UnknownEffect
from actonce.testing import FrozenClock


def _ledger(*keys: str) -> Ledger:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    for key in keys:
        ledger.run(Effect(key=key, kind="pin", payload={}, perform=lambda: None,
                          verify=lambda k=key: Confirmed(k)))  # fmt: skip
    return ledger


def test_a_full_key_or_a_unique_prefix_finds_the_effect() -> None:
    ledger = _ledger("abcd-one", "abce-two")
    assert ledger.find("abcd-one").key == "abcd-one"
    assert ledger.find("abcd").key == "abcd-one"
    assert ledger.find("abce-t").key == "abce-two"


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        ("abc", "no effect with key 'abc'"),  # too short for a prefix, and no key
        ("zzzz", "no effect with key 'zzzz'"),
        ("abcd-one-more", "no effect with key 'abcd-one-more'"),
        ("", "no effect with key ''"),
        ("a\x00b", "no effect with key 'a\\x00b'"),
        ("abc", "no effect with key 'abc'"),
        ("ab" * 300, "no effect with key " + repr("ab" * 300)[:80]),
    ],
)
def test_a_miss_names_the_key_it_missed(asked: str, message: str) -> None:
    ledger = _ledger("abcd-one", "abce-two")
    with pytest.raises(UnknownEffect) as err:
        ledger.find(asked)
    assert str(err.value) == message


def test_a_short_key_that_exists_is_found_whole() -> None:
    ledger = _ledger("abc", "abcd-one")
    assert ledger.find("abc").key == "abc"


def test_a_prefix_of_two_effects_is_ambiguous() -> None:
    ledger = _ledger("abcd-one", "abcd-two")
    with pytest.raises(UnknownEffect) as err:
        ledger.find("abcd")
    assert str(err.value) == "key prefix 'abcd' is ambiguous; give more characters"
    assert ledger.find("abcd-t").key == "abcd-two"
