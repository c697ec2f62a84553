"""Azure OpenAI: OpenAI chat completions at a resource's deployments, and its Global Batch.

- Request (https://learn.microsoft.com/en-us/azure/ai-services/openai/reference):
  ``POST https://RESOURCE.openai.azure.com/openai/deployments/DEPLOYMENT/chat/completions
  ?api-version=2024-10-21`` with ``api-key: KEY``; the body is OpenAI's (the ``model``
  field names the deployment). ``--base-url`` is the resource's endpoint
  (``https://RESOURCE.openai.azure.com``, the deployment from ``--deployment``, else the
  model's name), or a deployment's own URL as the portal shows it, which may carry
  ``?api-version=...`` (the one query a base URL may carry; ``--api-version`` otherwise); a
  base URL ending in ``/openai/v1`` is Azure's v1 API (no api-version, the deployment in
  ``model``). Reasoning deployments (o-series, GPT-5) as OpenAI's: ``max_completion_tokens``,
  no temperature, ``--reasoning-effort`` (api-version 2024-12-01-preview or later).
- Answer, tokens: OpenAI's; request id ``apim-request-id``.
- Batch (https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/batch): OpenAI's
  flow at ``/openai/files`` and ``/openai/batches`` (with the api-version), request lines
  with ``"url": "/chat/completions"`` and the global-batch deployment as ``model``; at most
  100,000 requests and 200 MB a file.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from evalstream._judge.batch.formats import Limits
from evalstream._judge.providers.base import Config
from evalstream._judge.providers.openai import OpenAI

API_VERSION = "2024-10-21"  # the GA inference API (and its batch)
DEPLOYMENTS = "/openai/deployments/"
V1 = "/openai/v1"


class Azure(OpenAI):
    """Azure OpenAI chat completions and Global Batch."""

    name = "azure"
    title = "Azure OpenAI"
    speaks = "Azure OpenAI chat completions (deployments, api-version)"
    base_url = ""  # every resource has its own
    base_url_help = ("the resource's endpoint, https://RESOURCE.openai.azure.com (or a "
                     "deployment's URL, which may end in ?api-version=...)")
    key_env = "AZURE_OPENAI_API_KEY"
    key_always = True
    credential_headers = ("api-key",)
    request_id_header = "apim-request-id"
    url_query = ("api-version",)
    batch_endpoint = "/chat/completions"
    batch_speaks = "Azure OpenAI Global Batch (OpenAI's format, at the resource)"
    batch_limits = Limits(100_000, 200_000_000)
    settings = ("reasoning_effort", "deployment", "api_version")

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"api-key": api_key} if api_key else {}

    def body_model(self, config: Config) -> str:
        return config.deployment or config.model

    def _parts(self, config: Config) -> tuple[str, str, str]:
        """(the URL's path before the API, the deployment's path or "", the api-version or ""
        for the v1 API) of a config's base URL."""
        base, _, query = config.base_url.partition("?")
        given = parse_qs(query).get("api-version", [""])[0]
        version = given or config.api_version or API_VERSION
        path = urlsplit(base).path
        if path.endswith(V1):
            return base, "", ""
        if DEPLOYMENTS in path:
            return base, "", version
        return base, f"{DEPLOYMENTS}{self.body_model(config)}", version

    def url(self, config: Config) -> str:
        base, deployment, version = self._parts(config)
        query = f"?api-version={version}" if version else ""
        return f"{base}{deployment}{self.path}{query}"

    def endpoint(self, config: Config, path: str) -> str:
        base, _, version = self._parts(config)
        resource = base.split(DEPLOYMENTS)[0].removesuffix(V1)
        api = V1 if not version else "/openai"
        sep = "&" if "?" in path else "?"
        return f"{resource}{api}{path}" + (f"{sep}api-version={version}" if version else "")
