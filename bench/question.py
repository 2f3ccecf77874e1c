"""2 and 6. One answered question in a fresh process, against a loopback server that
answers at once, and against a minimal httpx script that sends the very same POST.

support-ask runs as a user would run it: a config with one OpenAI-compatible deployment
pointing at the loopback server, a small articles folder, its own state file and attempt
log in a scratch folder. The baseline script replays the exact request body support-ask
sent (captured by the server during the warm-up), so both do the same network work.
The same runs give the peak RSS of each (benchmark 6).
"""

from __future__ import annotations

from pathlib import Path

from bench.context import Context
from bench.loopback import ANSWER, Loopback
from bench.procs import Command, RunFailed, child_env, interleave, run_once
from bench.stats import Measure, Row, Summary, Target, Unit

GROUP = "2 one question"
RSS_GROUP = "6 peak RSS"
TARGET = Target.at_most(Measure.RATIO, 1.3, "<= 1.30x httpx script")
KEY_ENV = "BENCH_OPENAI_API_KEY"
QUESTION = "How do I reset my password?"

HTTPX_SCRIPT = """\
import os, sys
import httpx

url, body_file, key_env = sys.argv[1], sys.argv[2], sys.argv[3]
with open(body_file, "rb") as f:
    body = f.read()
headers = {"Authorization": "Bearer " + os.environ[key_env], "Content-Type": "application/json"}
reply = httpx.post(url, content=body, headers=headers, timeout=20)
reply.raise_for_status()
sys.stdout.write(reply.json()["choices"][0]["message"]["content"] + "\\n")
"""

ARTICLES = {
    "reset-password.md": "# Reset your password\n\nOpen Settings, then Security, and choose "
    "Reset password. A link arrives by email within five minutes.\n",
    "billing/invoices.md": "# Download invoices\n\nInvoices are under Billing > History. "
    "Each invoice is a PDF you can download or forward.\n",
    "two-factor.md": "# Two-factor authentication\n\nTurn it on under Settings > Security. "
    "Keep your recovery codes somewhere safe.\n",
}


def config_text(
    base_url: str, work: Path, *, min_relevance: float | None = None, refresh: str | None = None
) -> str:
    """The one loopback deployment's config; `min_relevance` (when given) sets the relevance
    floor and `refresh` articles.refresh, which a tree from before either would refuse as
    an unknown key."""
    given = {"min_relevance": min_relevance, "refresh": refresh}
    articles = "".join(f"  {key}: {value}\n" for key, value in given.items() if value is not None)
    return (
        ("articles:\n" + articles if articles else "")
        + f"""\
product: Acme Cloud
max_output_tokens: 400
deployments:
  - name: primary
    provider: openai
    model: gpt-4o-mini
    api_key_env: {KEY_ENV}
    base_url: {base_url}
    context_window: 128000
log:
  path: {work / "attempts.jsonl"}
"""
    )


def write_kb(root: Path) -> Path:
    kb = root / "kb"
    for name, text in ARTICLES.items():
        path = kb / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return kb


def run(ctx: Context) -> list[Row]:
    work = ctx.folder("question")
    home = ctx.folder("question-home")
    kb = write_kb(work)
    env = child_env(home, {KEY_ENV: "sk-bench-not-a-real-key"})
    expected = (ANSWER + "\n").encode()
    with Loopback() as server:
        config = work / "config.yaml"
        config.write_text(config_text(server.base_url, work))
        ask = Command(
            "support-ask QUESTION",
            [
                *ctx.support_ask,
                QUESTION,
                "--config",
                str(config),
                "--state",
                str(work / "cooldowns.json"),
                "--articles",
                str(kb),
            ],
            expect_stdout=expected,
        )
        # One run to capture the POST support-ask makes, for the baseline to replay.
        first = run_once(ask.argv, env=env, cwd=home)
        if first.code != 0 or first.stdout != expected or not server.last_body:
            raise RunFailed(
                f"support-ask did not answer from the loopback server (exit {first.code}): "
                f"{first.stdout[:300]!r} {first.stderr[-1500:].decode(errors='replace')}"
            )
        body = work / "body.json"
        body.write_bytes(server.last_body)
        script = work / "post.py"
        script.write_text(HTTPX_SCRIPT)
        url = f"{server.base_url}/chat/completions"
        httpx = Command(
            "httpx script",
            [ctx.python, str(script), url, str(body), KEY_ENV],
            expect_stdout=expected,
        )
        runs = interleave(
            [ask, httpx],
            rounds=ctx.sizes.proc_rounds,
            warmup=ctx.sizes.proc_warmup,
            env=env,
            cwd=home,
        )

    def of(name: str, field: str) -> Summary:
        return Summary.of([getattr(r, field) for r in runs[name]])

    a, h = ask.name, httpx.name
    return [
        Row(GROUP, a, Unit.MILLIS, of(a, "wall"), of(h, "wall"), h, TARGET),
        Row(GROUP, a + " CPU", Unit.MILLIS, of(a, "cpu"), of(h, "cpu"), h + " CPU"),
        Row(RSS_GROUP, a, Unit.MIB, of(a, "maxrss"), of(h, "maxrss"), h),
    ]
