"""The judge providers: one module each behind ``base.Provider``, and the registry.

The registry is the one list of providers: ``--provider``'s choices (``judge``, ``batch
prepare``) and their help, the API's check of ``provider=``, the defaults of ``--base-url``
and ``--api-key-env``, docs/judge.md's provider table (a test holds them equal) and the tests
parametrised over providers all read it. To add one, see "Add a judge provider" in
ARCHITECTURE.md.
"""

from __future__ import annotations

from evalstream._judge.providers.anthropic import Anthropic
from evalstream._judge.providers.azure import API_VERSION as AZURE_API_VERSION
from evalstream._judge.providers.azure import Azure
from evalstream._judge.providers.base import Provider
from evalstream._judge.providers.bedrock import DEFAULT_REGION as BEDROCK_REGION
from evalstream._judge.providers.bedrock import Bedrock
from evalstream._judge.providers.gemini import Gemini
from evalstream._judge.providers.openai import OpenAI

REGISTRY: dict[str, Provider] = {provider.name: provider for provider in (
    OpenAI(),
    Anthropic(),
    Azure(),
    Gemini(),
    Bedrock(),
)}
DEFAULT = OpenAI.name  # --provider's default: also every OpenAI-compatible server
NAMES = tuple(REGISTRY)


def get(name: str) -> Provider:
    """The provider of this name; KeyError for a name the registry does not hold (checked where
    the name is read: ``request.JudgeConfig``)."""
    return REGISTRY[name]


# The providers' own defaults that the command line's help names (it imports this module only).
__all__ = ["AZURE_API_VERSION", "BEDROCK_REGION", "NAMES", "REGISTRY", "Provider"]
