"""Sentence cutting of streamed text (Say as soon as a sentence is ready, design §4)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.engine.loop.sentences import SentenceSplitter


def split_all(deltas: list[str]) -> list[str]:
    splitter = SentenceSplitter()
    sentences = [sentence for delta in deltas for sentence in splitter.feed(delta)]
    return sentences + splitter.flush()


def test_a_sentence_is_released_as_soon_as_it_ends() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("Hello the") == []
    assert splitter.feed("re! How ") == ["Hello there!"]
    assert splitter.feed("are you?") == []  # no space yet: it may go on ("?!")
    assert splitter.feed(" Fine") == ["How are you?"]
    assert splitter.flush() == ["Fine"]


def test_decimals_abbreviations_and_line_breaks() -> None:
    text = "Your balance is 12.50 dollars. Dr. Smith will call e.g. tomorrow.\nBye"
    assert split_all([text]) == [
        "Your balance is 12.50 dollars.",
        "Dr. Smith will call e.g. tomorrow.",
        "Bye",
    ]


def test_closing_quotes_stay_with_their_sentence() -> None:
    assert split_all(['He said "yes." Then left.']) == ['He said "yes."', "Then left."]


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from(["Hi", " ", ".", "!", "?", "\n", "12.5", "ok", "Dr."]), max_size=30),
    st.data(),
)
def test_any_chunking_gives_the_same_sentences(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert split_all(deltas) == split_all([text])
    assert " ".join(split_all([text])).split() == text.split()


def test_text_that_never_ends_a_sentence_is_spoken_in_bounded_pieces_as_it_streams() -> None:
    splitter = SentenceSplitter(max_chars=20)
    words = [f"word{n}" for n in range(12)]
    said = [piece for word in words for piece in splitter.feed(word + " ")]
    assert said  # before the stream ended
    rest = splitter.flush()
    assert all(len(piece) <= 20 for piece in [*said, *rest])
    assert " ".join([*said, *rest]).split() == words
    assert SentenceSplitter(max_chars=5).feed("x" * 12) == ["xxxxx", "xxxxx"]  # no space: cut


def test_an_abbreviation_split_by_a_hard_cut_is_judged_as_the_whole_word() -> None:
    # Found by the property below: "HiHiHi.Dr." is no abbreviation, so its sentence ends
    # there whether or not a delta boundary fell inside it.
    def split(pieces: list[str]) -> list[str]:
        splitter = SentenceSplitter(max_chars=12)
        return [s for piece in pieces for s in splitter.feed(piece)] + splitter.flush()

    assert split(["word HiHiHi.D", "r. Hi"]) == ["word HiHiHi.", "Dr.", "Hi"]
    assert split(["word HiHiHi.Dr. Hi"]) == ["word HiHiHi.", "Dr.", "Hi"]
    assert split(["Ask Dr. ", "Who"]) == ["Ask Dr. Who"]


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from(["Hi", " ", ".", "!", "\n", "word", "Dr.", "x" * 9]), max_size=40),
    st.data(),
)
def test_long_sentences_are_cut_the_same_however_the_text_streams(
    parts: list[str], data: st.DataObject
) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]

    def split(pieces: list[str]) -> list[str]:
        splitter = SentenceSplitter(max_chars=12)
        return [s for piece in pieces for s in splitter.feed(piece)] + splitter.flush()

    whole = split([text])
    assert split(deltas) == whole
    assert all(0 < len(sentence) <= 12 for sentence in whole)
    assert "".join("".join(whole).split()) == "".join(text.split())  # nothing lost
