"""The state shared across invocations: cooldowns, probe leases, round-robin cursors.

    records  the state, a probe's lease, one question's snapshot, the limits
    rules    the rules every store follows (extend-only, clamp, escalate, lease, prune)
    local    the StateStore protocol written once for stores that hold the whole state
    memory   one process only (tests, eval, simulate)
    file     a JSON file under a lock: every invocation on one machine
    realtime a wrapper that writes real wall-clock times whatever clock the engine runs on

Each store is imported from its own module, so a question imports only the one it uses.
"""
