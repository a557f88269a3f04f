"""One table of identity look-alikes (issue 21, item 6): entity kinds and UUID spellings that must be refused.

Each entry reads as its canonical form to a person (or parses as it in Python's `UUID()` and pydantic), and
each would be a second subject key for one row if it were stored. The unit, tool, HTTP and CLI tests all
draw from here, so a new look-alike is added once and tested on every path.
"""

from __future__ import annotations

CANONICAL_KIND = "crm.company"

LOOK_ALIKE_KINDS: dict[str, str] = {
    "one dot leader U+2024": "crm\u2024company",
    "fullwidth full stop U+FF0E": "crm\uff0ecompany",
    "Cyrillic es U+0441": "\u0441rm.company",
    "Cyrillic a U+0430": "crm.comp\u0430ny",
    "leading space": " crm.company",
    "trailing space": "crm.company ",
    "trailing no-break space": "crm.company\u00a0",
    "zero-width space inside": "crm.\u200bcompany",
    "trailing zero-width joiner": "crm.company\u200d",
    "leading byte order mark": "\ufeffcrm.company",
    "upper case": "CRM.company",
    "plural stored kind": "crm.companies",
}
"""A name for each case, and a kind that is not `crm.company` although it looks like it."""


def look_alike_uuids(canonical: str) -> dict[str, str]:
    """Spellings of the UUID `canonical` that are not its canonical text (each parses, or looks, as it)."""
    return {
        "upper case": canonical.upper(),
        "urn:uuid: prefix": f"urn:uuid:{canonical}",
        "braces": "{" + canonical + "}",
        "no hyphens": canonical.replace("-", ""),
        "leading space": f" {canonical}",
        "trailing space": f"{canonical} ",
        "padded with no-break spaces": f"\u00a0{canonical}\u00a0",
        "zero-width space inside": f"{canonical[:8]}\u200b{canonical[8:]}",
        "trailing newline": f"{canonical}\n",
        "fullwidth hyphen": canonical.replace("-", "\uff0d", 1),
    }
