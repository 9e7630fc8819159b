"""Model providers: the `Provider` seam and its implementations.

The vendor classes are re-exported lazily (PEP 562): importing this package never
imports httpx; a vendor module is loaded when its class is first named or built.
"""

from typing import TYPE_CHECKING

from harness_core.providers._base import (
    CarriedState,
    Citation,
    CompletionRequest,
    CompletionResponse,
    Provider,
    ProviderAttempt,
    RestoresState,
    ServerToolCall,
    TokenCallback,
    WebAccess,
)
from harness_core.providers._config import ProviderConfig
from harness_core.providers._registry import PROVIDER_KINDS, build_provider, validate_web
from harness_core.providers._tls import TrustStore, trust_store
from harness_core.providers.fallback import Fallback

if TYPE_CHECKING:
    from harness_core.providers.anthropic import AnthropicProvider
    from harness_core.providers.openai import OpenAIProvider
    from harness_core.providers.openrouter import OpenRouterProvider
    from harness_core.providers.responses import OpenAIResponsesProvider

__all__ = [
    "PROVIDER_KINDS",
    "AnthropicProvider",
    "CarriedState",
    "Citation",
    "CompletionRequest",
    "CompletionResponse",
    "Fallback",
    "OpenAIProvider",
    "OpenAIResponsesProvider",
    "OpenRouterProvider",
    "Provider",
    "ProviderAttempt",
    "ProviderConfig",
    "RestoresState",
    "ServerToolCall",
    "TokenCallback",
    "TrustStore",
    "WebAccess",
    "build_provider",
    "trust_store",
    "validate_web",
]

_LAZY = {
    "AnthropicProvider": "harness_core.providers.anthropic",
    "OpenAIProvider": "harness_core.providers.openai",
    "OpenRouterProvider": "harness_core.providers.openrouter",
    "OpenAIResponsesProvider": "harness_core.providers.responses",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
