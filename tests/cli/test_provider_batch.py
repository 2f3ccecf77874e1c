"""`support-ask batch --provider-batch` and `batch --status ID` against the fake Batch API
servers of gateway.simulate.batch (an httpx transport in place of the network): the job
sent with each question's own passages, its id printed and kept, collected from another
home sharing the state, the provider's failures rescued by the engine (or not, with
--no-fallback), the batch price, and the mistakes a user makes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.runtime import wiring
from gateway.providers.batchapi import Caps
from gateway.providers.batchapi.parts import ENVELOPE_BYTES
from gateway.simulate.batch import (
    AnthropicBatchServer,
    BatchPlan,
    BatchServer,
    GeminiBatchServer,
    OpenAIBatchServer,
)
from tests.support.cli_runner import run

KEY = "sk-test-provider-batch-0123456789abcdef"
CONFIG = """\
product: Acme Cloud
policy: {{retries: 0, budget: 30, timeout: 10}}
deployments:
  - name: primary
    provider: {provider}
    model: {model}
    api_key_env: {key_env}
    base_url: {base_url}
    context_window: 128000
    price: {{input_per_mtok: 2.0, output_per_mtok: 8.0}}
    {extra}
  - name: spare
    provider: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    context_window: 128000
  - name: offline
    provider: local
long_context: null
"""
RESET = "Open Settings, then Security, and choose Reset password."
REFUND = "Refunds for an annual plan are paid back within five days."
ARTICLES = ("-a", "kb", "--max-article-tokens", "30")  # one passage each: its own
QUESTIONS = [
    {"id": "A1", "question": "How do I reset my password?"},
    {"id": "A2", "question": "When are refunds for an annual plan paid back?"},
    {"id": "A3", "question": "How do I reset my password? My email is jane@example.com"},
    {"id": "A4", "question": "Can I adopt a giraffe through your zoo programme?"},
]


@dataclass
class Fakes:
    """The Batch API's fake server, and the chat calls the engine made (the rescues)."""

    server: BatchServer
    chats: list[dict[str, Any]] = field(default_factory=list)

    def chat(self, request: httpx.Request) -> httpx.Response:
        """An ordinary answer, in the wire format of whoever was asked."""
        body = json.loads(request.content)
        self.chats.append(body)
        text = "Rescued [1]."
        if request.url.path.endswith("/v1/messages"):
            usage = {"input_tokens": 100, "output_tokens": 10}
            content = [{"type": "text", "text": text}]
            return httpx.Response(
                200,
                json={
                    "type": "message",
                    "content": content,
                    "stop_reason": "end_turn",
                    "usage": usage,
                },
            )
        if request.url.path.endswith(":generateContent"):
            candidate = {"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}
            usage = {"promptTokenCount": 100, "candidatesTokenCount": 10}
            return httpx.Response(200, json={"candidates": [candidate], "usageMetadata": usage})
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        usage = {"prompt_tokens": 100, "completion_tokens": 10}
        return httpx.Response(
            200, json={"choices": [{**choice, "finish_reason": "stop"}], "usage": usage}
        )


PROVIDERS = {
    "openai": ("gpt-4o-mini", "OPENAI_API_KEY", "https://api.openai.com/v1", ""),
    "azure": (
        "support-batch",
        "AZURE_OPENAI_API_KEY",
        "https://acme.openai.azure.com",
        "api_version: 2024-10-21",
    ),
    "anthropic": ("claude-haiku-4-5", "ANTHROPIC_API_KEY", "https://api.anthropic.com", ""),
    "gemini": (
        "gemini-2.5-flash",
        "GEMINI_API_KEY",
        "https://generativelanguage.googleapis.com/v1beta",
        "",
    ),
}


def setup(
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: BatchServer,
    provider: str,
    caps: Caps | None = None,
) -> Fakes:
    """A home asking through `server`; `caps`: what one batch holds, for the adapter as
    for the server, in place of the provider's own (a few questions past them)."""
    fakes = Fakes(server)
    built = wiring.build_engine
    batch_api = wiring.build_batch_api

    def build_engine(config: Any, **kwargs: Any) -> Any:
        return built(config, **{**kwargs, "transport": httpx.MockTransport(fakes.chat)})

    def build_batch_api(deployment: Any, environ: Any) -> Any:
        return batch_api(deployment, environ, transport=server, caps=caps)

    monkeypatch.setattr(wiring, "build_engine", build_engine)
    monkeypatch.setattr(wiring, "build_batch_api", build_batch_api)
    monkeypatch.chdir(tmp)
    for var in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, KEY)
    monkeypatch.setenv("SUPPORT_ASK_STATE", str(tmp / "shared" / "state.json"))
    monkeypatch.setenv("SUPPORT_ASK_LOG", str(tmp / "attempts.jsonl"))
    model, key_env, base_url, extra = PROVIDERS[provider]
    (tmp / "support-ask.yaml").write_text(
        CONFIG.format(
            provider=provider, model=model, key_env=key_env, base_url=base_url, extra=extra
        )
    )
    kb = tmp / "kb"
    kb.mkdir()
    (kb / "reset.md").write_text(f"# Reset your password\n\n{RESET}\n")
    (kb / "refunds.md").write_text(f"# Refunds\n\n{REFUND}\n")
    (tmp / "in.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return fakes


def records(out: str | Path) -> dict[str, dict[str, Any]]:
    text = Path(out).read_text() if isinstance(out, Path) else out
    return {r["id"]: r for r in map(json.loads, text.splitlines())}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def servers(provider: str, plan: BatchPlan, caps: Caps | None = None) -> BatchServer:
    if provider == "anthropic":
        return AnthropicBatchServer(plan, key=KEY, caps=caps)
    if provider == "gemini":
        return GeminiBatchServer(plan, key=KEY, caps=caps)
    return OpenAIBatchServer(plan, key=KEY, azure=provider == "azure", caps=caps)


def prompt_of(body: dict[str, Any]) -> str:
    """The system prompt of a request as each provider's body holds it."""
    if "systemInstruction" in body:
        return str(body["systemInstruction"]["parts"][0]["text"])
    if "system" in body:
        return str(body["system"])
    return str(body["messages"][0]["content"])


def test_a_backlog_is_sent_as_one_job_and_collected_with_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    fakes = setup(tmp_path, monkeypatch, servers(provider, BatchPlan(looks=2)), provider)
    sent = run(["batch", "in.jsonl", "--provider-batch", *ARTICLES])
    assert sent.exit_code == 0, sent.output
    batch_id = sent.stdout.strip()
    assert batch_id in fakes.server.jobs
    job = fakes.server.jobs[batch_id]
    assert len(job.requests) == 3
    prompts = {cid: prompt_of(body) for cid, body in job.requests}
    # Each question's own passages, best first, as `batch` selects them.
    assert RESET in prompts["line-1"] and REFUND not in prompts["line-1"]
    assert REFUND in prompts["line-2"] and RESET not in prompts["line-2"]
    assert "jane@example.com" not in json.dumps(job.requests)  # masked before it left
    kept = json.dumps(sorted((tmp_path / "shared").rglob("*.json"))[0].read_text())
    assert "reset" not in kept.lower() and KEY not in kept

    got = run(["batch", "--status", batch_id, *ARTICLES, "--poll-every", "0", "-o", "out.jsonl"])
    assert got.exit_code == 75, got.output  # still running after one look
    got = run(["batch", "--status", batch_id, *ARTICLES, "--poll-every", "0.01", "-o", "out.jsonl"])
    assert got.exit_code == 5, got.output  # A4 is a handoff: the most serious of the four
    out = records(tmp_path / "out.jsonl")
    vias = [out[q]["answered_via"] for q in ("A1", "A2", "A3", "A4")]
    assert vias == ["batch", "batch", "batch", "not_asked"]
    assert out["A4"]["handoff"]["reason"] == "not_covered"
    assert out["A1"]["citations"][0]["path"].endswith("reset.md")
    assert out["A1"]["attempts"][0]["detail"] == f"batch {batch_id}"
    usage = out["A1"]["usage"]
    full = (usage["input_tokens"] * 2.0 + usage["output_tokens"] * 8.0) / 1e6
    assert out["A1"]["cost_usd"] == pytest.approx(full / 2, abs=1e-8)
    assert fakes.chats == []


def send(tmp: Path) -> str:
    sent = run(["batch", "in.jsonl", "--provider-batch", *ARTICLES])
    assert sent.exit_code == 0, sent.output
    return str(sent.stdout.strip())


def collect(batch_id: str, *flags: str) -> Any:
    return run(["batch", "--status", batch_id, *ARTICLES, "--poll-every", "0.01", *flags])


def test_requests_the_provider_failed_or_expired_are_rescued_by_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    plan = BatchPlan(errored=frozenset({0}), expired=frozenset({1}))
    fakes = setup(tmp_path, monkeypatch, servers(provider, plan), provider)
    got = collect(send(tmp_path), "-o", "out.jsonl")
    out = records(tmp_path / "out.jsonl")
    vias = [out[q]["answered_via"] for q in ("A1", "A2", "A3")]
    # Gemini's window ends the whole job, with no results at all (its API documents so).
    assert vias == ["engine"] * 3 if provider == "gemini" else ["engine", "engine", "batch"]
    assert out["A1"]["answer"].startswith("Rescued") and out["A1"]["status"] == "answered"
    assert out["A1"]["cost_usd"] == pytest.approx((100 * 2.0 + 10 * 8.0) / 1e6)  # full price
    assert len(fakes.chats) == vias.count("engine")  # asked again with the passages it was sent
    assert RESET in prompt_of(fakes.chats[0])
    assert got.exit_code == 5, got.output


def test_no_fallback_records_them_as_failed_and_asks_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = BatchPlan(errored=frozenset({0}), expired=frozenset({1}))
    fakes = setup(tmp_path, monkeypatch, servers("openai", plan), "openai")
    got = collect(send(tmp_path), "--no-fallback")
    out = records(got.stdout)
    assert fakes.chats == []
    assert (out["A1"]["status"], out["A1"]["answered_via"]) == ("failed", "batch")
    assert out["A1"]["error"]["kind"] == "exhausted"  # errored: exit 69's kind
    assert out["A2"]["error"]["kind"] == "unavailable"  # expired: may succeed later (75)
    assert out["A3"]["status"] == "answered"
    assert got.exit_code == 69


def test_a_cancelled_job_is_collected_and_what_it_left_unrun_is_rescued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    fakes = setup(tmp_path, monkeypatch, servers(provider, BatchPlan(cancel_from=1)), provider)
    got = collect(send(tmp_path))
    out = records(got.stdout)
    assert [out[q]["answered_via"] for q in ("A1", "A2", "A3")] == ["batch", "engine", "engine"]
    assert len(fakes.chats) == 2


def test_an_interrupted_poll_is_resumed_from_another_home_sharing_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.clock import SystemClock

    setup(tmp_path, monkeypatch, servers("openai", BatchPlan(looks=3)), "openai")
    batch_id = send(tmp_path)

    def interrupted(self: object, seconds: float) -> None:
        raise KeyboardInterrupt  # Ctrl-C while it waits for the next look

    with monkeypatch.context() as m:
        m.setattr(SystemClock, "sleep", interrupted)
        assert collect(batch_id).exit_code == 130
    other = tmp_path / "elsewhere"
    other.mkdir()
    for name in ("support-ask.yaml", "kb"):
        (other / name).symlink_to(tmp_path / name)
    monkeypatch.chdir(other)
    monkeypatch.setenv("HOME", str(other))
    got = collect(batch_id)  # the questions file is found where the job says it was sent from
    assert got.exit_code == 5, got.output
    assert sorted(records(got.stdout)) == ["A1", "A2", "A3", "A4"]


def test_a_fleet_sharing_redis_collects_a_job_another_machine_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.redis_server import redis_server

    setup(tmp_path, monkeypatch, servers("openai", BatchPlan()), "openai")
    with redis_server(tmp_path / "redis") as redis:
        monkeypatch.setenv("SUPPORT_ASK_STATE", redis.url)
        batch_id = send(tmp_path)
        assert not (tmp_path / "shared").exists()  # kept in Redis, not on this machine
        monkeypatch.setenv("HOME", str(tmp_path / "second"))
        got = collect(batch_id)
    assert got.exit_code == 5, got.output
    assert records(got.stdout)["A1"]["answered_via"] == "batch"


def test_an_unknown_id_names_where_ids_come_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(tmp_path, monkeypatch, servers("openai", BatchPlan()), "openai")
    got = collect("batch_nope")
    assert got.exit_code == 66
    assert "no provider batch job 'batch_nope'" in got.stderr
    assert "the id `batch FILE --provider-batch` printed" in got.stderr
    assert "Traceback" not in got.output


def test_a_deployment_without_a_batch_api_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = servers("openai", BatchPlan())
    setup(tmp_path, monkeypatch, server, "openai")
    got = run(["batch", "in.jsonl", "--provider-batch", "-a", "kb", "-d", "offline"])
    assert got.exit_code == 2
    assert "the deployment offline (local) has no Batch API" in got.stderr
    assert "-d NAME" in got.stderr
    assert server.calls == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["batch", "-", "--provider-batch"], "cannot read them from stdin"),
        (["batch", "in.jsonl", "--no-fallback"], "--no-fallback is for a provider batch"),
        (["batch"], "batch needs a FILE of questions"),
    ],
)
def test_misused_flags_are_usage_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    setup(tmp_path, monkeypatch, servers("openai", BatchPlan()), "openai")
    got = run(args)
    assert got.exit_code == 2, got.output
    assert says in got.stderr


def test_a_line_edited_since_the_job_was_sent_is_asked_through_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = setup(tmp_path, monkeypatch, servers("openai", BatchPlan()), "openai")
    batch_id = send(tmp_path)
    edited = [{**QUESTIONS[0], "id": "B1"}, *QUESTIONS[1:]]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(q) + "\n" for q in edited))
    out = records(collect(batch_id).stdout)
    assert (out["B1"]["answered_via"], out["A2"]["answered_via"]) == ("engine", "batch")
    assert len(fakes.chats) == 1


def test_a_job_the_provider_refused_whole_is_rescued_question_by_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = setup(tmp_path, monkeypatch, servers("openai", BatchPlan(rejected=True)), "openai")
    got = collect(send(tmp_path))
    assert "failed: the input file failed validation" in got.stderr  # the provider's reason
    out = records(got.stdout)
    assert [out[q]["answered_via"] for q in ("A1", "A2", "A3")] == ["engine"] * 3
    assert len(fakes.chats) == 3


def test_collecting_prepares_the_questions_with_the_options_they_were_sent_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(tmp_path, monkeypatch, servers("openai", BatchPlan()), "openai")
    batch_id = send(tmp_path)  # sent with -a kb --max-article-tokens 30
    got = run(["batch", "--status", batch_id, "--poll-every", "0.01"])  # neither given
    assert got.exit_code == 5, got.output
    out = records(got.stdout)
    assert out["A1"]["answered_via"] == "batch"
    assert [a["path"] for a in out["A1"]["articles"]] == [str(tmp_path / "kb" / "reset.md")]
    assert out["A1"]["citations"][0]["path"].endswith("reset.md")


def lines_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_backlog_past_a_batchs_cap_goes_as_several_collected_as_one_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    caps = Caps(requests=2)  # three questions need a model: two batches
    server = servers(provider, BatchPlan(looks=2), caps)
    fakes = setup(tmp_path, monkeypatch, server, provider, caps)
    job_id = send(tmp_path)
    assert job_id not in fakes.server.jobs  # one id for the job, not one batch's
    sent = [[cid for cid, _ in job.requests] for job in fakes.server.jobs.values()]
    assert sent == [["line-1", "line-2"], ["line-3"]]  # in input order, each batch in its cap

    waiting = run(["batch", "--status", job_id, *ARTICLES, "--poll-every", "0"])
    assert waiting.exit_code == 75, waiting.output
    assert "0/3 done" in waiting.stderr  # the progress sums the batches' counts
    got = collect(job_id, "-o", "out.jsonl")
    assert got.exit_code == 5, got.output
    assert "3/3 done" in got.stderr
    out = lines_of(tmp_path / "out.jsonl")
    assert [r["id"] for r in out] == ["A1", "A2", "A3", "A4"]  # input order, once each
    assert [r["answered_via"] for r in out] == ["batch", "batch", "batch", "not_asked"]
    batches = list(fakes.server.jobs)
    assert [r["attempts"][0]["detail"] for r in out[:3]] == [
        f"batch {batches[0]}",
        f"batch {batches[0]}",
        f"batch {batches[1]}",
    ]
    assert fakes.chats == []


def test_the_bytes_of_a_batchs_file_split_it_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for home in ("one", "split"):
        (tmp_path / home).mkdir()
    whole = servers("openai", BatchPlan())
    setup(tmp_path / "one", monkeypatch, whole, "openai")
    send(tmp_path / "one")
    (job,) = whole.jobs.values()
    lines = whole.files[str(job.extra["input_file_id"])].splitlines(keepends=True)
    # Room for the largest request and half another: one request a batch.
    caps = Caps(bytes=ENVELOPE_BYTES + max(map(len, lines)) * 3 // 2)
    monkeypatch.undo()  # a second home, wired afresh
    server = servers("openai", BatchPlan(), caps)
    fakes = setup(tmp_path / "split", monkeypatch, server, "openai", caps)
    job_id = send(tmp_path / "split")
    assert [len(j.requests) for j in fakes.server.jobs.values()] == [1, 1, 1]
    out = records(collect(job_id).stdout)
    assert [out[q]["answered_via"] for q in ("A1", "A2", "A3")] == ["batch"] * 3


def test_a_job_of_several_batches_is_resumed_and_what_one_failed_is_rescued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caps = Caps(requests=2)
    plan = BatchPlan(errored=frozenset({0}))  # the first request of each batch fails
    fakes = setup(tmp_path, monkeypatch, servers("openai", plan, caps), "openai", caps)
    send(tmp_path)
    got = run(["batch", "in.jsonl", "--provider-batch", "--resume", *ARTICLES, "-o", "out.jsonl"])
    assert got.exit_code == 5, got.output
    out = lines_of(tmp_path / "out.jsonl")
    assert [r["id"] for r in out] == ["A1", "A2", "A3", "A4"]
    assert [r["answered_via"] for r in out] == ["engine", "batch", "engine", "not_asked"]
    assert len(fakes.chats) == 2


class SecondBatchFails(httpx.BaseTransport):
    """The server, but the second batch it is asked to create fails (a 500)."""

    def __init__(self, server: BatchServer) -> None:
        self.server, self.created = server, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/batches"):
            self.created += 1
            if self.created == 2:
                error = {"message": "The server had an error", "type": "server_error"}
                return httpx.Response(500, json={"error": error})
        return self.server.handle_request(request)


def test_a_batch_that_fails_to_go_leaves_those_sent_collectable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = wiring.build_batch_api
    caps = Caps(requests=2)
    fakes = setup(tmp_path, monkeypatch, servers("openai", BatchPlan(), caps), "openai", caps)
    failing = SecondBatchFails(fakes.server)
    monkeypatch.setattr(
        wiring, "build_batch_api", lambda d, env: real(d, env, transport=failing, caps=caps)
    )
    sent = run(["batch", "in.jsonl", "--provider-batch", *ARTICLES])
    assert sent.exit_code == 75, sent.output
    assert "sending batch 2 of 2 (the 1 sent are kept as job support-ask-" in sent.stderr
    job_id = sent.stderr.partition("kept as job ")[2].partition(":")[0]
    got = collect(job_id, "-o", "out.jsonl")
    assert got.exit_code == 5, got.output
    out = lines_of(tmp_path / "out.jsonl")
    assert [r["answered_via"] for r in out] == ["batch", "batch", "engine", "not_asked"]
    assert len(fakes.chats) == 1


def test_a_backlog_whose_every_question_is_past_a_batch_alone_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caps = Caps(bytes=ENVELOPE_BYTES + 10)  # no request is that small
    fakes = setup(tmp_path, monkeypatch, servers("openai", BatchPlan(), caps), "openai", caps)
    got = run(["batch", "in.jsonl", "--provider-batch", *ARTICLES])
    assert got.exit_code == 65, got.output
    assert "fits one of primary's batches alone" in got.stderr
    assert "without --provider-batch" in got.stderr and "Traceback" not in got.output
    assert fakes.server.jobs == {}
