"""The VCR cassettes themselves: every protocol we serve is compared, and the SSE parser reads the recordings
the same however they are cut."""

from __future__ import annotations

import pytest

from tests.sse import SSEParser, parse_sse
from tests.wire_cassettes_helpers import (
    ANTHROPIC_STREAMS,
    CASSETTES,
    ERRORS,
    GEMINI_STREAMS,
    OPENAI_STREAMS,
    STREAMS,
    body_chunks,
    interaction_of,
    is_stream,
    protocol_of,
)

# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------------------------------------------
# The cassettes


def test_it_compares_every_cassette_of_every_protocol_it_serves():
    covered = {p.values[0] for p in STREAMS + ERRORS}
    assert sorted(set(CASSETTES) - covered) == []
    # Every served protocol's streamed 200 is compared below.
    for name, cassette in CASSETTES.items():
        for index, interaction in enumerate(cassette["interactions"]):
            assert protocol_of(interaction) is not None, name
            if is_stream(interaction["response"]):
                assert (name, index) in {tuple(p.values) for p in STREAMS}
    assert len(ANTHROPIC_STREAMS) >= 10 and len(OPENAI_STREAMS) >= 10 and len(GEMINI_STREAMS) >= 7
    assert len(ERRORS) >= 13


# ---------------------------------------------------------------------------------------------------------------
# The SSE parser, on the recordings' own chunking


def test_it_parses_the_same_events_however_the_stream_is_cut():
    stream = (
        'event: message_start\ndata: {"type":"message_start"}\n\n'
        ": a comment\r\n"
        'event: content_block_delta\r\ndata: {"text":"😀 ok"}\r\n\r\n'
        "data: line one\ndata: line two\n\n"
        "event: no_data\n\n"
        "data: [DONE]\r\r"
        "data: unterminated"
    ).encode()
    expected = [
        ("message_start", '{"type":"message_start"}'),
        ("content_block_delta", '{"text":"😀 ok"}'),
        (None, "line one\nline two"),
        (None, "[DONE]"),
    ]
    assert parse_sse([stream]) == expected
    assert parse_sse([stream[i : i + 1] for i in range(len(stream))]) == expected  # cut inside UTF-8 and CRLF
    for cut in range(len(stream)):
        assert parse_sse([stream[:cut], stream[cut:]]) == expected
    parser = SSEParser()
    assert parser.feed("data: a\n") == [] and parser.feed("\ndata: b\n\n") == [(None, "a"), (None, "b")]


@pytest.mark.parametrize(("name", "index"), ANTHROPIC_STREAMS + OPENAI_STREAMS)
def test_it_parses_the_same_events_from_the_recorded_chunks_and_the_whole_body(name, index):
    chunks = body_chunks(interaction_of(name, index)["response"])
    events = parse_sse(chunks)
    assert events == parse_sse([b"".join(chunks)])
    assert len(events) == b"".join(chunks).count(b"\n\n")  # one event per blank line, whatever the chunking
