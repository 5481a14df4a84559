"""mirascope's structured output against the harness (run by tests/test_clients_structured.py in .venv/mirascope):
``format=Weather`` in each provider's default mode ("strict": a JSON schema, on OpenAI's Responses API and in
Anthropic's ``output_config``) and in "tool" mode (a forced tool). Arguments: the base URL, the API key, then
provider:mode=scenario items ("default" for no mode given); prints one JSON line per item with the parsed model."""

from __future__ import annotations

import json
import sys

from mirascope import llm
from pydantic import BaseModel


class Weather(BaseModel):
    city: str
    celsius: int
    conditions: str


MODELS = {"openai": "openai/gpt-4.1", "anthropic": "anthropic/claude-sonnet-4-6"}


def main(url: str, key: str, items: list[str]) -> None:
    llm.register_provider("openai", scope="openai/", api_key=key, base_url=f"{url}/v1")
    llm.register_provider("anthropic", scope="anthropic/", api_key=key, base_url=url)
    for item in items:
        case, scenario = item.split("=", 1)
        provider, mode = case.split(":")
        wanted = Weather if mode == "default" else llm.format(Weather, mode=mode)

        @llm.call(MODELS[provider], format=wanted)
        def ask(text: str) -> str:
            return text

        weather = ask(scenario).parse()
        print(json.dumps({"case": case, "weather": weather.model_dump()}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
