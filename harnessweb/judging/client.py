"""The judge's call: one request to an OpenAI-compatible Chat Completions endpoint or to Anthropic's Messages API
(``JudgeConfig.protocol``), and ``judge_with``, which turns whatever happens (an answer, garbage, an HTTP or network
error, a key that is a placeholder) into a verdict and never raises.

No Django (the settings come in as a ``JudgeConfig``) and no third-party HTTP client: the standard library's
``urllib`` is all one POST needs.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from typing import Any

from harnessweb.judging.verdicts import (
    JudgeInput,
    JudgeVerdict,
    Prompt,
    build_prompt,
    diagnostic_verdict,
    read_answer,
    skipped_verdict,
)

ERROR_BODY_CHARS = 300
PROTOCOLS = ("openai", "anthropic")
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MAX_TOKENS = 4096  # Messages requires a bound; a verdict is far shorter
# Keys that stand for "no key": seed 001's test placeholder, and what templates and examples leave behind.
PLACEHOLDER_KEYS = frozenset(
    {"test-api-key", "test-key", "changeme", "change-me", "placeholder", "dummy", "none", "null", "undefined"}
    | {"your-api-key", "your_api_key", "your-key", "api-key", "sk-...", "sk-xxx", "xxx"}
)
# An unexpanded variable ($VAR, ${VAR}, {{ VAR }}) or a template slot (<your key>): a CI file that forgot a secret.
_UNEXPANDED = re.compile(r"^(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|<[^<>]*>)$")


@dataclass(frozen=True)
class JudgeConfig:
    # openai: e.g. https://api.openai.com/v1, /chat/completions is added; anthropic: e.g. https://api.anthropic.com,
    # /v1/messages is added (only /messages when the base already ends in /v1).
    base_url: str
    api_key: str = ""
    model: str = ""
    timeout_s: float = 120.0
    protocol: str = "openai"

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if self.protocol == "anthropic":
            return base + ("/messages" if base.endswith("/v1") else "/v1/messages")
        return base + "/chat/completions"


@dataclass(frozen=True)
class Answer:
    """The judge's answer text and the tokens its usage reported (None when it reported none)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


class JudgeCallError(Exception):
    """The call failed (HTTP error, network error, an answer that is not a Chat Completion or a Message); the
    message says how. ``body`` is what came back, if anything."""

    def __init__(self, message: str, body: str = ""):
        super().__init__(message)
        self.body = body


def placeholder_reason(api_key: str) -> str:
    """Why ``api_key`` is no key ("" when it looks like a real one): empty, blank, seed 001's ``test-api-key`` or
    another well-known placeholder, an unexpanded variable. The key itself is named only when it is one of these."""
    key = api_key.strip()
    if not key:
        return "the judge's API key is not set (HARNESS_JUDGE_API_KEY)"
    if key.lower() in PLACEHOLDER_KEYS or _UNEXPANDED.match(key):
        return f"the judge's API key is the placeholder {key!r}, not a key (HARNESS_JUDGE_API_KEY)"
    return ""


def _request(config: JudgeConfig, prompt: Prompt) -> urllib.request.Request:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.protocol == "anthropic":
        payload: dict[str, Any] = {
            "model": config.model,
            "max_tokens": ANTHROPIC_MAX_TOKENS,
            "system": prompt.system,
            "messages": [{"role": "user", "content": prompt.user}],
            "temperature": 0,
        }
        headers |= {"x-api-key": config.api_key, "anthropic-version": ANTHROPIC_VERSION}
    else:
        payload = {
            "model": config.model,
            "messages": [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}],
            "temperature": 0,
        }
        headers["Authorization"] = f"Bearer {config.api_key}"
    return urllib.request.Request(config.url, data=json.dumps(payload).encode(), headers=headers, method="POST")


def _count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_reply(protocol: str, body: str) -> Answer:
    """The answer text and usage of a Chat Completion or a Message. Raises ValueError when it is neither."""
    data = json.loads(body)
    usage = data.get("usage")
    if protocol == "anthropic":
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise ValueError("content is not a list")
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        return Answer(text, _count(usage, "input_tokens"), _count(usage, "output_tokens"))
    content = data["choices"][0]["message"]["content"]
    text = content if isinstance(content, str) else ""
    return Answer(text, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))


def ask(config: JudgeConfig, prompt: Prompt) -> Answer:
    """The judge's answer. Raises JudgeCallError."""
    request = _request(config, prompt)
    try:
        with urllib.request.urlopen(request, timeout=config.timeout_s) as response:
            body = response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", errors="replace")
        raise JudgeCallError(f"HTTP {exc.code} from {config.url}: {body[:ERROR_BODY_CHARS]}", body) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise JudgeCallError(f"could not reach {config.url}: {reason}") from None
    try:
        return read_reply(config.protocol, body)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        shape = "an Anthropic message" if config.protocol == "anthropic" else "a chat completion"
        raise JudgeCallError(f"the answer from {config.url} is not {shape}", body) from None


def judge_with(data: JudgeInput, config: JudgeConfig) -> JudgeVerdict:
    """Ask the judge and read its verdict; on any failure the diagnostic verdict, marked as a judge error; without
    a usable key the skipped verdict, and nothing is sent. The prompt is kept on every verdict."""
    prompt = build_prompt(data)
    known = {"judge_model": config.model, "prompt_hash": prompt.digest(config.model), "prompt": prompt.text()}
    if reason := placeholder_reason(config.api_key):
        return replace(skipped_verdict(reason), **known)
    if config.protocol not in PROTOCOLS:
        error = f"unknown judge protocol {config.protocol!r}: use one of {', '.join(PROTOCOLS)}"
        return replace(diagnostic_verdict("", error), **known)
    try:
        answer = ask(config, prompt)
    except JudgeCallError as exc:
        return replace(diagnostic_verdict(exc.body, str(exc)), **known)
    except Exception as exc:  # never raise: a judge that broke is a judge error, not a crash of the batch
        return replace(diagnostic_verdict("", f"{type(exc).__name__}: {exc}"), **known)
    tokens = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens}
    return replace(read_answer(answer.text), **known, **tokens)
