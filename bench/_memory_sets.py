"""Memory sets for the relevance benchmark: one person's observations with questions whose memory is known.

How they are made (issue 37): written for this benchmark, derived from no public data set. A fact is a
(contact, relative, attribute, value) drawn with `random.Random(seed)` from the small word lists below
(150 contacts, each with a role; the fact is about the contact or one of five relatives); its memory states
it ("Priya Shah's daughter (Priya Shah is the CFO at Acme) drives a green Volvo."), and its question asks
for it in other words ("What car does Priya Shah's daughter have?"), so a question shares the names and
the relative with its memory and rarely the attribute's words. Every (contact, relative, attribute) appears
once per set, so each question has exactly one answering memory; at 10,000 a contact has about 67
memories, more than the read's limit of 20, so the name alone does not find the answer. Every memory names
the common client "Acme", a term matching every row, and every other question names it too. Sizes 100,
1,000 and 10,000; 60 questions per set, the facts' creation times spread uniformly over one year.
The same seed gives the same sets on every machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["MemorySet", "make_set"]

FIRST = ["Priya", "Tom", "Aiko", "Lars", "Mina", "Omar", "Zoe", "Ravi", "Elena", "Jonas", "Nia", "Felix",
         "Sara", "Diego", "Hana", "Ivan", "Leila", "Marco", "Yuki", "Anna", "Kofi", "Ines", "Pavel", "Lucia",
         "Ben"]  # fmt: skip
LAST = ["Shah", "Berg", "Tanaka", "Olsen", "Kaur", "Haddad"]
ROLES = ["the procurement lead", "the CFO", "the IT director", "the office manager", "the legal counsel",
         "the head of sales", "the project sponsor", "the security officer", "the data engineer"]  # fmt: skip
RELATIONS = ["", "partner", "daughter", "son", "brother", "mother"]
"""Whom a fact is about: the contact themself ("") or one of their relatives."""

# attribute: (statement, question, values). {s} is who the fact is about, {v} the value.
ATTRIBUTES: dict[str, tuple[str, str, list[str]]] = {
    "car": ("{s} drives a {v}", "What car does {s} have?",
            ["green Volvo", "red Tesla", "old Saab", "blue Fiat", "grey Audi", "white Kia"]),
    "pet": ("{s} owns a dog called {v}", "What is the name of the animal {s} keeps?",
            ["Biscuit", "Pepper", "Nugget", "Luna", "Rocket", "Mochi", "Waffles"]),
    "food": ("{s} is vegetarian and loves {v}", "Which dish should we order for {s}?",
             ["mushroom risotto", "falafel wraps", "paneer curry", "veggie sushi", "lentil soup"]),
    "city": ("{s} relocated to {v} last spring", "Where does {s} live now?",
             ["Lisbon", "Osaka", "Nairobi", "Montreal", "Tallinn", "Valencia", "Auckland"]),
    "sport": ("{s} plays {v} every weekend", "What does {s} do for exercise?",
              ["squash", "water polo", "ultimate frisbee", "badminton", "rowing", "climbing"]),
    "birthday": ("{s} celebrates a birthday in {v}", "When should we send {s} a card?",
                 ["January", "March", "June", "August", "October", "December"]),
    "language": ("{s} prefers emails written in {v}", "How should messages to {s} be phrased?",
                 ["German", "Portuguese", "Japanese", "French", "Swahili", "Dutch"]),
    "allergy": ("{s} is allergic to {v}", "What must {s} avoid eating?",
                ["peanuts", "shellfish", "gluten", "sesame", "kiwi", "dairy"]),
    "meeting": ("{s} only takes calls on {v}", "Which day suits {s} for a conversation?",
                ["Tuesday mornings", "Thursday afternoons", "Friday lunchtimes", "Monday evenings"]),
    "hobby": ("{s} collects {v} in their spare time", "What is {s} passionate about outside work?",
              ["vinyl records", "vintage cameras", "bonsai trees", "board games", "fountain pens"]),
    "school": ("{s} studied {v} at university", "What was the degree of {s}?",
               ["marine biology", "philosophy", "civil engineering", "economics", "art history"]),
    "drink": ("{s} drinks {v} in meetings", "What beverage should we offer {s}?",
              ["green tea", "oat latte", "sparkling water", "espresso", "rooibos"]),
}  # fmt: skip


@dataclass(frozen=True)
class MemorySet:
    """One person's observations and the questions whose answering memory is known."""

    texts: list[str]
    """The memory texts, one per observation."""
    created: list[datetime]
    """Each memory's creation time (spread over one year)."""
    questions: list[tuple[str, int]]
    """(question, index of its answering memory in `texts`)."""


def make_set(size: int, *, questions: int = 60, seed: int = 37) -> MemorySet:
    """`size` observations of one person and `questions` questions, from `seed`."""
    rng = random.Random(seed * 1_000_003 + size)
    people = [(f"{f} {last}", rng.choice(ROLES)) for f in FIRST for last in LAST]
    facts = [(p, r, a) for p in range(len(people)) for r in RELATIONS for a in ATTRIBUTES]
    if size > len(facts):
        raise ValueError(f"at most {len(facts)} distinct facts")
    chosen = rng.sample(facts, size)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    texts, created, asks = [], [], []
    for person, relation, attribute in chosen:
        name, role = people[person]
        statement, question, values = ATTRIBUTES[attribute]
        about = f"{name}'s {relation}" if relation else name
        who = f"{about} ({name} is {role} at Acme)" if relation else f"{name}, {role} at Acme,"
        texts.append(statement.format(s=who, v=rng.choice(values)) + ".")
        asks.append(question.format(s=about))
        created.append(start + timedelta(seconds=rng.randrange(365 * 24 * 3600)))
    asked = rng.sample(range(size), min(questions, size))
    # Every other question also names the common client, so its postings (every memory) are read too.
    questions = [(asks[i] + (" Asking for the Acme account." if n % 2 else ""), i) for n, i in enumerate(asked)]
    return MemorySet(texts=texts, created=created, questions=questions)
