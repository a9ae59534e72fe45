"""Reference documents: chunking windows and the embedded BM25 index (contract §2.8)."""

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.project.project_kit import problems, write
from voicegate.engine.project.bm25 import Bm25Index, words
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.references import (
    ReferenceChunk,
    ReferenceIndex,
    chunk_file,
    chunk_spans,
)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab \n."), max_size=400),
    size=st.integers(1, 60),
    data=st.data(),
)
def test_windows_cover_the_text_within_size_and_overlap(
    text: str, size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    spans = chunk_spans(text, size, overlap)
    if not text:
        assert spans == []
        return
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    for start, end in spans:
        assert 0 < end - start <= size
    for (start, end), (next_start, _) in itertools.pairwise(spans):
        assert next_start == end - overlap  # neighbours share exactly the overlap
        assert next_start > start  # always moves forward


def test_windows_end_at_word_boundaries_when_they_can() -> None:
    text = "alpha beta gamma delta epsilon"
    spans = chunk_spans(text, 12, 0)
    assert [text[start:end] for start, end in spans] == ["alpha beta ", "gamma delta ", "epsilon"]


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_unusable_windows_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="not usable"):
        chunk_spans("text", size, overlap)


def test_whitespace_chunks_are_dropped() -> None:
    assert chunk_file("   \n\n  ", "r.md", "global", 3, 0) == []


def chunk(text: str, source: str = "a.md") -> ReferenceChunk:
    return ReferenceChunk(text, source, "global", 0)


def test_bm25_ranks_the_chunk_sharing_rare_words_first() -> None:
    index: ReferenceIndex = Bm25Index(
        [
            chunk("Card fees: a lost card costs five dollars.", "fees.md"),
            chunk("Travel notices keep card payments abroad working.", "travel.md"),
            chunk("Locking a card declines new payments.", "lock.md"),
        ]
    )
    hits = index.search("how do I tell you I travel abroad", limit=2)
    assert hits[0].chunk.source == "travel.md"
    assert hits[0].score > (hits[1].score if len(hits) > 1 else 0)
    assert index.search("zebra") == []
    assert index.search("") == []
    assert len(index.search("card", limit=2)) == 2


def test_bm25_prefers_shorter_chunks_for_equal_term_counts() -> None:
    index = Bm25Index(
        [chunk("refund " + "filler " * 30, "long.md"), chunk("refund policy", "short.md")]
    )
    assert [hit.chunk.source for hit in index.search("refund")] == ["short.md", "long.md"]


def test_words_are_lowercased_unicode_runs() -> None:
    assert words("Geld-Automat: Überweisung 24h!") == ["geld", "automat", "überweisung", "24h"]


def test_the_project_index_holds_root_and_skill_references_with_scope(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "agent.yml": "agent: {persona: x}\n"
            "references: {chunking: {chunk_size: 40, chunk_overlap: 5}}\n",
            "references/a/deep.md": "Lost cards are locked at once and replaced within a week of "
            "the report.",
            "references/notes.txt": "Only markdown is indexed.",
            "references/blank.md": "\n \n",
            "skills/cards/references/policy.md": "Stolen cards are replaced free of charge.",
        },
    )
    index = load_project(tmp_path).references
    assert index is not None
    sources = {(c.source, c.scope) for c in index.chunks}
    assert sources == {
        ("references/a/deep.md", "global"),
        ("skills/cards/references/policy.md", "cards"),
    }
    assert all(len(c.text) <= 40 for c in index.chunks)
    assert len([c for c in index.chunks if c.source == "references/a/deep.md"]) >= 2


def test_no_reference_text_means_no_index(tmp_path: Path) -> None:
    assert load_project(write(tmp_path, {"references/empty.md": ""})).references is None


def test_an_unreadable_reference_file_is_reported(tmp_path: Path) -> None:
    write(tmp_path, {})
    (tmp_path / "references").mkdir()
    (tmp_path / "references" / "latin1.md").write_bytes("Caf\xe9 cards\n".encode("latin-1"))
    assert problems(tmp_path) == [
        ("mantle.validation.references.unreadable", "references/latin1.md", None)
    ]
