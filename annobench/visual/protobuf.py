"""The protocol-buffer forms a network file comes in, read and written without a protobuf library.

ONNX models and Caffe weights (`.caffemodel`) are binary protocol buffers,
Caffe network definitions (`deploy.prototxt`) their text form. The CNN
feature reads both and writes ONNX, so it needs the wire format
(https://protobuf.dev/programming-guides/encoding/) and the text format,
not the generated classes of either schema: a message is read as its fields
by number (binary) or by name (text), and the reader of each schema
(`onnx_model`, `caffe`) knows what the numbers mean.

Every read is bounded by the bytes at hand: a length, a varint or a nesting
level that runs past them or past MAX_DEPTH raises ProtobufError, never an
IndexError or a recursion error, so a damaged file is one clear error.
"""

from __future__ import annotations

import re
import struct
from typing import Iterator

import numpy as np

from annobench.core.errors import AnnobenchError

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
MAX_DEPTH = 64  # nested messages in a text file (binary messages are parsed one level at a time)


class ProtobufError(AnnobenchError):
    """Bytes that are not the protocol buffer they should be (the message says where)."""


# ---------------------------------------------------------------- binary: reading


def read_varint(data: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise ProtobufError("a varint runs past the end of its message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("a varint longer than 10 bytes")


def fields(data: bytes | memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) of each field of one message, in order: an int for a
    varint, a memoryview of the bytes for the other types (no copy)."""
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    pos, end = 0, len(view)
    while pos < end:
        key, pos = read_varint(view, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("a field numbered 0")
        if wire == VARINT:
            value, pos = read_varint(view, pos)
        elif wire == LENGTH:
            size, pos = read_varint(view, pos)
            if size > end - pos:
                raise ProtobufError(f"field {number} declares {size} bytes, {end - pos} are left")
            value, pos = view[pos:pos + size], pos + size
        elif wire in (FIXED32, FIXED64):
            size = 4 if wire == FIXED32 else 8
            if size > end - pos:
                raise ProtobufError(f"field {number} runs past the end of its message")
            value, pos = view[pos:pos + size], pos + size
        else:
            raise ProtobufError(f"field {number} has wire type {wire}, which no current protobuf writes")
        yield number, wire, value


def by_number(data: bytes | memoryview) -> dict[int, list]:
    """Every field of a message, number -> its values in order."""
    found: dict[int, list] = {}
    for number, wire, value in fields(data):
        found.setdefault(number, []).append((wire, value))
    return found


def text(values: list | None, default: str = "") -> str:
    """The last value of a string field (protobuf: the last one wins)."""
    if not values:
        return default
    wire, value = values[-1]
    if wire != LENGTH:
        raise ProtobufError("a string field that is not length-delimited")
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError("a string field that is not UTF-8") from None


def texts(values: list | None) -> list[str]:
    return [text([value]) for value in values or []]


def integer(values: list | None, default: int = 0, signed: bool = True) -> int:
    """The last value of an integer field (int32/int64/uint64/bool/enum, as varints)."""
    found = integers(values, signed)
    return found[-1] if found else default


def integers(values: list | None, signed: bool = True) -> list[int]:
    """A repeated integer field, packed or not."""
    found = []
    for wire, value in values or []:
        if wire == VARINT:
            found.append(value)
        elif wire == LENGTH:  # packed
            pos = 0
            while pos < len(value):
                number, pos = read_varint(value, pos)
                found.append(number)
        else:
            raise ProtobufError("an integer field with a fixed-size wire type")
    if signed:
        found = [n - (1 << 64) if n >= 1 << 63 else n for n in found]
    return found


def floats(values: list | None) -> np.ndarray:
    """A repeated float field, packed or not, as float32: one packed run is a read-only view of
    the message's bytes (a layer's weights are not copied), several are joined."""
    parts = []
    for wire, value in values or []:
        if wire == FIXED32:
            parts.append(np.frombuffer(value, "<f4"))
        elif wire == LENGTH:
            if len(value) % 4:
                raise ProtobufError("packed floats whose length is not a multiple of 4")
            parts.append(np.frombuffer(value, "<f4"))
        else:
            raise ProtobufError("a float field with a varint or 8-byte wire type")
    if len(parts) == 1:
        return parts[0].view(np.float32)
    return np.concatenate(parts).astype(np.float32) if parts else np.empty(0, np.float32)


def doubles(values: list | None) -> np.ndarray:
    parts = []
    for wire, value in values or []:
        if wire not in (FIXED64, LENGTH) or len(value) % 8:
            raise ProtobufError("a double field that is not 8-byte values")
        parts.append(np.frombuffer(value, "<f8"))
    return np.concatenate(parts) if parts else np.empty(0, np.float64)


def real(values: list | None, default: float) -> float:
    """The last value of a float field."""
    found = floats(values)
    return float(found[-1]) if len(found) else default


# ---------------------------------------------------------------- binary: writing


def varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def length_header(number: int, size: int) -> bytes:
    """A length-delimited field's key and length: its payload follows."""
    return key(number, LENGTH) + varint(size)


def length_field(number: int, payload: bytes | bytearray | memoryview) -> bytes:
    return length_header(number, len(payload)) + bytes(payload)


def nested(number: int, chunks: list) -> list:
    """A length-delimited field whose payload is `chunks` (bytes-like pieces, joined only once the
    whole message is: weights are never copied more than once)."""
    return [length_header(number, sum(len(chunk) for chunk in chunks)), *chunks]


def string_field(number: int, value: str) -> bytes:
    return length_field(number, value.encode("utf-8"))


def int_field(number: int, value: int) -> bytes:
    return key(number, VARINT) + varint(value)


def float_field(number: int, value: float) -> bytes:
    return key(number, FIXED32) + struct.pack("<f", value)


def packed_ints(number: int, values) -> bytes:
    return length_field(number, b"".join(varint(int(v)) for v in values))


def packed_floats(number: int, values) -> bytes:
    return length_field(number, np.asarray(values, "<f4").tobytes())


# ---------------------------------------------------------------- text format

_TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?|inf(?:inity)?|nan)(?![\w.]))
  | (?P<name>[A-Za-z_][\w.]*)
  | (?P<punct>[:{}<>\[\],;-])
""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f",
            "v": "\v", "?": "?"}


class TextMessage(dict):
    """A text-format message: field name -> its values in order (str, int, float, bool-as-name, or
    a nested TextMessage). Enum values and `true`/`false` stay names (`Name`)."""

    def last(self, name: str, default=None):
        values = self.get(name)
        return values[-1] if values else default

    def all(self, name: str) -> list:
        return self.get(name, [])


class Name(str):
    """An identifier value: an enum value, `true` or `false`."""


def parse_text(source: str, what: str = "the text") -> TextMessage:
    """A protobuf text-format document (e.g. a Caffe prototxt) as nested TextMessages."""
    tokens = _tokens(source, what)
    message, pos = _message(tokens, 0, None, what, 0)
    return message


def _tokens(source: str, what: str) -> list[tuple[str, str, int]]:
    tokens, pos, line = [], 0, 1
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise ProtobufError(f"{what}, line {line}: cannot read {source[pos:pos + 20]!r}")
        kind = match.lastgroup
        if kind != "space":
            tokens.append((kind, match.group(), line))
        line += match.group().count("\n")
        pos = match.end()
    return tokens


def _message(tokens, pos: int, closing: str | None, what: str, depth: int) -> tuple[TextMessage, int]:
    if depth > MAX_DEPTH:
        raise ProtobufError(f"{what}: messages nested more than {MAX_DEPTH} deep")
    message = TextMessage()
    while True:
        if pos >= len(tokens):
            if closing is None:
                return message, pos
            raise ProtobufError(f"{what}: the file ends inside a message (a {closing!r} is missing)")
        kind, token, line = tokens[pos]
        if closing is not None and token == closing:
            return message, pos + 1
        if kind != "name":
            raise ProtobufError(f"{what}, line {line}: a field name was expected, found {token!r}")
        name, pos = token, pos + 1
        colon = pos < len(tokens) and tokens[pos][1] == ":"
        pos += colon
        if pos >= len(tokens):
            raise ProtobufError(f"{what}, line {line}: field {name} has no value")
        values, pos = _values(tokens, pos, what, depth)
        message.setdefault(name, []).extend(values)
        if pos < len(tokens) and tokens[pos][1] in (",", ";"):
            pos += 1


def _values(tokens, pos: int, what: str, depth: int) -> tuple[list, int]:
    kind, token, line = tokens[pos]
    if token in ("{", "<"):
        nested, pos = _message(tokens, pos + 1, "}" if token == "{" else ">", what, depth + 1)
        return [nested], pos
    if token == "[":
        values, pos = [], pos + 1
        while pos < len(tokens) and tokens[pos][1] != "]":
            value, pos = _values(tokens, pos, what, depth)
            values += value
            if pos < len(tokens) and tokens[pos][1] == ",":
                pos += 1
        if pos >= len(tokens):
            raise ProtobufError(f"{what}, line {line}: a list is not closed")
        return values, pos + 1
    if kind == "string":
        parts = [token]
        while pos + 1 < len(tokens) and tokens[pos + 1][0] == "string":  # adjacent strings concatenate
            pos += 1
            parts.append(tokens[pos][1])
        return ["".join(_unquote(part, what, line) for part in parts)], pos + 1
    if token == "-" and pos + 1 < len(tokens) and tokens[pos + 1][0] in ("number", "name"):
        value = _number(tokens[pos + 1][1], what, line)
        return [-value], pos + 2
    if kind == "number":
        return [_number(token, what, line)], pos + 1
    if kind == "name":
        lowered = token.lower()
        if lowered in ("inf", "infinity", "nan"):
            return [float(lowered)], pos + 1
        return [Name(token)], pos + 1
    raise ProtobufError(f"{what}, line {line}: a value was expected, found {token!r}")


def _number(token: str, what: str, line: int) -> int | float:
    body = token.rstrip("fF") if not token.lower().startswith(("0x", "-0x", "+0x")) else token
    try:
        if re.fullmatch(r"[-+]?\d+", body):
            return int(body)
        if re.fullmatch(r"[-+]?0[xX][0-9a-fA-F]+", body):
            return int(body, 16)
        return float(body)
    except ValueError:
        raise ProtobufError(f"{what}, line {line}: {token!r} is not a number") from None


def _unquote(token: str, what: str, line: int) -> str:
    body, out, k = token[1:-1], [], 0
    while k < len(body):
        char = body[k]
        if char != "\\":
            out.append(char)
            k += 1
            continue
        k += 1
        if k >= len(body):
            raise ProtobufError(f"{what}, line {line}: a string ends in a backslash")
        char = body[k]
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
            k += 1
        elif char in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[k:]).group()
            out.append(chr(int(digits, 8)))
            k += len(digits)
        elif char == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[k + 1:])
            if not digits:
                raise ProtobufError(f"{what}, line {line}: a \\x escape without hex digits")
            out.append(chr(int(digits.group(), 16)))
            k += 1 + len(digits.group())
        else:
            raise ProtobufError(f"{what}, line {line}: unknown escape \\{char}")
    return "".join(out)
