"""The memory transfer file: JSONL, one self-describing line per revision, read whole or refused whole.

A line is one revision (`TransferLine`): the format tag and version, the revision's id where it was exported,
its chain's root id (`chain_id`), the revision it supersedes, the scope, the owning definition (id and name),
the person (id and email) of a user-scope chain, the attribute, the subject key and subject refs as stored,
the text (null for a tombstone) and the three times (created, expires, forgotten). Chains come in a stable
order and each chain's revisions oldest first, so a file is the same for the same memory.

`parse_transfer` reads a file into its chains, or refuses the file with the first bad line's number and a
code (`MemoryImportError`): not JSON, another format or version, a field out of shape, or a chain that does
not hold together (a revision that does not follow the one before it, a chain whose lines disagree on what
it is about, a tombstone with text). Nothing of a refused file is imported. This module must never read the
database: it is the file's shape only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from memory._blank import is_blank
from memory.errors import MemoryMisuseError
from memory.models import MAX_MEMORY_TEXT, MemoryScope, MemorySubjectKeyPart, attribute_of, is_memory_attribute

__all__ = [
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_LINES",
    "VERSION",
    "ImportChain",
    "ImportChainError",
    "ImportFormatError",
    "ImportLineError",
    "ImportTooLargeError",
    "MemoryImportError",
    "TransferDefinition",
    "TransferLine",
    "TransferPerson",
    "TransferSubjectRef",
    "parse_transfer",
]

FORMAT = "ac-context.memory"
"""The format tag every line carries."""
VERSION = 1
"""The version of the line's shape this module writes and reads."""
MAX_IMPORT_BYTES = 32 * 1024 * 1024
"""The largest file an import reads (a revision's text is at most 4,000 characters: about 8,000 revisions)."""
MAX_IMPORT_LINES = 100_000
"""The most revisions one import writes (one transaction)."""


class MemoryImportError(MemoryMisuseError, ValueError):
    """The memory file is refused; nothing of it was imported."""

    code = "memory_import_invalid"

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line
        """The 1-based number of the first bad line, or None for the file as a whole."""


class ImportTooLargeError(MemoryImportError):
    """The memory file is larger than an import reads."""

    code = "memory_import_too_large"


class ImportFormatError(MemoryImportError):
    """A line is not a memory transfer line of a version this deployment reads."""

    code = "memory_import_format_unknown"


class ImportLineError(MemoryImportError):
    """A line is not JSON, or a field of it is out of shape."""

    code = "memory_import_line_invalid"


class ImportChainError(MemoryImportError):
    """The lines of a chain do not hold together."""

    code = "memory_import_chain_broken"


def _attribute(value: str) -> str:
    if not is_memory_attribute(value):
        raise ValueError("attribute must be observation.<name> or preference.<name>")
    return value


def _text(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("must not hold a null byte")
    return value


class TransferSubjectRef(BaseModel):
    """The row a chain is about, as stored (the rules of `memory.models.MemorySubjectRef`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    kind: MemorySubjectKeyPart
    """The entity kind, e.g. `crm.company`."""
    id: MemorySubjectKeyPart
    """The row's id: an import looks for the same id in the importing organization (the guard's rule)."""
    label: Annotated[str | None, AfterValidator(_text)] = None
    """Display text; never used to match."""

    def stored(self) -> dict[str, str]:
        """The JSON element the table stores (label only when present)."""
        out = {"kind": self.kind, "id": self.id}
        if self.label is not None:
            out["label"] = self.label
        return out


class TransferDefinition(BaseModel):
    """The agent definition that owned the chain where it was exported."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: UUID
    """Its id there."""
    name: str = Field(min_length=1, max_length=500)
    """Its name: an import finds the target's definition by it."""


class TransferPerson(BaseModel):
    """The person of a user-scope chain where it was exported."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: UUID
    """Their user id there."""
    email: str | None = Field(default=None, max_length=500)
    """Their email: an import finds the target's member by it (without regard to case)."""


class TransferLine(BaseModel):
    """One revision of an exported chain."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    format: Literal["ac-context.memory"]
    """The format tag."""
    version: Literal[1]
    """The line shape's version."""
    id: UUID
    """The revision's id where it was exported (an import records it, and skips a chain it imported before)."""
    chain_id: UUID
    """The id of the chain's first revision."""
    supersedes_id: UUID | None
    """The revision this one follows; null for the chain's first."""
    organization_id: UUID
    """The organization it was exported from."""
    definition: TransferDefinition
    """The owning agent definition."""
    scope: MemoryScope
    """`user` or `organization`."""
    user: TransferPerson | None
    """The person of a user-scope chain; null for organization scope."""
    attribute: Annotated[str, AfterValidator(_attribute)]
    """`observation.<name>` or `preference.<name>`."""
    subject_key: str = Field(max_length=1024)
    """The subject key as stored where it was exported (an import makes its own)."""
    subject_refs: list[TransferSubjectRef] = Field(max_length=1)
    """The row the chain is about, or none."""
    text: Annotated[Annotated[str, Field(max_length=MAX_MEMORY_TEXT)] | None, AfterValidator(_text)]
    """What the revision says, byte for byte; null for a tombstone."""
    created_at: AwareDatetime
    """When it was written (an import keeps it: it is history)."""
    expires_at: AwareDatetime | None
    """When it stops being read, or null."""
    forgotten_at: AwareDatetime | None
    """When a tombstone forgot the chain; null for a revision with text."""

    @property
    def tombstone(self) -> bool:
        """Whether this revision forgets its chain."""
        return self.forgotten_at is not None


@dataclass(frozen=True)
class ImportChain:
    """One chain of a file: its revisions oldest first, with the line number of each."""

    lines: tuple[TransferLine, ...]
    """The revisions, each superseding the one before."""
    numbers: tuple[int, ...]
    """The 1-based line number of each revision in the file."""

    @property
    def root(self) -> TransferLine:
        """The chain's first revision."""
        return self.lines[0]

    @property
    def head(self) -> TransferLine:
        """The chain's last revision."""
        return self.lines[-1]

    @property
    def expired(self) -> bool:
        """Whether its head expired before now (it travels, and is not read: the expiry is kept)."""
        expires = self.head.expires_at
        return expires is not None and expires <= datetime.now(expires.tzinfo)


def _line(number: int, raw: bytes) -> TransferLine:
    try:
        value: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ImportLineError("not a JSON object in UTF-8", line=number) from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise ImportFormatError(f"not an {FORMAT} line (its format tag is missing or another)", line=number)
    if value.get("version") != VERSION:
        raise ImportFormatError(f"version {value.get('version')!r} is not read here (only {VERSION})", line=number)
    try:
        return TransferLine.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "line"
        raise ImportLineError(f"{where}: {first['msg']}", line=number) from None


def _check_revision(line: TransferLine, number: int) -> None:
    if line.tombstone and (line.text is not None or line.expires_at is not None or line.supersedes_id is None):
        raise ImportChainError("a tombstone carries no text and no expiry, and follows a revision", line=number)
    if not line.tombstone and (line.text is None or is_blank(line.text)):
        raise ImportChainError("a revision that is not a tombstone needs its text", line=number)
    if (line.scope == "user") != (line.user is not None):
        raise ImportChainError("a user-scope revision names its person, an organization one none", line=number)
    if attribute_of(line.subject_key) != line.attribute:
        raise ImportChainError("the subject key does not end with the attribute", line=number)
    if line.expires_at is not None and line.expires_at <= line.created_at:
        raise ImportChainError("expires_at must be after created_at", line=number)


def _same_chain(a: TransferLine, b: TransferLine) -> bool:
    return (
        a.definition == b.definition
        and a.scope == b.scope
        and a.user == b.user
        and a.attribute == b.attribute
        and a.subject_key == b.subject_key
        and [(r.kind, r.id) for r in a.subject_refs] == [(r.kind, r.id) for r in b.subject_refs]
    )


def parse_transfer(
    data: bytes, *, max_bytes: int = MAX_IMPORT_BYTES, max_lines: int = MAX_IMPORT_LINES
) -> list[ImportChain]:
    """The chains of a transfer file in file order, or `MemoryImportError` naming the first bad line."""
    if len(data) > max_bytes:
        raise ImportTooLargeError(f"the file is larger than the {max_bytes}-byte limit")
    chains: dict[UUID, tuple[list[TransferLine], list[int]]] = {}
    seen: set[UUID] = set()
    count = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        count += 1
        if count > max_lines:
            raise ImportTooLargeError(f"the file holds more than {max_lines} revisions", line=number)
        line = _line(number, raw)
        _check_revision(line, number)
        if line.id in seen:
            raise ImportChainError(f"revision {line.id} appears twice", line=number)
        seen.add(line.id)
        if line.supersedes_id is None:
            if line.id != line.chain_id or line.chain_id in chains:
                raise ImportChainError("a chain's first revision is the chain's id, once", line=number)
            chains[line.chain_id] = ([line], [number])
            continue
        found = chains.get(line.chain_id)
        if found is None:
            raise ImportChainError(f"chain {line.chain_id} has no first revision before this line", line=number)
        revisions, numbers = found
        previous = revisions[-1]
        if line.supersedes_id != previous.id:
            raise ImportChainError(f"it must supersede {previous.id}, its chain's last revision so far", line=number)
        if not _same_chain(previous, line):
            raise ImportChainError("its definition, scope, person or subject differs from its chain's", line=number)
        revisions.append(line)
        numbers.append(number)
    return [ImportChain(tuple(r), tuple(n)) for r, n in chains.values()]
