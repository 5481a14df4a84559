"""Answers without a scenario (server test mode): an instruction block in the last user message says what to
answer; anything else gets the deterministic lorem fallback, ``5 + |FNV-1a-32(message)| % 496`` lorem words and the
user's message echoed. Pure.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from itertools import accumulate
from typing import Any

import orjson

from harnessweb.engine import shapes, tokens
from harnessweb.engine.exchange import (
    FALLBACK_CHUNK_WORDS,
    Block,
    ChatRequest,
    Reply,
    short_id,
    sign_thinking,
)

INSTRUCTION_START = "<|instruction_start|>"
INSTRUCTION_END = "<|instruction_end|>"
REASON_MARKER = "\nReason:"
FALLBACK_INTERVAL_MS = 100  # with 5-word chunks: 50 words a second
LOREM_WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "ut",
    "enim",
    "ad",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "ut",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat",
    "duis",
    "aute",
    "irure",
    "dolor",
    "in",
    "reprehenderit",
    "in",
    "voluptate",
    "velit",
    "esse",
    "cillum",
    "dolore",
    "eu",
    "fugiat",
    "nulla",
    "pariatur",
    "excepteur",
    "sint",
    "occaecat",
    "cupidatat",
    "non",
    "proident",
    "sunt",
    "in",
    "culpa",
    "qui",
    "officia",
    "deserunt",
    "mollit",
    "anim",
    "id",
    "est",
    "laborum",
]


def stable_hash(text: str) -> int:
    """FNV-1a over UTF-8, as a signed 32-bit integer: the same on every platform and run."""
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


# The lorem of up to _LOREM_KEPT words is a slice of one text built once (a per-call join of up to 500 words cost
# about 0.08 ms); _LOREM_ENDS[n] is where its n-th word ends. lorem_length's longest is 500 words.
_LOREM_KEPT = 512
_LOREM_CYCLE = " ".join(LOREM_WORDS)
_LOREM_TEXT = " ".join(LOREM_WORDS[i % len(LOREM_WORDS)] for i in range(_LOREM_KEPT))
_LOREM_ENDS = (0, *accumulate(len(LOREM_WORDS[i % len(LOREM_WORDS)]) + (i > 0) for i in range(_LOREM_KEPT)))


def lorem(count: int) -> str:
    """``count`` words of the lorem word list, cycled, one space between words ("" for none)."""
    if count <= 0:
        return ""
    if count <= _LOREM_KEPT:
        return _LOREM_TEXT[: _LOREM_ENDS[count]]
    cycles, rest = divmod(count, len(LOREM_WORDS))  # an instruction's longer text: whole cycles, then a slice
    return " ".join([_LOREM_CYCLE] * cycles + ([_LOREM_TEXT[: _LOREM_ENDS[rest]]] if rest else []))


def lorem_length(message: str) -> int:
    return 5 + abs(stable_hash(message)) % 496


def _is_length(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_instruction(message: str) -> tuple[dict[str, Any] | None, str]:
    start = message.find(INSTRUCTION_START)
    if start < 0:
        return None, ""
    end = message.find(INSTRUCTION_END, start)
    if end < 0:
        return None, "instruction block has no end marker"
    try:
        data = orjson.loads(message[start + len(INSTRUCTION_START) : end])
    except orjson.JSONDecodeError as exc:
        return None, f"instruction block is not valid JSON: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or not data["messages"]:
        return None, "instruction block needs a non-empty messages array"
    for index, entry in enumerate(data["messages"]):
        ok = isinstance(entry, dict) and (
            (isinstance(entry.get("text_message"), dict) and _is_length(entry["text_message"].get("length")))
            or (
                isinstance(entry.get("tool_call"), list)
                and bool(entry["tool_call"])
                and all(
                    isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("args", {}), dict)
                    for c in entry["tool_call"]
                )
            )
        )
        if not ok:
            return None, f"instruction messages[{index}] is neither text_message {{length}} nor a non-empty tool_call"
    reasoning = data.get("reasoning")
    if reasoning is not None and not (isinstance(reasoning, dict) and _is_length(reasoning.get("length"))):
        return None, "instruction reasoning must be {length: int}"
    return data, ""


def _wrap(id_message: str, body: str) -> str:
    return f"{id_message} {body} {id_message}" if id_message else body


def instruction_reply(data: dict[str, Any], request: ChatRequest, pacing_enabled: bool, key: str) -> Reply:
    id_message = str(data.get("id_message") or "")
    reasoning_length = (data.get("reasoning") or {}).get("length")
    seed = f"instruction:{short_id(request.last_user)}"
    blocks: list[Block] = []
    for index, entry in enumerate(data["messages"]):
        if "text_message" in entry:
            if reasoning_length:
                text = _wrap(id_message, lorem(reasoning_length))
                blocks.append(Block(type="reasoning", text=text, signature=sign_thinking(text, key), choice=index))
            blocks.append(
                Block(type="text", text=_wrap(id_message, lorem(entry["text_message"]["length"])), choice=index)
            )
        else:
            for n, call in enumerate(entry["tool_call"]):
                blocks.append(
                    Block(
                        type="tool_call",
                        call_id=f"call_{short_id(f'{seed}:{index}:{n}')}",
                        derived_id=True,
                        name=call["name"],
                        arguments=orjson.dumps(call.get("args", {})).decode(),
                        choice=index,
                    )
                )
    # Seed 004: one finish chunk after all the messages.
    return replace(_fallback_reply(tuple(blocks), request, pacing_enabled, seed), single_finish=True)


@lru_cache(maxsize=256)
def _lorem_text(message: str, choice: int) -> str:
    """A choice's lorem and the echo: the user's message, verbatim, after it. Kept per message (a test sends the
    same prompts again): the hash of a long message is a Python loop over its bytes, and the same text object each
    time finds its token count in the counter's cache without hashing 3 KB again."""
    body = lorem(lorem_length(message if choice == 0 else f"{message}\x1f{choice}"))
    return f"{body} {message}" if message else body


def lorem_reply(request: ChatRequest, pacing_enabled: bool, key: str) -> Reply:
    """The lorem, with the user's message echoed; each further choice a request asks for (``n``) gets a length
    of its own (the hash of the message and the choice's number)."""
    message = request.last_user
    blocks = []
    for choice in range(request.choices):
        echoed = _lorem_text(message, choice)
        if REASON_MARKER in message:
            blocks.append(Block("reasoning", text=echoed, signature=sign_thinking(echoed, key), choice=choice))
        blocks.append(Block("text", text=echoed, choice=choice))
    return _fallback_reply(tuple(blocks), request, pacing_enabled, f"lorem:{short_id(message)}")


def demanded(blocks: tuple[Block, ...], request: ChatRequest, seed: str) -> tuple[Block, ...]:
    """The blocks as the request demands them: a required tool call is made (under a forced tool to it, under
    ``required`` / ``any`` to the first tool allowed, in the order offered), its arguments valid against the tool's
    parameter schema, unless the blocks call an allowed tool already; a structured output gets JSON valid against
    its schema. Reasoning stays; both are deterministic (``seed``)."""
    reasoning = tuple(b for b in blocks if b.type == "reasoning")
    if request.required_tools:
        if any(b.type == "tool_call" and b.name in request.required_tools for b in blocks):
            return blocks
        name = request.required_tools[0]
        parameters = dict(request.tool_schemas).get(name)
        schema = orjson.loads(parameters) if parameters else {"type": "object"}
        arguments = orjson.dumps(shapes.instance(schema, f"{seed}:{name}")).decode()
        call_id = f"call_{short_id(f'{seed}:forced')}"
        return (*reasoning, Block("tool_call", call_id=call_id, derived_id=True, name=name, arguments=arguments))
    if request.schema_json:
        value = shapes.instance(orjson.loads(request.schema_json), seed)
        return (*reasoning, Block("text", text=orjson.dumps(value).decode()))
    return blocks


def _fallback_reply(blocks: tuple[Block, ...], request: ChatRequest, pacing_enabled: bool, seed: str) -> Reply:
    blocks = demanded(blocks, request, seed)
    has_tools = any(b.type == "tool_call" for b in blocks)
    return Reply(
        blocks=blocks,
        finish="tool_calls" if has_tools else "stop",
        usage=tokens.counted(request, blocks),
        chunk_words=FALLBACK_CHUNK_WORDS,
        interval_ms=FALLBACK_INTERVAL_MS if pacing_enabled else 0,
        id_seed=seed,
    )
