"""instructor's TOOLS mode (OpenAI) and Anthropic's tool mode answered by a scenario's ``structured`` turn (run by
tests/test_clients_instructor.py in .venv/instructor): the scenario's id as the user message. Prints one JSON line
per mode."""

from __future__ import annotations

import json
import sys

import anthropic
import instructor
import openai
from pydantic import BaseModel, Field


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    languages: list[str]


def main(url: str, scenario: str) -> None:
    messages = [{"role": "user", "content": scenario}]
    client = instructor.from_openai(openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0))
    person = client.chat.completions.create(model="gpt-4o", response_model=Person, messages=messages, max_retries=0)
    print(json.dumps({"mode": "tool_call", "person": person.model_dump()}))
    claude = instructor.from_anthropic(anthropic.Anthropic(base_url=url, api_key="k", max_retries=0))
    person = claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=1024, response_model=Person, messages=messages, max_retries=0
    )
    print(json.dumps({"mode": "anthropic_tools", "person": person.model_dump()}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
