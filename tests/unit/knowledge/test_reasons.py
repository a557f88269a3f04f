"""The failure reasons' closed vocabulary (`knowledge.reasons`) and the one gate to the reason columns
(`knowledge.ingestion.failures`): a reason is a code and a detail the layer wrote, never a message it was handed."""

from __future__ import annotations

import string

import pytest

import knowledge.documents.chunk  # noqa: F401  (TooManyChunksError joins the error tree)
from knowledge.errors import ExtractionError, KnowledgeError, MalformedDocumentError
from knowledge.ingestion.failures import after_retries, reason_of, stored_reason
from knowledge.reasons import FALLBACK, VOCABULARY, Reason, fixed_reason, in_vocabulary

MARKER = "ZQXMARKER7731"
SAMPLES = {"code": "embedding_provider_unavailable", "model": "test/hash-32", "age": "1 hour",
           "since": "2026-01-02 03:04"}  # fmt: skip


def filled(template: str) -> str:
    """`template` filled with a sample value of each placeholder's kind (numbers: 12345 and 2.5)."""
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    values = {n: SAMPLES.get(n, 2.5 if n == "seconds" else 12345) for n in names}
    return template.format(**values)


def all_filled() -> list[str]:
    """Every template of the vocabulary, filled, as a stored reason."""
    return [f"{code}: {filled(t)}" for code, templates in VOCABULARY.items() for t in templates]


def test_every_template_filled_is_in_the_vocabulary_and_every_code_has_a_fixed_detail() -> None:
    for text in all_filled():
        assert in_vocabulary(text) and stored_reason(text) == text, text
    for code, templates in VOCABULARY.items():
        assert "{" not in templates[0], f"{code}'s first template is its fixed detail: it takes no value"


def test_every_extraction_error_has_its_own_code_in_the_vocabulary() -> None:
    def tree(cls: type[KnowledgeError]) -> list[type[KnowledgeError]]:
        return [cls, *(c for sub in cls.__subclasses__() for c in tree(sub))]

    missing = [cls.__name__ for cls in tree(ExtractionError) if cls.code not in VOCABULARY]
    assert not missing, f"an unreadable document would fail as {FALLBACK}: {missing}"


def test_a_reason_takes_only_its_own_templates_and_values_of_their_kind() -> None:
    with pytest.raises(ValueError, match="not a detail"):
        Reason.of("document_malformed", f"page 3 cannot be read: {MARKER}")
    with pytest.raises(TypeError, match="must be a number"):
        Reason.of("document_malformed", "page {page:,} cannot be read", page=MARKER)
    with pytest.raises(ValueError, match="not of its kind"):
        Reason.of("failed_after_retries", VOCABULARY["failed_after_retries"][1], code=f"salary of {MARKER}")
    assert str(MalformedDocumentError.because("page {page:,} cannot be read", page=3).reason) == (
        "document_malformed: page 3 cannot be read"
    )


def test_an_error_fails_with_its_reason_never_its_message() -> None:
    quoting = MalformedDocumentError(f"page 1 cannot be read: Invalid object: b'salary of {MARKER}'")
    assert reason_of(quoting) == str(fixed_reason("document_malformed"))
    unknown = KnowledgeError(f"salary of {MARKER}")
    assert reason_of(unknown) == (
        f"{FALLBACK}: ingestion failed with knowledge_error. Retry the source to ingest it again."
    ), "a code outside the vocabulary still names itself, and nothing of the message"


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        (f"document_malformed: page 1 cannot be read: Invalid Elementary Object b') {MARKER}'",
         "document_malformed: the document is damaged and cannot be read"),
        (f"ingestion failed after its retries: KeyError {MARKER}",
         "failed_after_retries: ingestion failed after its retries. Retry the source to ingest it again."),
        (f"salary of {MARKER} is 90000", "ingestion_failed: ingestion failed. Retry the source to ingest it again."),
        ("", "ingestion_failed: ingestion failed. Retry the source to ingest it again."),
    ],
)  # fmt: skip
def test_a_reason_outside_the_vocabulary_is_stored_as_its_codes_fixed_reason(written: str, stored: str) -> None:
    assert stored_reason(written) == stored


def test_after_retries_takes_a_code_of_ours_from_the_engine_and_nothing_else() -> None:
    assert after_retries({"message": "object_store_unavailable: source 1"}) == (
        "failed_after_retries: ingestion failed after its retries; the last error was object_store_unavailable. "
        "Retry the source to ingest it again."
    )
    for error in ({"message": f"salary_of: {MARKER}"}, {"message": f"{MARKER}"}, None, "boom"):
        assert MARKER not in after_retries(error) and after_retries(error) == str(fixed_reason("failed_after_retries"))
