"""The guard reads any text in time linear in its length: no text a tenant sends stalls the server.

The adversarial texts are the bench's (`bench/guard.py`): each detector's prefixes and a set
of pumps, in three shapes. `make bench` holds the worst at 100 KB to twice prose; here the bound
is ten times, far wider than this machine's noise: before the guard read in linear time, the
worst of them took thousands of times prose of their length.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.guard import adversarial_texts, guard_seconds, prose_of, slowest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "locomo26_sessions1-5.json"
TURNS = [turn["content"] for turn in json.loads(FIXTURE.read_text())]


def test_no_adversarial_text_takes_ten_times_prose_of_its_length():
    """GIVEN every generated adversarial text, screened at 5 KB
    WHEN the ten slowest are read again at 20 KB
    THEN none takes over ten times 20 KB of prose.
    """
    screened = slowest(5_000, prose_of(TURNS, 5_000), 10)
    texts = adversarial_texts(20_000, [name for _, name in screened])
    prose = guard_seconds(prose_of(TURNS, 20_000), 5)

    ratios = {name: guard_seconds(text, 3) / prose for name, text in texts.items()}

    assert max(ratios.values()) < 10, ratios


def test_four_times_the_worst_text_takes_under_six_times_as_long():
    """GIVEN the slowest adversarial text at 10 KB
    WHEN it is read at 10 KB and at 40 KB
    THEN four times the text takes under six times the time: linear, not quadratic (16x).
    """
    (_, worst), *_ = slowest(5_000, prose_of(TURNS, 5_000), 5)

    small = guard_seconds(adversarial_texts(10_000, [worst])[worst], 5)
    large = guard_seconds(adversarial_texts(40_000, [worst])[worst], 3)

    assert large < 6 * small, (worst, small, large)
