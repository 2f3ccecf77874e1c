"""build_provider: the right adapter per protocol, imported only when needed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from gateway.config import Deployment
from gateway.model import ProviderKind
from gateway.providers import ADAPTERS, build_provider
from gateway.secrets.key import Secret
from tests.support.paths import REPO
from tests.support.provider_fixtures import replay


@pytest.mark.parametrize("kind", list(ADAPTERS), ids=[k.value for k in ADAPTERS])
def test_each_protocol_gets_its_adapter(kind: ProviderKind) -> None:
    d = Deployment(name="d", provider=kind, context_window=1000, model="m", base_url="https://h")
    provider = build_provider(d, Secret("sk-registry-test-000"), transport=replay())
    module, _, name = ADAPTERS[kind].partition(":")
    assert type(provider).__module__ == module
    assert type(provider).__name__ == name


def test_local_deployment_gets_the_offline_provider_without_a_key() -> None:
    d = Deployment(name="local", provider=ProviderKind.LOCAL, context_window=1_000_000)
    provider = build_provider(d, None)
    assert type(provider).__name__ == "LocalProvider"


def test_only_the_adapter_in_use_is_imported_and_a_good_answer_loads_no_classifier() -> None:
    script = textwrap.dedent(
        """
        import sys
        from gateway.config import Deployment
        from gateway.model import ProviderKind, Request
        import gateway.providers as providers
        assert "httpx" not in sys.modules, "importing the registry must not import httpx"
        from tests.support.provider_fixtures import replay
        d = Deployment(name="a", provider=ProviderKind.ANTHROPIC, context_window=1, model="m")
        provider = providers.build_provider(d, None, transport=replay("anthropic/message"))
        provider.complete(Request(system="s", question="q", max_output_tokens=5), timeout=5)
        assert "gateway.classify.errors" not in sys.modules, "the happy path classifies nothing"
        loaded = sorted(m for m in sys.modules if m.startswith("gateway.providers."))
        print(" ".join(loaded))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout.split()
    adapters = {spec.partition(":")[0] for spec in ADAPTERS.values()}
    assert [m for m in out if m in adapters] == ["gateway.providers.anthropic"]
    assert "gateway.providers.http" in out
    assert "gateway.providers.sse" not in out, "a whole (unstreamed) reply decodes no events"
