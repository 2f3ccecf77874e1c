"""11. A backlog: `support-ask batch -j 8` against `xargs -P 8 support-ask`, same input.

Both answer the same file of questions from the same loopback server (it answers each
POST at once, keep-alive), with the same config, articles, state file and attempt log.
`xargs -P 8 -n 1` starts one `support-ask QUESTION` per line, eight at a time, which is
what a team does today; `batch -j 8 --out FILE` asks them all in one process. The two
runs are interleaved, round by round, and both outputs are checked: every question
answered, once.

Figures: time per question (wall time / questions; its inverse is the throughput), as a
ratio to xargs (the target, at least 10x the throughput, is a ratio of at most 0.10);
CPU per question (user + system; for xargs, of every support-ask it waited for), which a
loaded machine disturbs less than wall time; and the peak RSS of the batch
process (`os.wait4`) for 1,000 and for 10,000 questions: memory flat in the number of
questions means the second about the first.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.context import Context
from bench.loopback import ANSWER, Loopback
from bench.procs import RunFailed, child_env, run_once
from bench.question import KEY_ENV, QUESTION, config_text, write_kb
from bench.stats import Measure, Row, Summary, Target, Unit

GROUP = "11 batch"
THROUGHPUT = Target.at_most(Measure.RATIO, 0.10, "<= 0.10x xargs (>= 10x q/s)")
FLAT = Target.at_most(Measure.RATIO, 1.20, "<= 1.20x (flat)")
JOBS = 8

# (questions per throughput round, rounds, the two sizes whose peak RSS is compared)
FULL = (1_000, 2, (1_000, 10_000))
SMOKE = (8, 1, (8, 40))


def write_questions(path: Path, n: int) -> Path:
    with path.open("w") as f:
        for i in range(1, n + 1):
            f.write(f"{QUESTION} (ticket {i})\n")
    return path


def run(ctx: Context) -> list[Row]:
    per_round, rounds, (small, large) = SMOKE if ctx.smoke else FULL
    work = ctx.folder("batch")
    home = ctx.folder("batch-home")
    kb = write_kb(work)
    env = child_env(home, {KEY_ENV: "sk-bench-not-a-real-key"})
    with Loopback() as server:
        config = work / "config.yaml"
        # "(ticket N)" is no word of the one article: the floor off, every line is answered.
        config.write_text(config_text(server.base_url, work, min_relevance=0.0))
        common = ["--config", str(config), "--state", str(work / "cooldowns.json"), "-a", str(kb)]
        questions = write_questions(work / f"q{per_round}.txt", per_round)

        def batch(source: Path, n: int) -> tuple[float, float, int]:
            out = work / "out.jsonl"
            argv = [*ctx.support_ask, "batch", str(source), "-j", str(JOBS), "-o", str(out)]
            done = run_once([*argv, "-q", "--progress-every", "0", *common], env=env, cwd=home)
            records = [json.loads(line) for line in out.read_text().splitlines()]
            answered = {r["id"] for r in records if r["answer"] == ANSWER}
            if done.code != 0 or len(records) != n or len(answered) != n:
                raise RunFailed(
                    f"batch exited {done.code} with {len(answered)} of {n} answered: "
                    f"{done.stderr[-1500:].decode(errors='replace')}"
                )
            return done.wall, done.cpu, done.maxrss

        def xargs() -> tuple[float, float]:
            argv = ["xargs", "-a", str(questions), "-d", "\n", "-P", str(JOBS), "-n", "1"]
            done = run_once([*argv, *ctx.support_ask, *common], env=env, cwd=home)
            answers = done.stdout.decode().splitlines()
            if done.code != 0 or answers != [ANSWER] * per_round:
                raise RunFailed(
                    f"xargs exited {done.code} with {len(answers)} lines: "
                    f"{done.stderr[-1500:].decode(errors='replace')}"
                )
            # wait4 counts the CPU of the children xargs waited for: every support-ask.
            return done.wall, done.cpu

        batch(questions, per_round)  # warm-up: byte-code and page caches
        walls: dict[str, list[float]] = {"batch": [], "xargs": []}
        cpus: dict[str, list[float]] = {"batch": [], "xargs": []}
        for i in range(rounds):
            for which in ("batch", "xargs") if i % 2 == 0 else ("xargs", "batch"):
                wall, cpu = batch(questions, per_round)[:2] if which == "batch" else xargs()
                walls[which].append(wall / per_round)
                cpus[which].append(cpu / per_round)

        rss: dict[int, list[float]] = {small: [], large: []}
        sources = {n: write_questions(work / f"q{n}.txt", n) for n in rss}
        for _ in range(rounds):
            for n, source in sources.items():
                rss[n].append(batch(source, n)[2])

    cand, base = Summary.of(walls["batch"]), Summary.of(walls["xargs"])
    note = f"{1 / cand.median:.0f} q/s vs {1 / base.median:.1f} q/s, {per_round} questions"
    return [
        Row(
            GROUP,
            f"batch -j {JOBS}: time per question",
            Unit.MILLIS,
            cand,
            base,
            f"xargs -P {JOBS} support-ask",
            THROUGHPUT,
            note=note,
        ),
        Row(
            GROUP,
            f"batch -j {JOBS}: CPU per question",
            Unit.MILLIS,
            Summary.of(cpus["batch"]),
            Summary.of(cpus["xargs"]),
            f"xargs -P {JOBS} support-ask (children's CPU)",
        ),
        Row(
            GROUP,
            f"batch peak RSS, {large:,} questions",
            Unit.MIB,
            Summary.of(rss[large]),
            Summary.of(rss[small]),
            f"batch peak RSS, {small:,} questions",
            FLAT,
        ),
    ]
