"""Inputs that once made one request hold the interpreter for seconds to minutes: a text the
guard read again and again, and an admin's blacklist pattern that backtracks. Python's `re`
holds the interpreter lock, so such a request stalled every tenant; each is now answered in
about the time of a plain one.

Each bound below is a ratio to a plain request of the same size in the same test, far wider
than this machine's noise: the inputs took 10 to 1,000 times longer before.
"""

from __future__ import annotations

import time

import pytest

from tests.integration.test_memory_support import NS, Mem, memory_rows

SIZE = 24_000


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def _seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


@pytest.mark.parametrize(
    "adversarial",
    [
        pytest.param("pin" + " " * SIZE, id="pin then spaces"),
        pytest.param("password=" + "\t" * SIZE, id="password= then tabs"),
        pytest.param("xoxb-" * (SIZE // 5), id="xoxb- repeated"),
        pytest.param("password is" + " " * SIZE, id="password is then spaces"),
    ],
)
def test_a_memory_write_of_adversarial_text_takes_the_time_of_a_plain_one(m, adversarial):
    """GIVEN a 24 KB value built to make the guard read its text again and again
    WHEN it is written with memory.set, beside a plain value of the same length
    THEN it is stored like any value, in under five times the plain write's time (half a
    second of slack for the machine): before, it took 13 seconds against 1.
    """
    plain = ("The user likes tea with lemon. " * (SIZE // 31 + 1))[: len(adversarial)]
    m.set("user/warmup", plain)  # the first write of a test pays for its connections

    plain_s = _seconds(lambda: m.set("user/plain", plain))
    adversarial_s = _seconds(lambda: m.set("user/adversarial", adversarial))

    assert m.get("user/adversarial")["memory"]["value"] == adversarial
    assert adversarial_s < 5 * plain_s + 0.5, (adversarial_s, plain_s)


def test_a_nested_blacklist_pattern_is_matched_in_linear_time(m, pool):
    """GIVEN an admin's blacklist pattern that backtracks without end in Python's re: (a+)+b
    WHEN a 30-character value of "a"s is written, then one that ends in b
    THEN the first is created at once (before, over 60 seconds) and the second blacklisted.
    """
    m.blacklist("(a+)+b")

    created_s = _seconds(lambda: m.set("user/as", "a" * 30 + "!"))
    blocked = m.set("user/ab", "a" * 30 + "b")

    assert created_s < 2.0
    assert blocked["conflict_verdict"] == "blacklisted"
    assert {row["key"] for row in memory_rows(pool, m.org)} == {"user/as"}


def test_a_blacklist_pattern_with_a_lookaround_matches_as_text(m):
    """GIVEN a pattern the linear-time engine does not run (a lookbehind)
    WHEN a value holding it as plain text is written, and one the regex alone would match
    THEN the first is blacklisted and the second created: it is text, never a backtracking regex.
    """
    m.blacklist("(?<=code)name")

    assert m.set("user/x", "the (?<=code)name token")["conflict_verdict"] == "blacklisted"
    assert m.set("user/y", "the codename project")["conflict_verdict"] == "created"


def test_a_blacklist_pattern_over_500_characters_is_refused(m):
    """GIVEN a pattern of 501 characters WHEN an admin adds it THEN 422, nothing listed."""
    status, data = m.api.post(
        "memory.blacklist", token=m.tokens["admin"], namespace=NS, pattern="a" * 501
    )

    assert status == 422, data
    assert m.set("user/long", "a" * 600)["conflict_verdict"] == "created"
