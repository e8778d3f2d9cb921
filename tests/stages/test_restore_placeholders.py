"""`ppt restore` on what a model writes back (issue 25): typed placeholders with or without their brackets, or cut
short by the answer's token limit, come back as the real values; other surrogates as before."""

from __future__ import annotations

from ppt.stages.restore import restore_text

MAP = [
    {"surrogate": "<PERSON_2>", "original": "Maria Lopez"},
    {"surrogate": "<DENY_1>", "original": "Lyon"},
    {"surrogate": "Zork", "original": "Paris"},
]


def test_placeholders_as_models_write_them_back():
    assert restore_text("Hi <PERSON_2>, in <DENY_1>.", MAP) == ("Hi Maria Lopez, in Lyon.", 2)
    assert restore_text("Hi PERSON_2 in DENY_1", MAP) == ("Hi Maria Lopez in Lyon", 2)
    assert restore_text("their mobile is <PERSON_2", MAP) == ("their mobile is Maria Lopez", 1)  # cut short
    assert restore_text("<person_2>!", MAP) == ("Maria Lopez!", 1)
    assert restore_text("XPERSON_2 and PERSON_23 stay", MAP) == ("XPERSON_2 and PERSON_23 stay", 0)
    assert restore_text("Zork and zork", MAP) == ("Paris and Paris", 2)
