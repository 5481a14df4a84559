"""Seed 002's names on top of the harness: ``mock_llm_calls`` (a mocked ``llm.get_model``), ``mock_llm_responses``,
and ``create_mock_get_model`` for code outside pytest (a context manager in unittest or a script). Seed 002's
``set(model, response)`` means "this model now answers this": it replaces the model's configured answers (a
conftest's default, then a test's own), where ``harness.set_response`` queues; ``sequence`` queues on purpose."""

from __future__ import annotations

from typing import Any

from harnessweb.testing.harness import Harness, Options


def _default_name(name: str | None) -> str:
    if name:
        return name
    import llm

    return llm.get_default_model()


def patch_llm(monkeypatch: Any, harness: Harness) -> None:
    """``llm.get_model(name)`` and ``llm.get_async_model(name)`` hand out this harness's models (one per name)."""
    import llm

    monkeypatch.setattr(llm, "get_model", lambda name=None, *args, **kw: harness.get_model(_default_name(name)))
    monkeypatch.setattr(
        llm, "get_async_model", lambda name=None, *args, **kw: harness.get_async_model(_default_name(name))
    )


def configure(harness: Harness, model: str | None, response: Any) -> None:
    """Seed 002's ``set(model, response)``: this model now answers this (a string as text, anything else as JSON),
    in place of what was set for it before (a conftest's default, say); its errors stay."""
    sequence(harness, model, [response])


def sequence(harness: Harness, model: str | None, responses: list[Any]) -> None:
    """These answers in order, then the last one stays, in place of what was set for this model before."""
    if not isinstance(responses, list | tuple) or not responses:
        raise TypeError(f"sequence takes a non-empty list of responses, got {responses!r}")
    for earlier in harness.answers.answers:
        if earlier.model == model:  # spent: never answers again (answers are only appended: server mode's script)
            earlier.used = max(earlier.used, 1)
    for response in responses:
        if isinstance(response, str):
            harness.set_response(text=response, model=model)
        else:
            harness.set_response(json=response, model=model)


class MockGetModel:
    """The mocked ``llm.get_model``: call it with a name for that model; ``get_model``, ``models``, ``reset`` and
    ``set_response`` as in seed 002 §3.3 (and ``sequence``, ``set_error``)."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness

    def __call__(self, name: str | None = None) -> Any:
        return self.harness.get_model(_default_name(name))

    get_model = __call__

    @property
    def models(self) -> dict[str, Any]:
        return self.harness.models

    def reset(self) -> None:
        """Seed 002's "Clear all models": the models handed out, their answers and history."""
        self.harness.reset()

    def set_response(self, model: str, response: Any) -> None:
        """This model now answers ``response`` (it replaces what was set for the model before)."""
        configure(self.harness, model, response)

    def sequence(self, model: str, responses: list[Any]) -> None:
        """This model answers ``responses`` in order, then the last one stays."""
        sequence(self.harness, model, responses)

    def set_error(self, model: str, error: BaseException | str, times: int | str = "always") -> None:
        self.harness.set_error(error, times=times, model=model)


class ResponseConfigurator:
    """Seed 002's ``mock_llm_responses``: ``set``, ``sequence``, ``set_error``, ``get_model``."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness

    def set(self, model: str, response: Any) -> None:
        """This model now answers ``response`` (it replaces what was set for the model before)."""
        configure(self.harness, model, response)

    def sequence(self, model: str, responses: list[Any]) -> None:
        """This model answers ``responses`` in order, then the last one stays."""
        sequence(self.harness, model, responses)

    def set_error(self, model: str, error: BaseException | str, times: int | str = "always") -> None:
        self.harness.set_error(error, times=times, model=model)

    def get_model(self, name: str) -> Any:
        return self.harness.get_model(name)


class _Patched(MockGetModel):
    """A :class:`MockGetModel` that, used as a context manager, is ``llm.get_model`` inside the block."""

    def __enter__(self) -> _Patched:
        import llm

        self._saved = (llm.get_model, llm.get_async_model)
        llm.get_model = self  # type: ignore[assignment]
        llm.get_async_model = lambda name=None, *a, **kw: self.harness.get_async_model(_default_name(name))
        return self

    def __exit__(self, *exc: object) -> None:
        import llm

        llm.get_model, llm.get_async_model = self._saved


def create_mock_get_model(
    responses: dict[str, Any] | None = None, side_effect: BaseException | None = None
) -> MockGetModel:
    """Seed 002 §3.2: a mocked ``llm.get_model`` answering ``responses`` (model name → response), or raising
    ``side_effect`` from every prompt. Call it directly, or ``with create_mock_get_model(...):`` to put it in place
    of ``llm.get_model`` for the block."""
    harness = Harness(options=Options())
    for model, response in (responses or {}).items():
        configure(harness, model, response)
    if side_effect is not None:
        harness.set_error(side_effect, times="always")
    return _Patched(harness)
