"""magentic's structured output against the harness (run by tests/test_clients_structured.py in .venv/magentic): a
prompt function returning a pydantic model, which magentic asks for as a forced tool on OpenAI's Chat Completions
and on Anthropic's Messages. Arguments: the base URL, the API key, then provider=scenario pairs; prints one JSON line
per pair, the provider as its case, with the parsed model.

No ``from __future__ import annotations``: magentic reads the prompt function's return annotation as a type."""

import json
import sys

from magentic import OpenaiChatModel, prompt
from magentic.chat_model.anthropic_chat_model import AnthropicChatModel
from pydantic import BaseModel


class Weather(BaseModel):
    city: str
    celsius: int
    conditions: str


def main(url: str, key: str, pairs: list[str]) -> None:
    models = {
        "openai": OpenaiChatModel("gpt-4.1", api_key=key, base_url=f"{url}/v1"),
        "anthropic": AnthropicChatModel("claude-sonnet-4-6", api_key=key, base_url=url),
    }
    for pair in pairs:
        provider, scenario = pair.split("=", 1)

        @prompt("{text}", model=models[provider])
        def ask(text: str) -> Weather: ...

        print(json.dumps({"case": provider, "weather": ask(scenario).model_dump()}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
