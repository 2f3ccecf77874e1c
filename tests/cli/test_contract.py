"""The output contract as a caller of the real process sees it: SIGTERM, SIGHUP and
Ctrl-C stop a run at once with a result, the time budget holds on the wall clock from the
process's start, and `--json` prints an object even for a command line Typer rejects.

The providers are one server on 127.0.0.1: OpenAI (primary) answers 429, Anthropic
(fallback) never answers, so a run is reliably mid-call when the test acts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.knowledge.reading import WORKER_ENDED
from tests.cli.test_process import support_ask_env
from tests.support.cli_runner import write_loopback_workdir
from tests.support.helpcentre import write_centre
from tests.support.loopback import Exchange, LoopbackServer

END = 30  # no run here should come near this: a hang fails the test instead of the suite

# Each stop signal, the README's exit code for it, and what the run says.
STOPPED_BY = pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGTERM, 143, "stopped by SIGTERM"),
        (signal.SIGHUP, 129, "stopped by SIGHUP"),
        (signal.SIGINT, 130, "interrupted (Ctrl-C)"),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)


class Providers:
    def __init__(self) -> None:
        self.server = LoopbackServer(self.handle)
        self.fallback_waits = threading.Event()  # the fallback's call is in flight

    def handle(self, ex: Exchange) -> None:
        if ex.path.endswith("/chat/completions"):
            error = {"message": "Rate limit reached", "type": "requests"}
            ex.respond(429, {"error": {**error, "code": "rate_limit_exceeded"}})
        else:
            self.fallback_waits.set()
            ex.hang()  # accepts the request, never says a word


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers()
    with p.server:
        yield p


def workdir(tmp_path: Path, providers: Providers, *, budget: int) -> Path:
    write_loopback_workdir(
        tmp_path, providers.server.url, "Open Settings.", retries=0, budget=budget, timeout=60
    )
    return tmp_path


def environment(workdir: Path) -> dict[str, str]:
    return {**support_ask_env(workdir), "XDG_CACHE_HOME": str(workdir / "xdg")}


def start(
    workdir: Path, *args: str, stdin: int = subprocess.DEVNULL, group: bool = False
) -> subprocess.Popen[str]:
    """`group`: the run leads a process group of its own, as a terminal's job does."""
    return subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        cwd=workdir,
        env=environment(workdir),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=group,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=END)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@STOPPED_BY
def test_a_signal_stops_the_run_at_once_with_a_result_and_the_question_logged(
    tmp_path: Path, providers: Providers, signum: int, code: int, said: str
) -> None:
    home = workdir(tmp_path, providers, budget=60)
    proc = start(home, "How do I reset my password?", "-a", "kb", "--json")
    # The primary's 429 has cooled it down (the state file is written) and the fallback's
    # call is in flight, with 60 s of budget left.
    assert providers.fallback_waits.wait(END), "the fallback was never called"
    asked = time.monotonic()
    proc.send_signal(signum)
    out, err = finish(proc)
    took = time.monotonic() - asked

    assert proc.returncode == code, err
    # At once, not when the budget or the timeout runs out (60 s each): the bound is the
    # slack a loaded machine needs to write the log, the state and the JSON and exit.
    assert took < 15
    assert said in err
    assert "Traceback" not in err
    result = json.loads(out)
    assert (result["status"], result["answer"]) == ("failed", None)
    assert result["error"]["kind"] == "interrupted" and said in result["error"]["message"]
    # The call in flight is one the question made: listed, with the input it was sending.
    assert [(a["deployment"], a["decision"]) for a in result["attempts"]] == [
        ("primary", "fail_over"),
        ("fallback", "interrupted"),
    ]
    assert result["input_tokens"] > 0 and result["articles"]
    state = json.loads((home / "state.json").read_text())  # whole, valid, the cooldown kept
    assert "primary" in json.dumps(state)
    logged = [json.loads(line) for line in (home / "attempts.jsonl").read_text().splitlines()]
    assert [(line["deployment"], line["decision"], line["outcome"]) for line in logged] == [
        ("primary", "fail_over", "failed"),
        ("fallback", "interrupted", "failed"),
    ]


def blocked_by_thread(pid: int) -> dict[str, set[int]]:
    """Each thread of process `pid` (by name) and the signals it blocks, as the kernel says."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines())
        mask = int(fields["SigBlk"], 16)
        threads[f"{fields['Name']}/{task.name}"] = {n for n in range(1, 65) if mask >> (n - 1) & 1}
    return threads


def all_stopped(pid: int) -> bool:
    """Every thread of process `pid` stopped (a SIGSTOP is delivered, not yet taken, when
    `kill` returns)."""
    return all(
        (task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        for task in Path(f"/proc/{pid}/task").iterdir()
    )


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_signal_sent_while_the_run_was_stopped_stops_it_once_continued(
    tmp_path: Path, providers: Providers, signum: int, code: int
) -> None:
    """Sent while the process is stopped, the signal goes to whichever thread wakes first
    on SIGCONT; a helper thread's (the deadline watchdog's) would leave the main thread in
    its read until the 60 s timeout. Every thread but the main one blocks it."""
    home = workdir(tmp_path, providers, budget=60)
    proc = start(home, "How do I reset my password?", "-a", "kb", "--json")
    assert providers.fallback_waits.wait(END), "the fallback was never called"
    threads = blocked_by_thread(proc.pid)
    main = f"{Path(f'/proc/{proc.pid}/comm').read_text().strip()}/{proc.pid}"
    helpers = {name: mask for name, mask in threads.items() if name != main}
    assert helpers, threads  # the watchdog, at least, is running
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    assert all(stops <= mask for mask in helpers.values()), helpers
    assert not stops & threads[main]

    asked = time.monotonic()
    proc.send_signal(signal.SIGSTOP)
    proc.send_signal(signum)
    proc.send_signal(signal.SIGCONT)
    out, err = finish(proc)

    assert proc.returncode == code, err
    assert time.monotonic() - asked < 15  # the slack a loaded machine needs, against 60 s
    assert json.loads(out)["error"]["kind"] == "interrupted"


def pooled_centre(root: Path) -> None:
    """A help centre a first index reads in a pool (gateway.knowledge.reading)."""
    pages = write_centre(root / "part0", 40, sections=12)
    for copy in range(1, 6):  # five times as many files at little cost: the pool's size
        for page in pages:
            folder = root / f"copy{copy}" / page.parent.name
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(page, folder)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_ctrl_c_during_a_first_index_read_in_a_pool_stops_it_at_once(tmp_path: Path) -> None:
    """The reading pool's own threads (gateway.knowledge.reading) block the stop signals
    as the tool's do: sent while the process was stopped, the Ctrl-C is the main thread's,
    which stops the index with the README's code."""
    pooled_centre(tmp_path / "kb")
    proc = start(tmp_path, "index", "kb")
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}

    def reading(threads: dict[str, set[int]]) -> bool:
        """The pool's manager and feeder have started, and the main thread is between two
        submits (it blocks the stop signals for each)."""
        main = [mask for name, mask in threads.items() if name.endswith(f"/{proc.pid}")]
        return len(threads) >= 3 and not stops & main[0]

    # Looked at while stopped: seen running, the main thread can enter a submit between
    # the look and the stop. Not yet between two submits: it runs on and is looked at again.
    deadline = time.monotonic() + END
    while True:
        assert proc.poll() is None, finish(proc)
        proc.send_signal(signal.SIGSTOP)
        while not all_stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        threads = blocked_by_thread(proc.pid)
        if reading(threads) or time.monotonic() > deadline:
            break
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    helpers = {name: mask for name, mask in threads.items() if not name.endswith(f"/{proc.pid}")}
    assert reading(threads), threads
    assert all(stops <= mask for mask in helpers.values()), helpers

    asked = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGCONT)
    _, err = finish(proc)

    assert proc.returncode == 130, err
    assert time.monotonic() - asked < 15  # the slack a loaded machine needs
    assert "interrupted (Ctrl-C)" in err and "Traceback" not in err


class Group:
    """The processes of the process group a run leads, as /proc says: the pool's fork
    server (the run's child that serves forks), the workers it forked, their CPU time."""

    def __init__(self, leader: int) -> None:
        self.leader = leader

    def members(self) -> dict[int, tuple[int, str, int]]:
        """Each member but the leader: its parent, command line, and CPU time in ticks."""
        out = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or entry.name == str(self.leader):
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:  # ended meanwhile
                continue
            if int(fields[2]) == self.leader and fields[0] != "Z":  # in its group, not ended
                out[int(entry.name)] = (int(fields[1]), command, int(fields[11]) + int(fields[12]))
        return out

    def workers(self) -> list[int]:
        """The workers' CPU times (empty before the fork server has forked one)."""
        members = self.members()
        server = [pid for pid, (_, command, _) in members.items() if "forkserver" in command]
        return [cpu for parent, _, cpu in members.values() if parent in server]


# When the Ctrl-C comes: once the fork server's workers are forked (they wait for a first
# batch), once one has read for 50 ms. (Sent as the server starts, it comes while this
# process creates the index, which reads it as an index it cannot keep: another matter.)
STAGES = {
    "workers": lambda group: bool(group.workers()),
    "reading": lambda group: any(cpu >= 5 for cpu in group.workers()),
}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
@STOPPED_BY
def test_a_stop_sent_to_a_first_indexs_process_group_stops_it_without_a_traceback(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    """A terminal's Ctrl-C, `timeout`'s SIGTERM and a closed terminal's SIGHUP are sent to
    the whole process group: the index's process and its pool's. Taken by the pool's
    processes, a Ctrl-C was a KeyboardInterrupt each (a traceback from the fork server
    importing the reader, or from a worker waiting for its batch, and a worker it ended
    holding a queue's lock left the index waiting for ever), and a SIGTERM or SIGHUP that
    ended a worker in the middle of sending its batch left half a result in the pipe,
    which the pool's manager thread waited for the rest of, for ever (about 1 run in 8).
    The pool's processes leave every stop to this one, which stops them; then none of
    the group is left."""
    pooled_centre(tmp_path / "kb")
    for stage, reached in [*STAGES.items()] * 4:
        shutil.rmtree(tmp_path / "xdg", ignore_errors=True)  # a first index each time
        proc = start(tmp_path, "index", "kb", group=True)
        group = Group(proc.pid)
        deadline = time.monotonic() + END
        try:
            while not reached(group):
                assert proc.poll() is None and time.monotonic() < deadline, (stage, finish(proc))
                time.sleep(0.002)
            os.killpg(proc.pid, signum)
            _, err = finish(proc)
        except BaseException:  # a hung run's pool is not left behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise

        assert proc.returncode == code, (stage, err)
        assert said in err and "Traceback" not in err, (stage, err)
        while group.members():  # the fork server ends once this process has
            assert time.monotonic() < deadline, (stage, group.members())
            time.sleep(0.01)


def killed_mid_read(tmp_path: Path, which: str) -> tuple[subprocess.Popen[str], str, str]:
    """A first index of a pooled centre, run until a worker has read for 50 ms, then
    `which` of its processes ("worker", "server", "index") SIGKILLed: the run, its output;
    no process of its group left by the deadline."""
    pooled_centre(tmp_path / "kb")
    proc = start(tmp_path, "index", "kb", group=True)
    group = Group(proc.pid)
    deadline = time.monotonic() + END
    try:
        while not STAGES["reading"](group):
            assert proc.poll() is None and time.monotonic() < deadline, finish(proc)
            time.sleep(0.002)
        members = group.members()
        server = [pid for pid, (_, command, _) in members.items() if "forkserver" in command]
        workers = [pid for pid, (parent, _, _) in members.items() if parent in server]
        os.kill({"worker": min(workers), "server": server[0], "index": proc.pid}[which],
                signal.SIGKILL)  # fmt: skip
        out, err = finish(proc)
        while group.members():  # none outlives the run, however it ended
            assert time.monotonic() < deadline, group.members()
            time.sleep(0.01)
    except BaseException:  # a hung run's pool is not left behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc, out, err


def indexed_whole(tmp_path: Path) -> str:
    status = subprocess.run(
        [sys.executable, "-m", "cli", "index", "--status", "kb"], cwd=tmp_path,
        env=environment(tmp_path), capture_output=True, text=True, timeout=END,
    )  # fmt: skip
    assert "every file is as indexed" in status.stdout, status
    return status.stdout


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("which", ["worker", "server"])
def test_a_reading_process_killed_during_a_first_index_leaves_the_rest_read_here_not_a_hang(
    tmp_path: Path, which: str
) -> None:
    """A worker of the reading pool, or the fork server, ended by SIGKILL (the OOM killer,
    a `kill -9`) broke the pool, and the pool's manager thread, ending the other worker
    with a SIGTERM it blocks, waited for it for ever (the worker), or left the workers
    the server had forked for ever (the server). Now the rest of the files are read in
    the index's own process, with a warning, the index is whole and no process is left."""
    proc, out, err = killed_mid_read(tmp_path, which)
    pages = len(list((tmp_path / "kb").rglob("*.html")))

    assert proc.returncode == 0, err
    assert WORKER_ENDED in " ".join(err.split()) and "Traceback" not in err, err
    assert f"{pages:,} articles" in out, out  # its summary line: every file indexed
    assert f"indexed: {pages:,} articles" in indexed_whole(tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_first_index_killed_leaves_no_process_of_its_pool_and_the_next_makes_it_whole(
    tmp_path: Path,
) -> None:
    """The index's own process ended by SIGKILL (`timeout -s KILL`, the OOM killer, which
    picks the largest process: this one) left its workers, the fork server and the
    resource tracker for ever, each worker blocked sending a result no one read. Now the
    workers end with it, and the rest with them; the next run makes the index whole."""
    proc, _, _ = killed_mid_read(tmp_path, "index")
    assert proc.returncode == -signal.SIGKILL

    again = subprocess.run(
        [sys.executable, "-m", "cli", "index", "kb"], cwd=tmp_path, env=environment(tmp_path),
        capture_output=True, text=True, timeout=END,
    )  # fmt: skip
    pages = len(list((tmp_path / "kb").rglob("*.html")))
    assert again.returncode == 0 and f"{pages:,} articles" in again.stdout, again
    assert f"indexed: {pages:,} articles" in indexed_whole(tmp_path)


@pytest.mark.slow
def test_the_budget_holds_on_the_wall_clock_from_the_process_start(
    tmp_path: Path, providers: Providers
) -> None:
    """Time spent before the engine starts (here, the question arriving slowly on
    stdin; in life, loading a large help centre) is spent from the budget, not added.

    Each check tells the two apart by the time spent before the question, not by a margin
    the machine's load eats: at a load of 20 to 35 on two CPUs the run's own work (about
    0.5 s of CPU from the question to the fallback's call, 0.1 s after the deadline) takes
    ten times as long or more, so it has 8 s and 4 s for them."""
    budget, before = 12, 4  # seconds
    home = workdir(tmp_path, providers, budget=budget)
    began = time.monotonic()
    proc = start(home, "-", "-a", "kb", "--json", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    time.sleep(before)  # the time it waits for its question
    proc.stdin.write("How do I reset my password?\n")
    proc.stdin.close()
    proc.stdin = None  # closed: communicate() has nothing left to send
    out, err = finish(proc)
    took = time.monotonic() - began

    assert proc.returncode == 75, err
    # Added, the time before the question would end the run no sooner than budget + before.
    assert took < budget + before, f"{took:.2f} s for a {budget} s budget"
    result = json.loads(out)
    # The run's own clock, from the process's start: the deadline and the documented 0.5 s
    # for the last attempt to be cut off (docs/decisions.md#the-budget).
    assert result["elapsed_s"] == pytest.approx(budget, abs=0.5)
    assert [a["deployment"] for a in result["attempts"]] == ["primary", "fallback"]
    # The fallback's timeout was what the budget had left after the wait: shown rounded,
    # not 1.93721 s. A loaded machine only leaves it less.
    detail = result["attempts"][-1]["detail"]
    left = re.search(r"no response within the attempt's (\d+(?:\.\d)?) s", detail)
    assert left is not None, detail
    assert float(left[1]) <= budget - before
    assert not re.findall(r"\d\.\d{3,}", " ".join(a["detail"] for a in result["attempts"]))
    assert "cooling down" not in result["error"]["message"]  # nothing was when it began


@pytest.mark.slow
def test_json_on_a_command_line_typer_rejects_still_prints_one_object(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "q", "--json", "--budget", "soon"],
        cwd=tmp_path,
        env=environment(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=END,
    )
    assert proc.returncode == 2
    assert "soon" in proc.stderr  # Typer's message, as usual
    result = json.loads(proc.stdout)
    assert (result["schema_version"], result["status"], result["answer"]) == (1, "fatal", None)
    assert result["error"]["kind"] == "usage" and "soon" in result["error"]["message"]


def test_a_sigterm_is_taken_as_the_stop_that_ends_the_run_as_sigterm() -> None:
    """The handler main installs raises the stop every clean ending handles, naming the
    signal (tests/cli/test_interrupted.py follows it through Typer and the guard)."""
    from cli.runtime import signals

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        signals.stop_on_signals()
        with pytest.raises(signals.StopSignal) as stopped:
            signal.raise_signal(signal.SIGTERM)
            time.sleep(1)  # the handler runs before this returns
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    assert signals.exit_code_for_stop(stopped.value) == 143
