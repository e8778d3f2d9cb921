"""ppt.spaces.tokens and tokenizers: tokenization that rebuilds readable text, piece kinds, case modes."""

import pytest

from ppt.spaces.tokenizers import WordTokenizer
from ppt.spaces.tokens import NUMBER, PUNCT, SPACE, WORD, kind_of, match_case, rebuild


@pytest.mark.parametrize(
    "text", ["Hello, world!", "  two  spaces\nand lines ", "It's 3.5% of 2,000.", "", "naïve café — ok"]
)
def test_word_tokenizer_pieces_rebuild_the_text(text):
    tok = WordTokenizer(["hello", "world"]).tokenize(text)
    assert tok.text == text.rstrip() or tok.text == text
    assert rebuild(tok, list(tok.core)) == text.strip()


def test_kinds_are_judged_after_stripping_the_space():
    assert kind_of("2024") == NUMBER and kind_of("3.5%") == NUMBER
    assert kind_of("word") == WORD and kind_of("it's") == WORD
    assert kind_of(",") == PUNCT and kind_of("") == SPACE


def test_rebuild_keeps_spacing_and_drops_cleanly_with_each_case_mode():
    tok = WordTokenizer(["alice", "met", "bob"]).tokenize("Alice met BOB, today. he left")
    cores = ["carol", "saw", "dan", tok.core[3], None, tok.core[5], "she", "went"]
    # default: capitalise from the output's own sentences only (reveals nothing about the original)
    assert rebuild(tok, cores) == "Carol saw dan,. She went"
    assert rebuild(tok, cores, case="original") == "Carol saw DAN,. she went"  # leaks the case pattern
    assert rebuild(tok, cores, case="vocab") == "carol saw dan,. she went"
    assert match_case("paris", "London") == "Paris"
