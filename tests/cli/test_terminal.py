"""`support-ask` as a person at a terminal sees it: stderr on a real pseudo-terminal, stdout
a pipe, provider servers on 127.0.0.1.

A live table of attempts that redraws as they happen, with a backoff wait counting down,
ending on the final table; NO_COLOR and a non-terminal stderr drawing neither colour nor
animation; stdout holding the answer alone; a reader that leaves early (`| head -c 5`)
ending the run quietly. The waits are real but tiny (the servers ask for 0.2 s), so each
test takes about a second; nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli_runner import write_loopback_workdir
from tests.support.loopback import Exchange, LoopbackServer
from tests.support.paths import REPO

pytestmark = [
    pytest.mark.skipif(
        sys.platform == "win32" or not hasattr(os, "openpty"), reason="needs a pseudo-terminal"
    ),
    pytest.mark.slow,  # support-ask processes on a pseudo-terminal
]

ANSWER = "Open Settings, then choose Reset password."
FALLBACK_ANSWER = "From the fallback: " + ANSWER
WAIT_MS = 200  # what each 429 asks for: long enough to be drawn counting down, short to run
END = 30  # seconds a process gets to finish on a loaded machine

# Variables that change what a terminal library draws, whatever the test intends.
_TERMINAL_VARS = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE")

CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SGR = re.compile(r"\x1b\[([0-9;]*)m")
# How rich's live display goes back over the frame it drew: to the line start, then erase
# and move up once per line.
REDRAW = re.compile(r"\r(?:\x1b\[2K\x1b\[1A)*\x1b\[2K")
CURSOR_UP = "\x1b[1A"
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


# -- the providers ---------------------------------------------------------------------------


def _completion(text: str) -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
    }


def _chunk(text: str | None = None, finish: str | None = None) -> str:
    delta = {} if text is None else {"content": text}
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


class Providers:
    """OpenAI (primary) and Anthropic (fallback) on one loopback server.

    The primary answers 429 with `retry-after-ms` for its first `rate_limited` calls. A
    streamed primary reply sends its first words, then waits for `resume` before the rest.
    """

    def __init__(self) -> None:
        self.rate_limited = 0
        self.resume = threading.Event()
        self.server = LoopbackServer(self.handle)

    def handle(self, ex: Exchange) -> None:
        if ex.path.endswith("/chat/completions"):
            self._primary(ex)
        elif ex.path.endswith("/messages"):
            ex.respond(
                200,
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-haiku-4-5",
                    "content": [{"type": "text", "text": FALLBACK_ANSWER}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 8},
                },
            )
        else:
            ex.respond(404, {"error": {"message": f"no route {ex.path}"}})

    def _primary(self, ex: Exchange) -> None:
        if self.calls("/chat/completions") <= self.rate_limited:
            error = {"message": "Rate limit reached", "type": "requests"}
            ex.respond(
                429,
                {"error": {**error, "code": "rate_limit_exceeded"}},
                headers={"retry-after-ms": str(WAIT_MS)},
            )
            return
        if not ex.json().get("stream"):
            ex.respond(200, _completion(ANSWER))
            return
        ex.start()
        ex.send(_chunk("Open Settings, "))
        while not self.resume.is_set():
            if not ex.pause(0.02):
                return  # the server is stopping
        for piece in ("then choose ", "Reset password."):
            ex.send(_chunk(piece))
        ex.send(_chunk(finish="stop"))
        ex.send("data: [DONE]\n\n")
        ex.end()

    def calls(self, suffix: str) -> int:
        return sum(1 for ex in self.server.exchanges if ex.path.endswith(suffix))


@pytest.fixture
def providers() -> Iterator[Providers]:
    p = Providers()
    with p.server:
        yield p
    assert not p.server.errors


def write_config(workdir: Path, base: str, *, retries: int) -> None:
    write_loopback_workdir(workdir, base, ANSWER, retries=retries, budget=20, timeout=10)


def environment(workdir: Path, *, keys: bool = True, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY")
        and not k.startswith("SUPPORT_ASK_")
        and k not in _TERMINAL_VARS
    }
    env.update(
        TERM="xterm-256color",
        COLUMNS="120",
        LINES="40",
        XDG_CONFIG_HOME=str(workdir / "xdg"),
        XDG_STATE_HOME=str(workdir / "xdg"),
    )
    if keys:
        env.update(OPENAI_API_KEY="test-openai-key", ANTHROPIC_API_KEY="test-anthropic-key")
    env.update(extra)
    return env


# -- a pseudo-terminal for stderr --------------------------------------------------------------


class Terminal:
    """The master side of a pty whose slave is a child's stderr; everything drawn on it is
    read in a thread (a full pty would block the child) and kept as text."""

    def __init__(self, columns: int = 120, lines: int = 40) -> None:
        import fcntl
        import struct
        import termios

        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)

    def start(self) -> None:
        """Once the child holds the slave: drop ours, so the child's exit ends the reading."""
        os.close(self.slave)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every slave descriptor is closed
                break
            if not data:
                break
            self._chunks.append(data)

    def drawn(self) -> str:
        """Everything the child wrote, once it has exited (newlines as the child wrote them)."""
        self._reader.join(END)
        assert not self._reader.is_alive(), "the terminal never went quiet"
        os.close(self.master)
        return b"".join(self._chunks).decode("utf-8").replace("\r\n", "\n")


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def support_ask(
    workdir: Path, *args: str, env: Mapping[str, str], stderr_on_terminal: bool = True
) -> Run:
    """Run `python -m cli ARGS` with stdout a pipe and stderr on a pty (or a pipe)."""
    terminal = Terminal() if stderr_on_terminal else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        cwd=workdir,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal.slave if terminal else subprocess.PIPE,
    )
    if terminal:
        terminal.start()
    try:
        out, err = proc.communicate(timeout=END)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = terminal.drawn() if terminal else err.decode()
    return Run(proc.returncode, out.decode(), stderr)


# -- reading what was drawn ----------------------------------------------------------------------


def plain(text: str) -> str:
    return CSI.sub("", text)


def frames(drawn: str) -> list[str]:
    """Each frame of a live display, as plain text: what was drawn between two redraws."""
    return [plain(f) for f in REDRAW.split(drawn)]


def rows(frame: str) -> list[list[str]]:
    """The attempt rows of the table in a frame, as stripped cells."""
    return [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in frame.splitlines()
        if line.startswith("│")
    ]


def summary(frame: str) -> list[tuple[str, str, str]]:
    """Each row's deployment, attempt number and decision."""
    return [(r[0], r[1], r[4]) for r in rows(frame)]


def colour_codes(drawn: str) -> list[str]:
    """The SGR sequences that set a colour (foreground or background, any palette)."""
    found = []
    for params in SGR.findall(drawn):
        numbers = [int(p) for p in params.split(";") if p]
        if any(30 <= n <= 49 or 90 <= n <= 107 for n in numbers):
            found.append(params)
    return found


RETRIED_THEN_ANSWERED = [
    ("primary", "1", "retry"),
    ("primary", "2", "retry"),
    ("primary", "3", "answered"),
]


# -- a terminal ----------------------------------------------------------------------------------


def test_a_terminal_sees_the_table_grow_and_count_down_then_the_final_table(
    tmp_path: Path, providers: Providers
) -> None:
    providers.rate_limited = 2
    write_config(tmp_path, providers.server.url, retries=2)

    run = support_ask(
        tmp_path, "How do I reset my password?", "-a", "kb", env=environment(tmp_path)
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout == ANSWER + "\n"  # the pipe holds the answer and nothing else
    assert providers.calls("/chat/completions") == 3
    drawn = run.stderr
    assert "Traceback" not in drawn

    # Animated: drawn over itself, with the cursor hidden meanwhile and given back at the end.
    assert CURSOR_UP in drawn
    assert drawn.startswith(HIDE_CURSOR)
    assert drawn.rfind(SHOW_CURSOR) > drawn.rfind(HIDE_CURSOR)
    shown = frames(drawn)
    assert len(set(shown)) >= 4, shown
    # The table grew a row as each attempt happened, not all at once at the end.
    assert {len(rows(f)) for f in shown} >= {1, 2, 3}

    # While a 429's wait ran: the last row's wait counting down, and the spinner saying so.
    counting = [f for f in shown if "retrying primary in" in f]
    assert counting, shown
    assert all(rows(f)[-1][5].endswith("s…") for f in counting)
    assert {len(rows(f)) for f in counting} == {1, 2}  # each of the two waits was shown

    # The last frame: every attempt, the answer last, the waits as taken, no spinner.
    final = shown[-1]
    assert summary(final) == RETRIED_THEN_ANSWERED
    assert [r[5] for r in rows(final)] == ["0.2s", "0.2s", ""]
    assert "so far" not in final and "…" not in "".join(r[5] for r in rows(final))

    assert colour_codes(drawn)  # a colour terminal gets colour (the decisions)


def test_no_color_on_a_terminal_draws_one_plain_table_and_no_animation(
    tmp_path: Path, providers: Providers
) -> None:
    # docs/output.md: "`NO_COLOR` and a non-terminal stderr mean no colour and no animation".
    providers.rate_limited = 2
    write_config(tmp_path, providers.server.url, retries=2)

    run = support_ask(
        tmp_path,
        "How do I reset my password?",
        "-a",
        "kb",
        env=environment(tmp_path, NO_COLOR="1"),
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout == ANSWER + "\n"
    drawn = run.stderr
    assert colour_codes(drawn) == []
    # No animation: nothing is drawn over, the cursor is left alone, no countdown, no spinner.
    assert CURSOR_UP not in drawn and "\x1b[2K" not in drawn and HIDE_CURSOR not in drawn
    assert "retrying" not in drawn and "so far" not in drawn
    # The table is still there on a terminal, once, at the end: the same rows as in colour.
    text = plain(drawn)
    assert text.count("deployment") == 1
    assert summary(text) == RETRIED_THEN_ANSWERED
    assert all(not r[5].endswith("…") for r in rows(text))


# -- not a terminal ----------------------------------------------------------------------------


@pytest.mark.parametrize("show_attempts", [False, True], ids=["plain", "show-attempts"])
def test_a_piped_stderr_gets_no_escape_sequences_and_a_table_only_when_asked(
    tmp_path: Path, providers: Providers, show_attempts: bool
) -> None:
    providers.rate_limited = 1  # the primary's one call is limited: the fallback serves
    write_config(tmp_path, providers.server.url, retries=0)
    flags = ("--show-attempts",) if show_attempts else ()

    run = support_ask(
        tmp_path,
        "How do I reset my password?",
        "-a",
        "kb",
        *flags,
        env=environment(tmp_path),  # TERM and COLUMNS say xterm; the pipe is what counts
        stderr_on_terminal=False,
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout == FALLBACK_ANSWER + "\n"
    assert "\x1b" not in run.stderr
    assert (
        "answered by fallback (anthropic claude-haiku-4-5) after 2 attempts; primary: rate_limit"
        in run.stderr.splitlines()
    )
    if show_attempts:
        assert run.stderr.count("deployment") == 1
        assert summary(run.stderr) == [("primary", "1", "fail_over"), ("fallback", "1", "answered")]
    else:
        assert "deployment" not in run.stderr and rows(run.stderr) == []


# -- a reader that leaves early ------------------------------------------------------------------


def test_a_reader_leaving_mid_stream_ends_the_run_quietly(
    tmp_path: Path, providers: Providers
) -> None:
    """`support-ask ... --stream | head -c 5` with the table live on the terminal."""
    write_config(tmp_path, providers.server.url, retries=2)
    terminal = Terminal()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "How do I reset my password?", "-a", "kb", "--stream"],
        cwd=tmp_path,
        env=environment(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal.slave,
    )
    terminal.start()
    try:
        assert proc.stdout is not None
        got = b""
        while len(got) < 5:  # the first words, as `head -c 5` reads them
            piece = os.read(proc.stdout.fileno(), 5 - len(got))
            assert piece, "stdout ended before the first words"
            got += piece
        proc.stdout.close()
        providers.resume.set()  # the rest of the answer now meets a closed pipe
        code = proc.wait(timeout=END)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    drawn = terminal.drawn()

    assert got == b"Open "
    assert code == 141
    for noise in ("Traceback", "BrokenPipeError", "Exception ignored", "internal error"):
        assert noise not in drawn
    assert drawn.rfind(SHOW_CURSOR) > drawn.rfind(HIDE_CURSOR)  # the terminal is left usable
    # The pipe breaking is not the provider's fault: nothing was retried or failed over to.
    assert providers.calls("/chat/completions") == 1
    assert providers.calls("/messages") == 0


@pytest.mark.parametrize("flags", [(), ("--stream",), ("--json",)], ids=["text", "stream", "json"])
def test_a_reader_gone_before_the_answer_ends_the_run_quietly(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """`support-ask "..." -a examples/kb | true`: no keys, so the offline `local` answers."""
    kb = str(REPO / "examples" / "kb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "How do I reset my password?", "-a", kb, "--no-log", *flags],
        cwd=tmp_path,
        env=environment(tmp_path, keys=False),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # gone before a byte is written
    try:
        _, err = proc.communicate(timeout=END)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = err.decode()

    assert proc.returncode == 141
    assert "using the bundled default" in stderr  # it ran
    for noise in ("Traceback", "BrokenPipeError", "Exception ignored", "internal error"):
        assert noise not in stderr


def test_version_to_a_reader_that_is_gone_exits_quietly(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the child starts: no race
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cli", "--version"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=environment(tmp_path, keys=False),
            timeout=END,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert "Traceback" not in proc.stderr.decode()


@pytest.mark.parametrize(
    "command",
    [
        ["stats", "--since", "1h"],
        ["stats", "--json"],
        ["eval", "examples/questions.yaml", "-a", "examples/kb", "--simulate", "-q"],
        ["eval", "examples/questions.yaml", "-a", "examples/kb", "--simulate", "-q", "--json"],
    ],
    ids=["stats", "stats-json", "eval", "eval-json"],
)
def test_stats_and_eval_to_a_reader_that_is_gone_exit_141_quietly(
    tmp_path: Path, command: list[str]
) -> None:
    """`support-ask stats | head -0`, as `ask` does: the status of a tool SIGPIPE ended."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cli", *command],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=environment(tmp_path, keys=False, SUPPORT_ASK_LOG=str(tmp_path / "a.jsonl")),
            timeout=END,
            check=False,
        )
    finally:
        os.close(write_end)
    stderr = proc.stderr.decode()
    assert proc.returncode == 141, stderr
    for noise in ("Traceback", "BrokenPipeError", "Exception ignored", "internal error"):
        assert noise not in stderr


def test_streaming_onto_the_same_terminal_the_table_is_live_through_the_waits(
    tmp_path: Path, providers: Providers
) -> None:
    # With --stream and stdout on the terminal too, the table is live
    # while the engine waits, is cleared the moment the answer's text starts, and the
    # final table follows the answer.
    providers.rate_limited = 2
    providers.resume.set()
    write_config(tmp_path, providers.server.url, retries=2)
    terminal = Terminal()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "How do I reset my password?", "-a", "kb", "--stream"],
        cwd=tmp_path,
        env=environment(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=terminal.slave,
        stderr=terminal.slave,
    )
    terminal.start()
    try:
        assert proc.wait(timeout=END) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    drawn = terminal.drawn()
    assert "Traceback" not in drawn

    text_at = drawn.index("Open Settings, ")
    before, after = drawn[:text_at], plain(drawn[text_at:])
    # Live while waiting: the countdown of each 429's wait was drawn before any text.
    counting = [f for f in frames(before) if "retrying primary in" in f]
    assert {len(rows(f)) for f in counting} == {1, 2}, frames(before)
    # The table was erased off the line the answer starts on, and the answer is whole.
    answer_line = after.splitlines()[0]
    assert answer_line == ANSWER and "│" not in answer_line
    # The final table comes after the answer, every attempt in it.
    assert summary(after) == RETRIED_THEN_ANSWERED
