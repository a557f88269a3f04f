"""One table of stored subject-ref elements, and whether the three validators must accept each.

The table CHECK (`memories_subject_ref_elements_well_formed`), `parse_stored_refs` and `MemorySubjectRef`
must agree on every row: the unit tests hold the two Python validators to it, the integration test holds the
database to it.
"""

from __future__ import annotations

from typing import Any

COMPANY = "crm.company"

ELEMENT_CASES: list[tuple[str, Any, bool]] = [
    ("plain id", {"kind": COMPANY, "id": "8f21"}, True),
    ("tab id", {"kind": COMPANY, "id": "\t"}, False),
    ("no-break space id", {"kind": COMPANY, "id": "\u00a0"}, False),
    ("line separator id", {"kind": COMPANY, "id": "\u2028"}, False),
    ("ideographic space id", {"kind": COMPANY, "id": "\u3000"}, False),
    ("zero-width space id", {"kind": COMPANY, "id": "\u200b"}, False),
    ("figure space id", {"kind": COMPANY, "id": "\u2007"}, False),
    ("narrow no-break space id", {"kind": COMPANY, "id": "\u202f"}, False),
    ("next line id", {"kind": COMPANY, "id": "\u0085"}, False),
    ("file separator id", {"kind": COMPANY, "id": "\u001c"}, False),
    ("mixed blanks id", {"kind": COMPANY, "id": " \t\u00a0\u200b\ufeff "}, False),
    ("empty id", {"kind": COMPANY, "id": ""}, False),
    ("colon in id", {"kind": COMPANY, "id": "8f:21"}, False),
    ("colon alone", {"kind": COMPANY, "id": ":"}, False),
    ("text between no-break spaces", {"kind": COMPANY, "id": "\u00a08f21\u00a0"}, True),
    ("padded id", {"kind": COMPANY, "id": " 8f21 "}, True),
    ("blank kind", {"kind": " ", "id": "8f21"}, False),
    ("colon in kind", {"kind": "crm:company", "id": "8f21"}, False),
    ("label with a colon", {"kind": COMPANY, "id": "8f21", "label": "Acme: HQ"}, True),
    ("null label", {"kind": COMPANY, "id": "8f21", "label": None}, True),
    ("blank label", {"kind": COMPANY, "id": "8f21", "label": "\u00a0"}, True),
    ("number label", {"kind": COMPANY, "id": "8f21", "label": 5}, False),
    ("unknown key", {"kind": COMPANY, "id": "8f21", "relation": "owner"}, True),
    ("number id", {"kind": COMPANY, "id": 5}, False),
    ("null id", {"kind": COMPANY, "id": None}, False),
    ("missing id", {"kind": COMPANY}, False),
    ("not an object", "crm.company:8f21", False),
]
"""(case name, stored element, the verdict all three validators must give)."""
