"""The providers named in the settings.

Chat Completions APIs (``openai``, ``openai-compatible``) are spoken by ``openai_chat``,
with no SDK. OpenAI's Responses API and Anthropic's go through pydantic-ai models on our
own SDK clients. Registering a provider imports none of this: it loads when a model of the
provider is first resolved (``warm_up`` does it in the background once the server
listens), so a configured provider does not slow the start."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from partwire.config import ProviderConfig, Settings
from partwire.errors import ProviderError
from partwire.providers.base import LanguageModel
from partwire.providers.registry import register_provider

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI
    from pydantic_ai.models import Model

    from partwire.providers.openai_chat import ChatClient

CHAT_APIS = ("openai", "openai-compatible")


# The openai and anthropic SDKs import their optional aiohttp client whenever aiohttp is
# installed (it is, for Socket.IO): ~9 MB that partwire never uses, since the SDKs send
# through providers/transport.
_UNUSED_SDK_MODULES = ("openai._vendor.httpx_aiohttp", "anthropic._vendor.httpx_aiohttp")


def leave_out_unused_sdk_modules() -> None:
    """In a process partwire owns (``partwire serve``), before any SDK is imported: the SDK
    modules partwire never uses are marked missing, so the SDK takes its own fallback
    (``openai.DefaultAioHttpClient`` then says aiohttp is not installed). A library user's
    process is left alone."""
    for name in _UNUSED_SDK_MODULES:
        if name.split(".", 1)[0] not in sys.modules:  # too late once its SDK is loaded
            sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError


class ProviderClient:
    """One client per configured provider (pooled connections), made on first use.

    SDK retries are off (``max_retries=0``): the session loop retries, visibly.
    """

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self._chat: ChatClient | None = None
        self._openai: AsyncOpenAI | None = None
        self._anthropic: AsyncAnthropic | None = None
        self._models: dict[str, Model] = {}

    def chat(self) -> ChatClient:
        from partwire.providers.openai_chat import ChatClient

        if self._chat is None:
            self._chat = ChatClient(self.config)
        return self._chat

    def model(self, model_id: str) -> Model:
        """The pydantic-ai model (Responses and Anthropic APIs), made once per model id
        (making one looks up its profile and its context window in the price catalogue:
        ~0.5 ms a request otherwise)."""
        found = self._models.get(model_id)
        if found is None:
            found = self._models[model_id] = self._make_model(model_id)
        return found

    def _make_model(self, model_id: str) -> Model:
        if self.config.api == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            return AnthropicModel(
                model_id, provider=AnthropicProvider(anthropic_client=self._anthropic_client())
            )
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(openai_client=self._openai_client())
        return OpenAIResponsesModel(model_id, provider=provider)

    def _refuse_if_blocked(self) -> None:
        if self.config.blocked:
            raise ProviderError(self.config.blocked, kind="auth", provider_id=self.config.id)

    def _openai_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        from partwire.providers.transport import provider_http_client

        self._refuse_if_blocked()
        if self._openai is None:
            self._openai = AsyncOpenAI(
                http_client=provider_http_client(follow_redirects=True),
                api_key=self.config.api_key or "not-needed",  # local servers need no key
                base_url=self.config.base_url,
                default_headers=self.config.headers or None,
                timeout=self.config.timeout_s,
                max_retries=0,
            )
        return self._openai

    def _anthropic_client(self) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        from partwire.providers.transport import provider_http_client

        self._refuse_if_blocked()
        if self._anthropic is None:
            self._anthropic = AsyncAnthropic(
                http_client=provider_http_client(follow_redirects=True),
                api_key=self.config.api_key or "",
                base_url=self.config.base_url,
                default_headers=self.config.headers or None,
                timeout=self.config.timeout_s,
                max_retries=0,
            )
        return self._anthropic

    async def close(self) -> None:
        self._models.clear()
        if self._chat is not None:
            await self._chat.close()
            self._chat = None
        if self._openai is not None:
            await self._openai.close()
            self._openai = None
        if self._anthropic is not None:
            await self._anthropic.close()
            self._anthropic = None


def _factory(client: ProviderClient) -> Callable[[str, Settings], LanguageModel]:
    def make(model_id: str, settings: Settings) -> LanguageModel:
        known = client.config.models.get(model_id)
        if client.config.api in CHAT_APIS:
            from partwire.providers.openai_chat import OpenAIChatModel

            return OpenAIChatModel(client.chat(), model_id, known)
        from partwire.providers.library import LibraryModel

        return LibraryModel(
            client.config.id,
            model_id,
            lambda: client.model(model_id),
            known,
            base_url=client.config.base_url,
        )

    return make


def register(settings: Settings) -> list[ProviderClient]:
    """Register every configured provider; the caller closes the clients at shutdown."""
    clients = [ProviderClient(config) for config in settings.providers.values()]
    for client in clients:
        models = tuple(client.config.models)
        register_provider(client.config.id, _factory(client), models, open_ended=True)
    return clients


def warm_up(apis: set[str]) -> None:
    """Import what the first model call of these APIs needs (on a worker thread, after
    the start): only the SDKs the configured providers use (Chat Completions use none)."""
    if apis & set(CHAT_APIS):
        import partwire.providers.openai_chat
    if apis - set(CHAT_APIS):
        import partwire.providers.library  # noqa: F401
    if "anthropic" in apis:
        import pydantic_ai.models.anthropic
    if "openai-responses" in apis:
        import pydantic_ai.models.openai  # noqa: F401
