"""The chunker: chunks of about 3,200 characters cut at paragraph, then sentence, then word
bounds, each overlapping the one before by about 200 characters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.services.chunking import CHUNK_CHARS, OVERLAP_CHARS, chunk_text


def _paragraph(i: int, size: int) -> str:
    words = f"Paragraph {i} says one plain thing. "
    return (words * (size // len(words) + 1))[:size].rstrip()


def test_a_short_text_is_one_chunk_and_an_empty_one_none():
    assert [c.text for c in chunk_text("One line.")] == ["One line."]
    assert chunk_text("") == []


def test_chunks_end_at_paragraph_bounds_when_paragraphs_fit():
    """GIVEN ten paragraphs of 1,000 characters
    THEN every chunk but the last ends where a paragraph ends."""
    text = "\n\n".join(_paragraph(i, 1000) for i in range(10))
    chunks = chunk_text(text)
    assert len(chunks) > 3
    for c in chunks[:-1]:
        assert text[: c.end].endswith("\n\n"), text[c.end - 20 : c.end]


def test_a_paragraph_longer_than_a_chunk_is_cut_at_a_sentence_bound():
    """GIVEN one paragraph of 8,000 characters of sentences
    THEN each chunk but the last ends after a sentence's full stop and a space."""
    text = _paragraph(0, 8000)
    for c in chunk_text(text)[:-1]:
        assert text[c.end - 2 : c.end] == ". ", repr(text[c.end - 5 : c.end])


def test_a_run_without_bounds_is_cut_hard_at_the_chunk_size():
    text = "x" * 7000
    chunks = chunk_text(text)
    assert [len(c.text) for c in chunks] == [CHUNK_CHARS, CHUNK_CHARS, 7000 - 2 * (3200 - 200)]
    assert chunks[1].start == CHUNK_CHARS - OVERLAP_CHARS


def test_each_chunk_overlaps_the_one_before_by_about_200_characters():
    text = "\n\n".join(_paragraph(i, 1300) for i in range(12))
    chunks = chunk_text(text)
    for before, after in zip(chunks, chunks[1:], strict=False):
        overlap = before.end - after.start
        assert OVERLAP_CHARS // 2 <= overlap <= OVERLAP_CHARS, overlap
        assert text[after.start : before.end] == before.text[-overlap:]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from("ab .!?\n"), min_size=0, max_size=2500),
        min_size=0,
        max_size=8,
    ).map("".join)
)
def test_chunks_cover_the_text_in_order_within_the_size_and_overlap(text):
    """For any text: chunks are its slices in order, none over 3,200 characters, the first at
    0 and the last at the end, each starting inside the one before it by at most 200."""
    chunks = chunk_text(text)
    if not text:
        assert chunks == []
        return
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for i, c in enumerate(chunks):
        assert c.ordinal == i and c.text == text[c.start : c.end]
        assert 0 < len(c.text) <= CHUNK_CHARS
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert 0 < before.end - after.start <= OVERLAP_CHARS
