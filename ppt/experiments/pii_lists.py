"""The lists and draws both PII prompt sets share (:mod:`ppt.experiments.pii`, :mod:`ppt.experiments.pii_free`)."""

from __future__ import annotations

import torch

FIRST = (
    "James Maria David Sofia Michael Aisha Daniel Elena Robert Priya Thomas Fatima Joseph Yuki Samuel Olga "
    "Peter Amara Lucas Ingrid Omar Chloe Victor Hannah Mateo Leila Andrew Nadia George Zara"
).split()
LAST = (
    "Miller Lopez Novak Okafor Schmidt Tanaka Rossi Kowalski Haddad Larsen Moreau Fischer Petrov Mensah Duarte "
    "Brennan Sato Lindqvist Ortega Walsh Kaur Dubois Nakamura Castillo Jensen Ibrahim Murphy Varga Costa Weber"
).split()
CITIES = (
    "Boston Denver Leeds Glasgow Lyon Porto Krakow Dublin Seattle Austin Bristol Toronto Melbourne Oslo "
    "Valencia Munich Nairobi Osaka Cardiff Brighton Phoenix Tampa Utrecht Geneva Lisbon"
).split()
OCCUPATIONS = (
    "teacher nurse farmer plumber accountant electrician pharmacist architect carpenter librarian "
    "firefighter dentist journalist mechanic paramedic chef lawyer surveyor veterinarian baker "
    "welder optician translator midwife cashier"
).split()
CONDITIONS = (
    "diabetes asthma epilepsy depression schizophrenia hepatitis leukemia tuberculosis migraine arthritis "
    "anorexia psoriasis glaucoma lupus HIV dementia insomnia bronchitis anemia hypertension"
).split()
DOMAINS = ("example.com", "mailbox.org", "post.net", "inbox.co.uk", "webmail.com")
INSTRUCTIONS = {
    "summarize": "Summarize the following text in one sentence.",
    "question": "What is the main news in the following text?",
}


def pick(g: torch.Generator, seq):
    return seq[int(torch.randint(0, len(seq), (1,), generator=g))]


def digits(g: torch.Generator, n: int) -> str:
    return "".join(str(int(d)) for d in torch.randint(0, 10, (n,), generator=g))


__all__ = ["CITIES", "CONDITIONS", "DOMAINS", "FIRST", "INSTRUCTIONS", "LAST", "OCCUPATIONS", "digits", "pick"]
