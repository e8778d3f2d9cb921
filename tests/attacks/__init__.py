"""Attack tests; WORDS is the vocabulary of their word space (conftest's ``space`` fixture)."""

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "dog",
    "ran",
    "far",
    "red",
    "big",
    "a",
    "blue",
    "sky",
    "tree",
    "house",
    "car",
]
