"""What the special-category lexicon of :mod:`ppt.detect.categories` is generated from: WordNet root synsets per
category and tier, exclusions, and the few words WordNet 3.0 lacks.

Why a shipped lexicon: the words come from maintained resources (WordNet 3.0's hyponyms of a few root synsets
per category; drug names from the ``drug-named-entity-recognition`` package's MedlinePlus list), but both are
optional installs; the lexicon is generated once from them (``python scripts/build_categories.py``, which needs
NLTK, WordNet and that package) into ``ppt/data/categories.json``, so detection needs none of them at run time.
A word is listed only when its most frequent noun sense falls under the category (``cancer`` yes, ``head`` no; a
capitalised form WordNet lists with another first sense, "Green" of the Green Party, only with its capital) and,
for health, finances and occupations, it is used as a noun at least as often as otherwise (``found``, ``want``,
``major`` no), which keeps ordinary words out.
"""

from __future__ import annotations

# category -> WordNet root synsets (their hyponym closure is the category), words marked wherever they are written
ROOTS: dict[str, tuple[str, ...]] = {
    "health": (
        "ill_health.n.01",
        "disease.n.01",
        "disorder.n.01",
        "mental_illness.n.01",
        "symptom.n.01",
        "mental_disorder.n.01",
        "depression.n.01",
        "pregnancy.n.01",
        "medical_procedure.n.01",
        "medicine.n.02",
        "drug_of_abuse.n.01",
        "disability.n.01",
        "addiction.n.01",
        "attack.n.07",  # a stroke, a seizure, a heart attack
        "abortion.n.01",
        "infertility.n.01",
    ),
    "sexual_orientation": (
        "homosexual.n.01",
        "heterosexual.n.01",
        "bisexual.n.01",
        "sexual_preference.n.01",
        "asexuality.n.01",
        "homosexuality.n.01",
        "transsexual.n.01",
        "transsexual.n.02",
        "sex_change.n.01",
    ),
    "religion": (
        "religion.n.01",
        "religious_person.n.01",
        "religious_belief.n.01",
        "religious_orientation.n.01",
        "clergyman.n.01",
    ),
    "political": (
        "political_orientation.n.01",
        "nationalism.n.02",
        "nationalism.n.04",
        "politician.n.02",
        "radical.n.03",
        "conservative.n.01",
        "liberal.n.01",
        "trade_unionist.n.01",
        "shop_steward.n.01",
    ),
    "ethnicity": (
        "ethnic_group.n.01",
        "race.n.03",
        "person_of_color.n.01",
        "african.n.01",
        "jew.n.01",
        "spanish_american.n.01",
    ),
    "finances": (
        "debt.n.01",
        "debt.n.02",
        "indebtedness.n.01",
        "bankruptcy.n.01",
        "insolvency.n.01",
        "nonpayment.n.02",
        "foreclosure.n.01",
        "repossession.n.01",
        "eviction.n.01",
        "eviction.n.02",
        "overdraft.n.01",
        "mortgage.n.01",
        "wage.n.01",
        "poverty.n.01",
        "unemployment.n.01",
        "unemployed_people.n.01",
        "arrears.n.01",
    ),
    "immigration": (
        "immigrant.n.01",
        "refugee.n.01",
        "exile.n.02",  # a deportee
        "green_card.n.01",
    ),
    "criminal": (
        "criminal_record.n.01",
        "convict.n.01",
        "=felon.n.01",  # a felon (not its hyponyms: "runner", "collaborator", "pirate" mean other things first)
    ),
    "occupation": (
        "occupation.n.01",
        "professional.n.01",
        "worker.n.01",
        "health_professional.n.01",
        "educator.n.01",
        "engineer.n.01",
        "businessperson.n.01",
        "creator.n.02",
        "writer.n.01",
        "linguist.n.02",
        "financier.n.01",
        "preserver.n.03",
    ),
}
# category -> WordNet roots whose words are private about a person and a topic otherwise (the personal tier). A
# name written "=name" stands for that synset alone, not its hyponyms ("gambling", not every game of chance)
PERSONAL_ROOTS: dict[str, tuple[str, ...]] = {
    "health": (
        "medical_care.n.01",  # therapies: chemotherapy, radiotherapy, dialysis, physiotherapy, HRT
        "diagnostic_test.n.01",  # biopsy, blood test, smear test
        "endoscopy.n.01",  # colonoscopy, gastroscopy
        "medical_examination.n.01",
        "=surgery.n.01",
        "hypoglycemic_agent.n.01",  # insulin
        "vaccine.n.01",
        "sick_person.n.01",  # a diabetic, an epileptic, an outpatient
        "injury.n.01",  # a fracture, a torn ligament
        "=anxiety.n.01",  # the lasting state (WordNet: "occurring in a variety of mental disorders")
        "childbirth.n.01",
        "contraception.n.01",
        "=prescription_drug.n.01",
    ),
    "religion": (
        "religion.n.02",  # churches, orders, denominations as institutions ("church", "Judaism")
        "place_of_worship.n.01",  # mosque, synagogue, temple, chapel
        "religious_ceremony.n.01",  # mass, baptism, communion
        "religious_holiday.n.01",  # Ramadan, Yom Kippur, Diwali (but see EXCLUDE)
        "islamic_calendar_month.n.01",
        "hajj.n.01",
        "=hijab.n.01",
        "=burqa.n.01",
        "=niqab.n.01",
        "=yarmulke.n.01",
        "=rosary.n.01",
    ),
    "political": ("=voter.n.01", "political_party.n.01"),  # "the Labour Party" in a history question
    "finances": (
        "social_welfare.n.01",  # Medicaid, welfare, national insurance
        "food_stamp.n.01",
        "=savings.n.01",
        "loan.n.01",
        "=gambling.n.01",
        "=pension.n.01",
        "=credit_rating.n.01",
    ),
    "immigration": (
        "visa.n.01",
        "naturalization.n.02",
        "=deportation.n.02",
        "=working_papers.n.02",  # a work permit
    ),
    "criminal": (
        "crime.n.01",  # fraud, burglary, shoplifting, assault
        "=imprisonment.n.01",
    ),
}
# subtrees taken out of a category: drinks are food before they are a drug of abuse (wine, beer, in a recipe), and
# the Christian feasts most people keep whatever their belief (Christmas, Easter) say little about anyone's
EXCLUDE: dict[str, tuple[str, ...]] = {
    "health": ("alcohol.n.01", "beverage.n.01"),
    "religion": ("christmas.n.02", "christmas.n.01", "easter.n.01", "holy_day_of_obligation.n.01"),
    "criminal": ("misdemeanor.n.01",),  # its synonyms "violation", "infraction" are a linter's words first
}
# the roots whose own words are generic ("disease", "symptom", "medicine", "dose"): personal tier, not marked alone
GENERIC = (
    "ill_health.n.01",
    "disease.n.01",
    "disorder.n.01",
    "symptom.n.01",
    "medical_procedure.n.01",
    "medicine.n.02",
    "dose.n.01",
    "debt.n.02",
    "wage.n.01",
)
# words whose listed sense is not what they mean in most prompts ("a formal complaint", "a birthday party", "a
# crime victim", "the patient's rights"): left out of every tier
COMMON = ("complaint", "party", "parties", "crime", "patient", "patients", "straight", "aaa")
# words of a category written since WordNet 3.0 (2006) or as clippings it does not list (it has "chemotherapy",
# not "chemo"): category -> words, each checked by the generator to be absent from WordNet. Personal tier; a word
# written with capitals is matched only so written
MODERN: dict[str, tuple[str, ...]] = {
    "health": (
        "chemo",
        "physio",
        "rehab",
        "meds",
        "burnout",
        "covid",
        "covid-19",
        "long covid",
        "fibromyalgia",
        "hypomanic",
        "self-harm",
        "self-harming",
        "neurodivergent",
        "IVF",
        "PCOS",
        "OCD",
        "IBS",
    ),
    "sexual_orientation": (
        "LGBT",
        "LGBTQ",
        "LGBTQIA",
        "nonbinary",
        "non-binary",
        "genderqueer",
        "genderfluid",
        "same-sex",
        "trans woman",
        "trans man",
        "trans women",
        "trans men",
    ),
    "finances": ("universal credit", "payday loan", "payday loans", "SNAP", "EBT", "debt collector", "debt collectors"),
    "immigration": (
        "undocumented",
        "DACA",
        "asylum seeker",
        "asylum seekers",
        "residence permit",
        "residence card",
        "leave to remain",
        "settled status",
        "pre-settled status",
        "refugee status",
        "immigration status",
        "USCIS",
    ),
    "criminal": ("DUI", "DWI", "restraining order", "non-molestation order", "drink-driving", "drink driving"),
}
