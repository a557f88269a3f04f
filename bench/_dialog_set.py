"""A judged conversational set, written for this project: multi-session dialogues, one turn per document.

How it was made: `python -m bench._dialog_set` writes `bench/dialog_set.json` from the hand-written
personas, facts and templates below with a fixed seed (0); the committed file is that output. Nothing
here comes from a public benchmark's data. Each of 32 people talks with an assistant over four dated
sessions; a turn is one document ("<date>, <speaker>: <text>"; an assistant's reply ends with the person's
name, so no two turns are the same document). A person's facts are spread over the
sessions among small talk that reuses the facts' everyday words (work, trip, family, weekend), so a
question's words also match turns that do not answer it. Every question lists the turns that answer it:

- single: one turn holds the answer, asked with the turn's own words;
- paraphrase: one turn, asked with words the turn does not use (what the floor used to cut);
- multi_hop: two turns, each holding half (a relative named in one, where they live in another);
- temporal: a fact that changed between sessions, asked as before/after or by date (both turns judged).

`unanswerable` holds questions about these people that no turn answers (the floor's reason to exist).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

PATH: Final = Path(__file__).parent / "dialog_set.json"
SEED: Final = 0

NAMES: Final = (
    "Maya", "Tomasz", "Ingrid", "Kwame", "Lucia", "Rohan", "Aiko", "Bastien", "Chiara", "Dmitri", "Efua",
    "Farid", "Greta", "Hiroshi", "Imani", "Joaquin", "Katja", "Lars", "Mireille", "Nikhil", "Oona", "Pedro",
    "Quinn", "Rasmus", "Saoirse", "Teodor", "Ulla", "Viktor", "Wren", "Xiomara", "Yusuf", "Zofia",
)  # fmt: skip
DATES: Final = ("12 January 2026", "9 March 2026", "4 May 2026", "21 July 2026")

PETS = [("beagle", "dog"), ("tabby", "cat"), ("cockatiel", "bird"), ("greyhound", "dog"), ("Maine Coon", "cat"),
        ("dwarf rabbit", "rabbit"), ("border collie", "dog"), ("bearded dragon", "lizard")]  # fmt: skip
PET_NAMES = ["Biscuit", "Pepper", "Noodle", "Juniper", "Waffles", "Clementine", "Mochi", "Rocket", "Saffron", "Pickle"]
JOBS = [("nurse", "Saint Aldric Hospital"), ("structural engineer", "Halvorsen Partners"),
        ("primary school teacher", "Brookfield Elementary"), ("data analyst", "Northwind Logistics"),
        ("pastry chef", "Maison Florin"), ("paralegal", "Okafor & Webb"), ("civil servant", "the city planning office"),
        ("sound technician", "the Lyric Theatre"), ("pharmacist", "Greenleaf Pharmacy"),
        ("UX designer", "Pixelmoor Studio")]  # fmt: skip
INSTRUMENTS = ["cello", "ukulele", "banjo", "saxophone", "harp", "accordion", "drums", "violin"]
CRAFTS = ["pottery", "woodworking", "knitting", "bookbinding", "watercolour painting", "calligraphy"]
ALLERGIES = [("shellfish", "prawns"), ("peanuts", "satay"), ("sesame", "tahini"), ("kiwi", "fruit salad"),
             ("gluten", "bread"), ("eggs", "omelettes")]  # fmt: skip
PLACES = ["Reykjavik", "Kyoto", "the Azores", "Patagonia", "Zanzibar", "the Dolomites", "Tasmania", "Oaxaca",
          "the Faroe Islands", "Sri Lanka"]  # fmt: skip
MONTHS = ["April", "June", "September", "October", "December"]
CITIES = ["Rotterdam", "Porto", "Gdansk", "Valencia", "Tampere", "Ljubljana", "Bologna", "Aarhus", "Graz", "Nantes"]
RELATIVES = [("sister", "she"), ("brother", "he"), ("cousin", "she"), ("nephew", "he"), ("aunt", "she")]
REL_NAMES = ["Ana", "Boris", "Celeste", "Dario", "Elif", "Fionn", "Gemma", "Hugo", "Ilse", "Jonas", "Kira", "Leon"]
CARS = ["hatchback", "electric van", "estate car", "small hybrid", "second-hand convertible", "pickup truck"]
BOOKS = [("The Salt Orchard", "Mara Velden"), ("Nine Winters", "Odile Brask"),
         ("A Map of Quiet Rooms", "Tobias Fenn"), ("The Glass Ferry", "Anouk Reyes"),
         ("Harvest of Lanterns", "Selim Kader"), ("Low Tide Letters", "Pia Lund")]  # fmt: skip
RACES = [("half marathon", "2 hours and 5 minutes"), ("10 kilometre race", "52 minutes"),
         ("marathon", "4 hours and 20 minutes"), ("5 kilometre park run", "26 minutes")]  # fmt: skip
SMALL_TALK = [
    "Busy week at work again, nothing special, just meetings and emails.",
    "The weekend was quiet, mostly cleaning the flat and catching up on sleep.",
    "My family is doing fine, thanks for asking.",
    "I keep thinking about planning a trip but never get round to it.",
    "The weather has been awful, rain every single day this week.",
    "I watched a documentary about octopuses last night, fascinating animals.",
    "Trying to drink more water and go to bed earlier, we'll see how long that lasts.",
    "Work has been a bit calmer since the deadline passed.",
    "We had friends over for dinner on Saturday, lovely evening.",
    "I need to sort out my taxes before the end of the month.",
    "My phone screen cracked, so I'm waiting for a repair appointment.",
    "I started a new podcast about history, the episodes are long but good.",
    "The neighbours are renovating and the drilling starts at seven.",
    "I finally cleared out the garage, found old photos from school.",
    "Thinking about redecorating the living room in a lighter colour.",
    "The train was late twice this week, the commute is getting tiring.",
]
ASSISTANT = [
    "That sounds like a lot. How are you feeling about it?",
    "Thanks for telling me. Is there anything you would like help planning?",
    "Good to hear from you again. What else is on your mind this week?",
    "I'll remember that. Do you want me to remind you of anything?",
    "That's nice to hear. Anything coming up that you're looking forward to?",
    "Understood. Shall we make a list for the next few weeks?",
    "It sounds like a busy time. Take care of yourself.",
    "Interesting! Tell me more whenever you like.",
    "Noted. Let me know how it goes.",
    "What a week! Is there anything I can take off your plate?",
    "Thanks for the update, that's good to know.",
    "I see. Would it help to talk it through?",
]


@dataclass
class _Person:
    name: str
    rng: random.Random
    sessions: list[list[tuple[str, str]]] = field(default_factory=lambda: [[], [], [], []])
    """Per session, (key, text) of the person's fact turns; small talk and replies are added around them."""
    questions: list[dict[str, Any]] = field(default_factory=list)

    def say(self, session: int, key: str, text: str) -> str:
        self.sessions[session].append((key, text))
        return key

    def ask(self, kind: str, question: str, *keys: str) -> None:
        self.questions.append({"kind": kind, "question": question, "turns": list(keys)})


def _facts(p: _Person) -> None:
    r, n = p.rng, p.name
    breed, animal = r.choice(PETS)
    pet = r.choice(PET_NAMES)
    k = p.say(
        r.randrange(2), "pet", f"We finally adopted a {breed} from the rescue centre, we called {pet} after a snack."
    )
    p.ask("single", f"What is the name of {n}'s {breed}?", k)
    p.ask("paraphrase", f"What kind of {animal} does {n} have at home?", k)

    (job1, firm1), (job2, firm2) = r.sample(JOBS, 2)
    k1 = p.say(0, "job1", f"I've been a {job1} at {firm1} for six years now, the shifts are long.")
    k2 = p.say(
        r.choice((2, 3)), "job2", f"Big news: I handed in my notice and I start as a {job2} at {firm2} on Monday."
    )
    p.ask("single", f"Where does {n} work as a {job2}?", k2)
    p.ask("temporal", f"What did {n} do for a living before changing careers?", k1, k2)
    p.ask("paraphrase", f"Which employer did {n} leave?", k1, k2)

    relative, pronoun = r.choice(RELATIVES)
    rel = r.choice(REL_NAMES)
    city = r.choice(CITIES)
    k1 = p.say(0, "relative", f"My {relative} {rel} is the funniest person I know, {pronoun} always cheers me up.")
    k2 = p.say(r.choice((1, 2, 3)), "relative_city", f"{rel} just moved to {city} for a job at the harbour.")
    p.ask("multi_hop", f"Which city does {n}'s {relative} live in now?", k1, k2)
    p.ask("single", f"Why did {rel} move to {city}?", k2)

    if r.random() < 0.5:
        instrument = r.choice(INSTRUMENTS)
        k = p.say(
            r.randrange(4), "music", f"I've been learning the {instrument}, twenty minutes every evening after dinner."
        )
        p.ask("single", f"Which instrument is {n} learning?", k)
        p.ask("paraphrase", f"What musical hobby has {n} picked up lately?", k)
    else:
        craft = r.choice(CRAFTS)
        k = p.say(
            r.randrange(4), "craft", f"Signed up for a {craft} class on Thursdays, my first piece was a disaster."
        )
        p.ask("single", f"What class does {n} attend on Thursdays?", k)
        p.ask("paraphrase", f"Which creative pastime did {n} recently take up?", k)

    allergen, dish = r.choice(ALLERGIES)
    k = p.say(
        r.randrange(4),
        "allergy",
        f"Please never suggest {dish} for me, I'm allergic to {allergen} and come out in hives.",
    )
    p.ask("single", f"What is {n} allergic to?", k)
    p.ask("paraphrase", f"Which ingredient must be avoided when cooking for {n}?", k)

    place, month = r.choice(PLACES), r.choice(MONTHS)
    first, then = r.sample(CARS, 2)
    k1 = p.say(1, "car1", f"I'm seriously thinking about buying a {first}, the old car keeps breaking down.")
    k2 = p.say(3, "car2", f"Changed my mind completely and bought a {then} in the end, picked it up on Friday.")
    p.ask("temporal", f"Which vehicle did {n} end up purchasing?", k2)
    p.ask("temporal", f"What car was {n} considering in March?", k1)
    k = p.say(r.randrange(3), "trip", f"We booked flights to {place} for {month}, two whole weeks off.")
    p.ask("single", f"Where is {n} flying in {month}?", k)
    p.ask("paraphrase", f"Which holiday destination did {n} choose?", k)

    book, author = r.choice(BOOKS)
    k1 = p.say(r.randrange(2), "book", f"Just finished {book}, I couldn't put it down, stayed up until two.")
    k2 = p.say(r.choice((2, 3)), "author", f"Went to a reading by {author} — turns out {book} was her first novel.")
    p.ask("multi_hop", f"Who wrote the book {n} stayed up late to finish?", k1, k2)

    race, time = r.choice(RACES)
    k = p.say(r.randrange(4), "race", f"Ran the {race} on Sunday and finished in {time}, my legs are still sore.")
    p.ask("single", f"How long did {n}'s {race} take?", k)
    p.ask("paraphrase", f"What was {n}'s finishing time at the running event?", k)


UNANSWERABLE = (
    "What is {n}'s favourite football team?",
    "Which university did {n} graduate from?",
    "How many children does {n} have?",
    "What is {n}'s blood type?",
)


def build(seed: int = SEED) -> dict[str, Any]:
    """The set: turns (id, text) and questions (question, kind, the ids of the turns that answer it)."""
    rng = random.Random(seed)
    turns: list[dict[str, str]] = []
    questions: list[dict[str, Any]] = []
    unanswerable: list[str] = []
    for number, name in enumerate(NAMES):
        person = _Person(name, random.Random(rng.random()))
        _facts(person)
        ids: dict[str, str] = {}
        for s, facts in enumerate(person.sessions):
            lines: list[tuple[str | None, str]] = [(key, text) for key, text in facts]
            talk = person.rng.sample(SMALL_TALK, 5 - min(len(lines), 3))
            lines += [(None, t) for t in talk]
            person.rng.shuffle(lines)
            replies = person.rng.sample(ASSISTANT, len(lines))
            for t, (key, text) in enumerate(lines):
                reply = ("Assistant", f"{replies[t]} ({name})")
                for half, (speaker, said) in enumerate(((name, text), reply)):
                    turn_id = f"d{number:02d}-s{s + 1}-t{2 * t + half + 1:02d}"
                    turns.append({"id": turn_id, "text": f"{DATES[s]}, {speaker}: {said}"})
                    if half == 0 and key is not None:
                        ids[key] = turn_id
        for q in person.questions:
            questions.append({"question": q["question"], "kind": q["kind"], "turns": [ids[k] for k in q["turns"]]})
        unanswerable.append(person.rng.choice(UNANSWERABLE).format(n=name))
    return {"seed": seed, "turns": turns, "questions": questions, "unanswerable": unanswerable}


def load() -> dict[str, Any]:
    """The committed set."""
    data: dict[str, Any] = json.loads(PATH.read_text())
    return data


def _dumps(data: dict[str, Any]) -> str:
    """The set as JSON, one turn or question a line (a reviewable diff)."""
    parts = [f'{{"seed": {data["seed"]},']
    for key in ("turns", "questions", "unanswerable"):
        rows = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in data[key])
        parts.append(f' "{key}": [\n{rows}\n ]' + ("}" if key == "unanswerable" else ","))
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    PATH.write_text(_dumps(build()))
