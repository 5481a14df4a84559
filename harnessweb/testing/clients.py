"""The clients a test gets from its harness: the official SDKs' clients and plain HTTP clients, each on the
in-process transport, so the code under test runs the real SDK against the bytes the server would send."""

from __future__ import annotations

from typing import Any

from harnessweb.testing.transport import library, transports

API_KEY = "harness-test-key"


class Clients:
    """Mixed into :class:`~harnessweb.testing.harness.Harness`: ``base_url`` and the transports reach ``self``."""

    base_url: str

    def transport(self, *, asynchronous: bool = False, library_name: str = "httpx2") -> Any:
        """The in-process transport itself, for an HTTP client built by hand."""
        sync, async_ = transports(library(library_name))
        return (async_ if asynchronous else sync)(self)

    def http_client(self, *, asynchronous: bool = False, library_name: str = "httpx2", **kw: Any) -> Any:
        """An ``httpx2`` (or, with ``library_name="httpx"``, ``httpx``) client answered by this harness, for any
        client that takes one (LangChain's ``http_client=``, pydantic-ai's providers); use it with ``base_url``."""
        lib = library(library_name)
        cls = lib.AsyncClient if asynchronous else lib.Client
        return cls(transport=self.transport(asynchronous=asynchronous, library_name=library_name), **kw)

    def openai_client(self, **kw: Any) -> Any:
        import openai

        return openai.OpenAI(**self._sdk_arguments(kw, "/v1", asynchronous=False))

    def async_openai_client(self, **kw: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**self._sdk_arguments(kw, "/v1", asynchronous=True))

    def anthropic_client(self, **kw: Any) -> Any:
        import anthropic

        return anthropic.Anthropic(**self._sdk_arguments(kw, "", asynchronous=False))

    def async_anthropic_client(self, **kw: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(**self._sdk_arguments(kw, "", asynchronous=True))

    def genai_client(self, **kw: Any) -> Any:
        """A ``google-genai`` client (sync on ``client``, async on ``client.aio``)."""
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self.base_url,
            httpx_client=self.http_client(),
            httpx_async_client=self.http_client(asynchronous=True),
        )
        kw.setdefault("api_key", API_KEY)
        kw.setdefault("http_options", options)
        return genai.Client(**kw)

    def cohere_client(self, **kw: Any) -> Any:
        """A ``cohere`` ``ClientV2`` (Cohere's v2 chat, streamed or not, and embed), on ``httpx``."""
        import cohere

        kw.setdefault("api_key", API_KEY)
        kw.setdefault("base_url", self.base_url)
        kw.setdefault("httpx_client", self.http_client(library_name="httpx"))
        return cohere.ClientV2(**kw)

    def _sdk_arguments(self, kw: dict[str, Any], prefix: str, *, asynchronous: bool) -> dict[str, Any]:
        kw.setdefault("api_key", API_KEY)
        kw.setdefault("base_url", self.base_url + prefix)
        kw.setdefault("http_client", self.http_client(asynchronous=asynchronous))
        return kw
