"""What counts as the same words for confirming a speculative turn (gateway/speculation.py)."""

from voicegate.gateway.speculation import same_words


def test_case_punctuation_and_spacing_do_not_matter() -> None:
    assert same_words("Check my balance.", "check my  balance")
    assert same_words("I'd like to pay", "I'd like to pay!")


def test_any_other_word_is_a_material_difference() -> None:
    assert not same_words("check my balance", "check my balance please")
    assert not same_words("pay twenty", "pay twenty five")
    assert not same_words("yes", "no")
