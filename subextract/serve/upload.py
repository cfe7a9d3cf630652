"""A multipart upload streamed straight into the job's folder, under a size limit counted while
the body arrives.

python-multipart's push parser is driven by hand rather than through Starlette's
``Request.form()``: that one spools every file to a temporary file and returns only after the
whole body has been read, so a 413 would come after the bytes were received and stored.
Here each chunk is counted before it is parsed and the video part is written where the job
will read it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from python_multipart.multipart import MultipartParser, parse_options_header
from python_multipart.exceptions import FormParserError

MAX_FIELD = 256 * 1024 + 1024  # bytes of one text field (a watchlist is the longest)
MAX_PARTS = 32
MAX_BOUNDARY = 70  # RFC 2046's longest boundary; python-multipart failed past 256 characters (a 500)


class UploadError(Exception):
    """A refused body: ``status`` 400 (malformed) or 413 (too large)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Upload:
    fields: dict[str, list[str]] = field(default_factory=dict)
    filename: str | None = None  # the client's name for the video; None when no file part came
    size: int = 0


class _Receiver:
    """python-multipart callbacks: text fields into memory, the ``file`` part into ``target``."""

    def __init__(self, target: Path, file_field: str) -> None:
        self.upload = Upload()
        self._target = target
        self._file_field = file_field
        self._out = None
        self._name = ""
        self._data = bytearray()
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._parts = 0

    def callbacks(self) -> dict:
        return {"on_part_begin": self._part_begin, "on_part_data": self._part_data, "on_part_end": self._part_end,
                "on_header_field": self._header_field, "on_header_value": self._header_value_part,
                "on_header_end": self._header_end, "on_headers_finished": self._headers_finished}

    def _part_begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise UploadError(400, f"more than {MAX_PARTS} form fields")
        self._name, self._data, self._disposition = "", bytearray(), b""

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_part(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name, self._header_value = b"", b""

    def _headers_finished(self) -> None:
        _, params = parse_options_header(self._disposition)
        if b"name" not in params:
            raise UploadError(400, "a form part has no name")
        self._name = params[b"name"].decode("utf-8", "replace")
        if b"filename" in params and self._name != self._file_field:
            # A file under another name would be read as a text field and refused as too long (413).
            raise UploadError(400, f"the video goes in the multipart field {self._file_field!r}, not {self._name!r}")
        if self._name == self._file_field:
            if self._out is not None:
                raise UploadError(400, f"more than one {self._file_field!r} part")
            self.upload.filename = Path(params.get(b"filename", b"upload").decode("utf-8", "replace")).name or "upload"
            self._out = open(self._target, "wb")

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._name == self._file_field:
            self._out.write(data[start:end])
            self.upload.size += end - start
            return
        if len(self._data) + end - start > MAX_FIELD:
            raise UploadError(413, f"form field {self._name!r} is longer than {MAX_FIELD} bytes")
        self._data.extend(data[start:end])

    def _part_end(self) -> None:
        if self._name != self._file_field:
            self.upload.fields.setdefault(self._name, []).append(self._data.decode("utf-8", "replace"))

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


async def receive_upload(content_type: str, body: AsyncIterator[bytes], target: Path, limit: int,
                         file_field: str = "file") -> Upload:
    """Parse a ``multipart/form-data`` body, writing the ``file_field`` part to ``target``;
    UploadError (413) as soon as more than ``limit`` bytes have come."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise UploadError(400, "multipart body without a boundary")
    if len(boundary) > MAX_BOUNDARY:
        raise UploadError(400, f"multipart boundary longer than {MAX_BOUNDARY} characters")
    receiver = _Receiver(target, file_field)
    parser = MultipartParser(boundary, receiver.callbacks())
    received = 0
    try:
        async for chunk in body:
            received += len(chunk)
            if received > limit:
                raise UploadError(413, f"upload larger than the limit ({limit / 1024 / 1024:g} MiB)")
            parser.write(chunk)
        parser.finalize()
    except FormParserError:
        raise UploadError(400, "malformed multipart body") from None
    finally:
        receiver.close()
    if receiver.upload.filename is None:
        raise UploadError(400, f"no {file_field!r} part: send the video as the multipart field {file_field!r}")
    return receiver.upload
