"""The context block's budget: never above it, shares passed on, best items first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.context_budget import Item, Section, allocate, estimate_tokens, pack

SHARES = {"memories": 0.5, "knowledge": 0.25, "brief": 0.125, "transcript": 0.125}


def _sections(sizes: dict[str, list[int]]) -> list[Section]:
    return [
        Section(
            name, name.title(), SHARES[name], [Item("w" * n, {"i": i}) for i, n in enumerate(ns)]
        )
        for name, ns in sizes.items()
    ]


def test_the_estimate_is_one_token_per_four_bytes_rounded_up():
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde", "é" * 2)] == [0, 1, 1, 2, 1]


def test_a_section_with_nothing_leaves_its_share_to_the_others():
    """GIVEN no memories WHEN the knowledge needs more than its quarter
    THEN it gets the memories' half too."""
    grants = allocate(1000, SHARES, {"memories": 0, "knowledge": 900, "brief": 0, "transcript": 0})
    assert grants["knowledge"] == 900 and grants["memories"] == 0


def test_shares_hold_when_every_section_wants_more():
    need = {n: 10_000 for n in SHARES}
    grants = allocate(1000, SHARES, need)
    assert grants == {"memories": 500, "knowledge": 250, "brief": 125, "transcript": 125}


def test_a_small_section_takes_what_it_needs_and_the_rest_is_shared_again():
    grants = allocate(1000, SHARES, {"memories": 10_000, "knowledge": 10_000, "brief": 40,
                                     "transcript": 10_000})  # fmt: skip
    assert grants["brief"] == 40
    assert sum(grants.values()) <= 1000 and grants["memories"] > 500


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.fixed_dictionaries({n: st.lists(st.integers(1, 3000), max_size=12) for n in SHARES}),
    budget=st.integers(100, 32_000),
)
def test_the_packed_text_never_estimates_above_the_budget(sizes, budget):
    packed = pack(_sections(sizes), budget)
    assert packed.tokens <= budget
    assert packed.tokens == estimate_tokens(packed.text)
    wanted = sum(len(ns) for ns in sizes.values())
    shown = sum(len(s["items"]) for s in packed.sections)
    assert packed.truncated == (shown < wanted or any(
        item["text"].endswith(" …") for s in packed.sections for item in s["items"]
    ))  # fmt: skip


def test_everything_fits_a_large_budget_in_order_with_sources():
    sizes = {"memories": [10, 20], "knowledge": [30], "brief": [], "transcript": [5]}
    packed = pack(_sections(sizes), 2000)
    assert not packed.truncated
    assert [s["name"] for s in packed.sections] == ["memories", "knowledge", "transcript"]
    assert [i["i"] for i in packed.sections[0]["items"]] == [0, 1]
    assert packed.text.startswith("## Memories\n")


def test_a_first_item_too_large_is_cut_at_a_word_and_marked():
    brief = Section("brief", "Session brief", 1.0, [Item("word " * 1000, {"key": "b"})])
    packed = pack([brief], 100)
    assert packed.truncated and packed.tokens <= 100
    assert packed.sections[0]["items"][0]["text"].endswith("word …")
