"""The judge's call: one Chat Completions request to any OpenAI-compatible endpoint, and ``judge_with``, which
turns whatever happens (an answer, garbage, an HTTP or network error) into a verdict and never raises.

No Django (the settings come in as a ``JudgeConfig``) and no third-party HTTP client: the standard library's
``urllib`` is all one POST needs.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, replace

from runs_app.judging.verdicts import JudgeInput, JudgeVerdict, Prompt, build_prompt, diagnostic_verdict, read_answer

ERROR_BODY_CHARS = 300


@dataclass(frozen=True)
class JudgeConfig:
    base_url: str  # e.g. https://api.openai.com/v1: the path /chat/completions is added
    api_key: str = ""
    model: str = ""
    timeout_s: float = 120.0

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


class JudgeCallError(Exception):
    """The call failed (HTTP error, network error, an answer that is not a Chat Completion); the message says
    how. ``body`` is what came back, if anything."""

    def __init__(self, message: str, body: str = ""):
        super().__init__(message)
        self.body = body


def ask(config: JudgeConfig, prompt: Prompt) -> str:
    """The judge's answer text. Raises JudgeCallError."""
    payload = {
        "model": config.model,
        "messages": [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}],
        "temperature": 0,
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    request = urllib.request.Request(config.url, data=json.dumps(payload).encode(), headers=headers, method="POST")
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
        content = json.loads(body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise JudgeCallError(f"the answer from {config.url} is not a chat completion", body) from None
    return content if isinstance(content, str) else ""


def judge_with(data: JudgeInput, config: JudgeConfig) -> JudgeVerdict:
    """Ask the judge and read its verdict; on any failure the diagnostic verdict, marked as a judge error."""
    prompt = build_prompt(data)
    known = {"judge_model": config.model, "prompt_hash": prompt.digest(config.model)}
    try:
        raw = ask(config, prompt)
    except JudgeCallError as exc:
        return replace(diagnostic_verdict(exc.body, str(exc)), **known)
    except Exception as exc:  # never raise: a judge that broke is a judge error, not a crash of the batch
        return replace(diagnostic_verdict("", f"{type(exc).__name__}: {exc}"), **known)
    return replace(read_answer(raw), **known)
