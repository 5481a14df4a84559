"""The Files and Batch APIs under the plugin's in-process transport: the official SDKs, unmodified, get the provider's
error naming the server that serves them (a 404, never retried), not a misleading complaint about the body."""

from __future__ import annotations

import io

import anthropic
import openai
import pytest

from harnessweb.testing.harness import Harness

SERVER_ONLY = "is served by the harness server only: start it with harness serve"


def test_openai_s_files_and_batches_say_they_need_the_server(harness: Harness) -> None:
    client = harness.openai_client(max_retries=0)

    with pytest.raises(openai.NotFoundError) as uploaded:
        client.files.create(file=("batch.jsonl", io.BytesIO(b"{}\n")), purpose="batch")
    with pytest.raises(openai.NotFoundError) as created:
        client.batches.create(input_file_id="file-x", endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.NotFoundError) as listed:
        client.batches.list()

    assert uploaded.value.body["message"] == f"/v1/files {SERVER_ONLY}"
    assert created.value.body["message"] == f"/v1/batches {SERVER_ONLY}"
    assert listed.value.body["type"] == "invalid_request_error" and SERVER_ONLY in listed.value.body["message"]


def test_anthropic_s_message_batches_say_so_in_anthropic_s_format(harness: Harness) -> None:
    client = harness.anthropic_client(max_retries=0)

    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.batches.retrieve("msgbatch_x")

    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["message"] == f"/v1/messages/batches/msgbatch_x {SERVER_ONLY}"
