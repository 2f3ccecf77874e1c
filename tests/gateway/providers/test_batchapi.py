"""Each Batch API adapter against its provider's fake server (gateway.simulate.batch, an
httpx transport): a job sent, looked at until it is over, and every request's outcome
read back by custom id, including the failure shapes (an errored request, an expired one,
a cancelled job, a job refused as a whole, a wrong key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.config.validate import load_config_text
from gateway.model import ErrorKind, ProviderError, Request
from gateway.providers.batchapi import (
    BatchApi,
    BatchState,
    Entry,
    ItemKind,
    NoBatchApi,
    batch_api,
)
from gateway.secrets.key import Secret
from gateway.simulate.batch import (
    AnthropicBatchServer,
    BatchPlan,
    BatchServer,
    GeminiBatchServer,
    OpenAIBatchServer,
)

KEY = "sk-test-batchapi-0123456789abcdefghij"
DEPLOYMENTS = {
    "openai": "provider: openai\n    model: gpt-4o-mini",
    "azure": "provider: azure\n    model: batch-4o\n    base_url: https://acme.openai.azure.com"
    "\n    api_version: 2024-10-21",
    "anthropic": "provider: anthropic\n    model: claude-haiku-4-5",
    "gemini": "provider: gemini\n    model: gemini-2.5-flash",
}
ENTRIES = [
    Entry(
        f"line-{n}", Request(system="Answer from the passages.", question=q, max_output_tokens=200)
    )
    for n, q in enumerate(["How do I reset?", "Where is my invoice?", "Can I export?"], 1)
]


def server(provider: str, plan: BatchPlan) -> BatchServer:
    if provider == "anthropic":
        return AnthropicBatchServer(plan, key=KEY)
    if provider == "gemini":
        return GeminiBatchServer(plan, key=KEY)
    return OpenAIBatchServer(plan, key=KEY, azure=provider == "azure")


def api(provider: str, fake: BatchServer, key: str = KEY) -> BatchApi:
    text = (
        "product: Acme\ndeployments:\n  - name: first\n"
        f"    {DEPLOYMENTS[provider]}\n    api_key_env: THE_KEY\n    context_window: 128000\n"
    )
    config = load_config_text(text, "test.yaml", base_dir=Path("."))
    return batch_api(config.deployments[0], Secret(key), transport=fake)


def run_job(provider: str, plan: BatchPlan) -> tuple[dict[str, ItemKind], dict[str, str], object]:
    fake = server(provider, plan)
    client = api(provider, fake)
    snap = client.submit(ENTRIES, name="test")
    assert snap.state is BatchState.RUNNING and snap.id in fake.jobs
    looks = 0
    while not snap.state.over:
        snap = client.look(snap.id)
        looks += 1
    assert looks == max(plan.looks, 1)
    items = list(client.results(snap, [e.custom_id for e in ENTRIES]))
    kinds = {i.custom_id: i.kind for i in items}
    texts = {i.custom_id: i.reply.text for i in items if i.reply is not None}
    return kinds, texts, snap


PROVIDERS = sorted(DEPLOYMENTS)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_request_comes_back_under_its_custom_id(provider: str) -> None:
    kinds, texts, snap = run_job(provider, BatchPlan(looks=2))
    assert kinds == dict.fromkeys(("line-1", "line-2", "line-3"), ItemKind.SUCCEEDED)
    assert "How do I reset?" in texts["line-1"] and "Can I export?" in texts["line-3"]
    assert snap.counts.total == 3 and snap.counts.succeeded == 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_errored_and_an_expired_request_are_told_apart(provider: str) -> None:
    kinds, _, _ = run_job(provider, BatchPlan(errored=frozenset({0}), expired=frozenset({2})))
    if provider == "gemini":  # its window ends the whole job: nothing comes back but that
        assert kinds == dict.fromkeys(("line-1", "line-2", "line-3"), ItemKind.EXPIRED)
    else:
        assert kinds == {
            "line-1": ItemKind.ERRORED,
            "line-2": ItemKind.SUCCEEDED,
            "line-3": ItemKind.EXPIRED,
        }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_cancelled_job_ends_with_what_it_ran(provider: str) -> None:
    kinds, _, _ = run_job(provider, BatchPlan(cancel_from=1))
    assert kinds == {
        "line-1": ItemKind.SUCCEEDED,
        "line-2": ItemKind.CANCELED,
        "line-3": ItemKind.CANCELED,
    }


@pytest.mark.parametrize("provider", ["openai", "azure", "gemini"])
def test_a_job_refused_as_a_whole_is_failed_with_the_reason(provider: str) -> None:
    fake = server(provider, BatchPlan(rejected=True))
    client = api(provider, fake)
    snap = client.look(client.submit(ENTRIES, name="test").id)
    assert snap.state is BatchState.FAILED
    assert "invalid" in snap.detail or "validation" in snap.detail


def test_anthropic_refuses_an_invalid_batch_when_it_is_sent() -> None:
    client = api("anthropic", server("anthropic", BatchPlan(rejected=True)))
    with pytest.raises(ProviderError) as err:
        client.submit(ENTRIES, name="test")
    assert err.value.failure.kind is ErrorKind.BAD_REQUEST


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_key_is_an_auth_failure_that_never_shows_the_key(provider: str) -> None:
    wrong = "sk-wrong-batchapi-9876543210zyxwvutsrq"
    client = api(provider, server(provider, BatchPlan()), key=wrong)
    with pytest.raises(ProviderError) as err:
        client.submit(ENTRIES, name="test")
    assert err.value.failure.kind in (ErrorKind.AUTH, ErrorKind.BAD_REQUEST)
    assert wrong not in str(err.value.failure)


def test_a_local_deployment_has_no_batch_api_and_the_error_names_the_fix() -> None:
    config = load_config_text(
        "product: Acme\ndeployments:\n  - name: offline\n    provider: local\n",
        "test.yaml",
        base_dir=Path("."),
    )
    with pytest.raises(NoBatchApi) as err:
        batch_api(config.deployments[0], None)
    assert "offline (local) has no Batch API" in str(err.value)
    assert "--provider-batch" in err.value.fix


def test_gemini_results_in_a_responses_file_are_matched_by_their_key() -> None:
    fake = GeminiBatchServer(BatchPlan(errored=frozenset({1}), looks=0), key=KEY, files=True)
    client = api("gemini", fake)
    snap = client.look(client.submit(ENTRIES, name="test").id)
    items = {i.custom_id: i for i in client.results(snap, [e.custom_id for e in ENTRIES])}
    assert {c: i.kind for c, i in items.items()} == {
        "line-1": ItemKind.SUCCEEDED,
        "line-2": ItemKind.ERRORED,
        "line-3": ItemKind.SUCCEEDED,
    }
    reply = items["line-3"].reply
    assert reply is not None and "Can I export?" in reply.text  # the file came reversed
    assert (
        "GET",
        f"/download/v1beta/files/{snap.id.removeprefix('batches/')}-out:download",
    ) in fake.calls


def test_anthropic_results_are_fetched_only_from_the_api_itself() -> None:
    from gateway.providers.batchapi import Snapshot

    fake = AnthropicBatchServer(BatchPlan(looks=0), key=KEY)
    client = api("anthropic", fake)
    snap = client.look(client.submit(ENTRIES, name="test").id)
    elsewhere = Snapshot(
        snap.id, snap.state, snap.status, snap.counts, outputs=("https://evil.example/r",)
    )
    assert len(list(client.results(elsewhere, []))) == 3  # read from the API's own results
    assert all(path.startswith("/v1/messages/batches") for _, path in fake.calls)


def test_a_gemini_job_too_big_to_send_inline_goes_as_an_uploaded_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gateway.providers.batchapi import gemini

    monkeypatch.setattr(gemini, "INLINE_LIMIT", 100)  # these three requests are more
    fake = GeminiBatchServer(BatchPlan(looks=0), key=KEY)
    client = api("gemini", fake)
    snap = client.look(client.submit(ENTRIES, name="big").id)
    (uploaded,) = fake.uploads.values()
    assert uploaded.count(b'"key":"line-') == 3  # one {"key", "request"} a line
    items = {i.custom_id: i for i in client.results(snap, [e.custom_id for e in ENTRIES])}
    assert {i.kind for i in items.values()} == {ItemKind.SUCCEEDED}
    reply = items["line-2"].reply
    assert reply is not None and "Where is my invoice?" in reply.text
    assert fake.calls[:2] == [("POST", "/upload/v1beta/files")] * 2


@pytest.mark.parametrize("provider", ["openai", "azure"])
def test_an_openai_batch_file_holds_each_request_as_its_json_line(provider: str) -> None:
    # The line's body is the one a single request sends, spliced in as its last key: the
    # bytes json itself writes for the whole line.
    fake = server(provider, BatchPlan())
    assert isinstance(fake, OpenAIBatchServer)
    api(provider, fake).submit(ENTRIES, name="test")
    (uploaded,) = fake.files.values()
    model = "batch-4o" if provider == "azure" else "gpt-4o-mini"
    url = "/chat/completions" if provider == "azure" else "/v1/chat/completions"
    lines = [
        {
            "custom_id": e.custom_id,
            "method": "POST",
            "url": url,
            "body": {
                "messages": [
                    {"role": "system", "content": e.request.system},
                    {"role": "user", "content": e.request.question},
                ],
                "model": model,
                "max_completion_tokens": 200,
                "stream": False,
            },
        }
        for e in ENTRIES
    ]
    assert uploaded == b"".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for line in lines
    )
