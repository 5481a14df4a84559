"""Deterministic embeddings (harnessweb/engine/wire/embeddings.py): the same vector for the same text on every
machine."""

from __future__ import annotations

import base64
import math
import struct

import orjson
import pytest

from harnessweb.engine.wire.common import WireError
from harnessweb.engine.wire.embeddings import encode_embeddings, parse_request, vector


def test_it_gives_the_same_vector_on_every_machine() -> None:
    # Pinned: SHA-256 in counter mode, no platform's random generator, float32 values.
    assert vector("hello", 4) == (-0.7456501722335815, 0.35563838481903076, 0.5494672656059265, 0.12495151162147522)


def test_it_gives_unit_vectors_that_differ_by_text() -> None:
    first, second = vector("the cat sat"), vector("the cat sat.")
    assert len(first) == 1536 and first != second
    assert math.isclose(math.fsum(x * x for x in first), 1.0, rel_tol=1e-5)


def test_it_sends_base64_as_little_endian_float32_of_the_same_values() -> None:
    request = parse_request({"model": "m", "input": ["a", "b"], "dimensions": 16, "encoding_format": "base64"})
    body = orjson.loads(encode_embeddings(request).body)
    decoded = struct.unpack("<16f", base64.b64decode(body["data"][1]["embedding"]))
    assert decoded == vector("b", 16)
    assert [item["index"] for item in body["data"]] == [0, 1]


def test_it_reads_token_arrays_as_their_ids() -> None:
    assert parse_request({"model": "m", "input": [1, 2, 3]}).inputs == ("1 2 3",)
    assert parse_request({"model": "m", "input": [[1, 2], [3]]}).inputs == ("1 2", "3")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x"}, "model"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": [""]}, "input"),
        ({"model": "m", "input": [{"text": "x"}]}, "input[0]"),
        ({"model": "m", "input": "x", "dimensions": 9000}, "dimensions"),
        ({"model": "m", "input": "x", "encoding_format": "int8"}, "encoding_format"),
    ],
)
def test_it_names_the_field_a_bad_request_gets_wrong(body: dict, param: str) -> None:
    with pytest.raises(WireError) as caught:
        parse_request(body)
    assert caught.value.param == param
