"""instructor's default modes against the harness (run by tests/test_clients_instructor.py in .venv/instructor):
Mode.TOOLS and Mode.JSON_SCHEMA on OpenAI, Mode.ANTHROPIC_TOOLS on Anthropic. Prints one JSON line per mode."""

from __future__ import annotations

import json
import sys

import anthropic
import instructor
import openai
from pydantic import BaseModel, Field


class Weather(BaseModel):
    city: str
    celsius: int = Field(ge=-60, le=60)
    conditions: list[str] = Field(min_length=1)
    windy: bool


def main(url: str) -> None:
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    raw_openai = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
    for mode in (instructor.Mode.TOOLS, instructor.Mode.JSON_SCHEMA):
        client = instructor.from_openai(raw_openai, mode=mode)
        weather = client.chat.completions.create(model="gpt-4o", response_model=Weather, messages=messages)
        print(json.dumps({"mode": mode.value, "weather": weather.model_dump()}))
    claude = instructor.from_anthropic(anthropic.Anthropic(base_url=url, api_key="k", max_retries=0))
    weather = claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=1024, response_model=Weather, messages=messages
    )
    print(json.dumps({"mode": "anthropic_tools", "weather": weather.model_dump()}))


if __name__ == "__main__":
    main(sys.argv[1])
