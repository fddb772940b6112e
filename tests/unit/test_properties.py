"""Properties of the pure parts, over generated inputs: the sensitivity guard, page cursors,
brief key addressing and reciprocal rank fusion. Fixed seed: a failure reproduces."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from chalicelib.auth import Caller
from chalicelib.cursors import decode_cursor, encode_cursor
from chalicelib.errors import BadRequestError
from chalicelib.ops.session import KEY, _shown, auto_key, stored_key
from chalicelib.search.ranking import RRF_K, centred_excerpt, rrf
from chalicelib.sensitivity import KINDS, high_shapes, is_sensitive

FAST = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
SEED = 20261130

# ---- the sensitivity guard -----------------------------------------------------------------

prose = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=120
)  # any text a user might write around a secret


def _luhn_complete(body: str) -> str:
    """`body` plus the check digit that makes it pass Luhn."""
    for check in "0123456789":
        digits, total = body + check, 0
        for i, ch in enumerate(reversed(digits)):
            d = int(ch)
            if i % 2:
                d = d * 2 - 9 if d > 4 else d * 2
            total += d
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


cards = st.builds(
    lambda first, rest: _luhn_complete(first + rest),
    st.sampled_from("3456"),
    st.text(alphabet="0123456789", min_size=14, max_size=14),
).filter(lambda c: len(set(c)) > 1)
aws_keys = st.builds(
    lambda p, body: p + body,
    st.sampled_from(["AKIA", "ASIA"]),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16),
)
secrets = st.one_of(cards, aws_keys)


@seed(SEED)
@FAST
@given(text=prose)
def test_reads_as_high_agrees_with_the_kinds_it_names(text):
    """The yes/no answer and the list of kinds never disagree, and every kind is a known one."""
    kinds = high_shapes(text)
    assert is_sensitive(text) == bool(kinds)
    assert set(kinds) <= set(KINDS) and len(kinds) == len(set(kinds))


@seed(SEED)
@FAST
@given(before=prose, secret=secrets, after=prose)
def test_a_secret_on_its_own_line_reads_as_high_whatever_surrounds_it(before, secret, after):
    """A card number or an AWS key pasted on a line of its own is caught in any message."""
    assert is_sensitive(f"{before}\n{secret}\n{after}")


@seed(SEED)
@FAST
@given(a=prose, b=prose)
def test_a_text_that_reads_as_high_still_does_beside_other_paragraphs(a, b):
    """Adding a paragraph before or after never hides a secret already there."""
    if is_sensitive(a):
        assert is_sensitive(f"{b}\n\n{a}")
        assert is_sensitive(f"{a}\n\n{b}")


# ---- page cursors --------------------------------------------------------------------------

idents = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)
moments = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)


@seed(SEED)
@FAST
@given(ts=moments, ids=st.lists(idents, min_size=1, max_size=3))
def test_a_cursor_decodes_to_what_it_encoded(ts, ids):
    when, back = decode_cursor(encode_cursor(ts, *ids), len(ids))
    assert (when, back) == (ts, ids)


@seed(SEED)
@FAST
@given(
    cursor=st.one_of(
        st.text(max_size=200),
        st.binary(max_size=200).map(lambda b: base64.urlsafe_b64encode(b).decode()),
    ),
    n_ids=st.integers(min_value=1, max_value=2),
)
def test_any_cursor_string_decodes_or_is_a_400(cursor, n_ids):
    """A cursor the client made up is refused as a 400, never another exception (a 500)."""
    try:
        when, ids = decode_cursor(cursor, n_ids)
    except BadRequestError:
        return
    assert isinstance(when, datetime) and len(ids) == n_ids
    assert all(i.encode() for i in ids)  # every id can be sent to the database as UTF-8


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_a_deeply_nested_cursor_is_a_400(depth):
    """Nesting deep enough to exhaust the JSON parser's recursion is still a made-up cursor."""
    cursor = base64.urlsafe_b64encode(b"[" * depth + b"]" * depth).decode()
    with pytest.raises(BadRequestError):
        decode_cursor(cursor, 1)


# ---- brief key addressing ------------------------------------------------------------------

# Small pools, so that two draws often share a user, a session or a key.
keys = st.one_of(st.just("k"), st.from_regex(KEY, fullmatch=True))
names = st.one_of(
    st.sampled_from(["a", "b", "a~b", "b~a", "a~", "~b"]),
    st.text(alphabet="ab~-_.", min_size=1, max_size=6).filter(lambda s: s != "-"),
)


def _bounded(scope: str, user: str) -> Caller:
    return Caller(org="o", role="writer", read_scope=scope, read_user_id=user)  # type: ignore[arg-type]


identities = st.tuples(st.sampled_from(["own_user", "own_session"]), names, names).map(
    lambda t: (t[0], t[1], t[2] if t[0] == "own_session" else "-")
)


@seed(SEED)
@settings(FAST, max_examples=400)
@given(people=st.lists(identities, min_size=2, max_size=8, unique=True), key=keys)
def test_two_bounded_callers_never_address_the_same_stored_brief(people, key):
    """A brief stored for one user (or one user's session) is never the brief another user or
    session reaches under the same key, whatever the names hold."""
    stored: dict[str, tuple[str, str, str]] = {}
    for scope, user, session in people:
        try:
            where = stored_key(_bounded(scope, user), key, user, session)[0]
        except BadRequestError:
            continue  # a name the addressing cannot keep apart is refused, not confused
        assert where not in stored, (stored[where], (scope, user, session), key)
        stored[where] = (scope, user, session)


@seed(SEED)
@FAST
@given(scope=st.sampled_from(["own_user", "own_session"]), user=names, session=names, key=keys)
def test_a_bounded_caller_sees_its_brief_under_the_key_it_sent(scope, user, session, key):
    caller = _bounded(scope, user)
    try:
        stored, shown = stored_key(caller, key, user, session)
    except BadRequestError:
        return
    assert shown == key
    assert _shown(caller, stored, user, session) == key


@seed(SEED)
@FAST
@given(project=idents, branch=idents, session=idents)
def test_an_automatic_key_is_always_a_valid_key(project, branch, session):
    try:
        key = auto_key(project, branch, session)
    except BadRequestError:
        assert not project and not branch and session in ("", "-")
        return
    assert KEY.match(key)


# ---- reciprocal rank fusion ----------------------------------------------------------------

ranked = st.lists(st.integers(min_value=0, max_value=30), unique=True, max_size=15)
weights = st.floats(min_value=0, max_value=3, allow_nan=False)


@seed(SEED)
@FAST
@given(legs=st.lists(st.tuples(ranked, weights), max_size=4))
def test_fusion_scores_each_item_by_the_formula_and_sorts_best_first(legs):
    fused = rrf(legs)
    expected: dict[int, float] = {}
    for items, weight in legs:
        if weight > 0:
            for rank, item in enumerate(items, start=1):
                expected[item] = expected.get(item, 0.0) + weight / (RRF_K + rank)
    assert dict(fused) == pytest.approx(expected)
    assert len(fused) == len(expected)  # each item once
    scores = [score for _, score in fused]
    assert scores == sorted(scores, reverse=True)


@seed(SEED)
@FAST
@given(items=ranked.filter(bool), weight=st.floats(min_value=0.01, max_value=3))
def test_one_list_fused_alone_keeps_its_order(items, weight):
    assert [item for item, _ in rrf([(items, weight)])] == items


@seed(SEED)
@FAST
@given(a=ranked, b=ranked)
def test_fusion_does_not_depend_on_the_order_of_equal_weight_legs_scores(a, b):
    left, right = dict(rrf([(a, 1.0), (b, 1.0)])), dict(rrf([(b, 1.0), (a, 1.0)]))
    assert left == pytest.approx(right)


@seed(SEED)
@FAST
@given(
    text=st.text(max_size=300),
    terms=st.lists(st.text(max_size=8), max_size=3),
    width=st.integers(min_value=1, max_value=120),
)
def test_an_excerpt_is_a_slice_of_the_text_no_wider_than_asked(text, terms, width):
    out = centred_excerpt(text, terms, width)
    assert len(out) == min(width, len(text))
    assert out in text
