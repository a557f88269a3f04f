"""PDF decompression bombs built with pypdf, for the extraction-budget tests.

`shared_stream_bomb`: one compressed content stream that draws the same line of text (or of a `FIGURE`,
without any text operator) many times, referenced
as the content of every one of `pages` pages (the 316 KB PDF of issue 21 is 2,000 pages sharing a stream
that decompresses to 400 KB; its 64 KiB variant shares a 64 KiB stream). `form_bomb`: one page whose small
content invokes one form XObject thousands of times, the form drawing a lot of text. `text_pages`: an
ordinary PDF of distinct pages, each drawing `lines` lines, where `broken_page` (1-based) is damaged.
"""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject, StreamObject

LINE = b"BT /F1 10 Tf 20 700 Td (All work and no play makes a dull document bomb.) Tj ET\n"


def _font(writer: PdfWriter) -> DictionaryObject:
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    return DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})


def _stream(data: bytes, *, compress: bool = True) -> StreamObject:
    stream = DecodedStreamObject()
    stream.set_data(data)
    return stream.flate_encode(level=9) if compress else stream


def _written(writer: PdfWriter) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


FIGURE = b"0 0 m 300 400 l 600 0 l h S\n"


def shared_stream_bomb(pages: int = 2_000, stream_bytes: int = 400_000, *, line: bytes = LINE) -> bytes:
    """`pages` pages whose content is one shared compressed stream of about `stream_bytes` decoded bytes."""
    writer = PdfWriter()
    resources = _font(writer)
    shared = writer._add_object(_stream(line * (stream_bytes // len(line))))
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = shared
        page[NameObject("/Resources")] = resources
    return _written(writer)


def form_bomb(invocations: int = 5_000, form_bytes: int = 400_000) -> bytes:
    """One page that invokes a form of about `form_bytes` decoded bytes of text `invocations` times."""
    writer = PdfWriter()
    resources = _font(writer)
    form = _stream(LINE * (form_bytes // len(LINE)))
    form.update(
        {
            NameObject("/Type"): NameObject("/XObject"),
            NameObject("/Subtype"): NameObject("/Form"),
            NameObject("/BBox"): ArrayObject([NumberObject(0), NumberObject(0), NumberObject(612), NumberObject(792)]),
            NameObject("/Resources"): resources,
        }
    )
    page = writer.add_blank_page(612, 792)
    page[NameObject("/Resources")] = DictionaryObject(
        {**resources, NameObject("/XObject"): DictionaryObject({NameObject("/Fm0"): writer._add_object(form)})}
    )
    page[NameObject("/Contents")] = writer._add_object(_stream(b"/Fm0 Do\n" * invocations))
    return _written(writer)


def text_pages(pages: int, lines: int, *, broken_page: int | None = None) -> bytes:
    """`pages` distinct pages of `lines` lines each; page `broken_page` has a stream no filter can decode."""
    writer = PdfWriter()
    resources = _font(writer)
    for number in range(1, pages + 1):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = resources
        body = b"".join(
            b"BT /F1 10 Tf 20 %d Td (Page %d line %d says something new.) Tj ET\n" % (700 - n, number, n)
            for n in range(lines)
        )
        stream = _stream(body)
        if number == broken_page:
            stream[NameObject("/Filter")] = NameObject("/NoSuchDecode")
        page[NameObject("/Contents")] = writer._add_object(stream)
    return _written(writer)
