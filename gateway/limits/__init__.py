"""The shared allowances: rate and token limits, calls at once, and the fleet's retry budget.

    records  what a draw asks for and gets, and what each allowance holds
    rules    the generic cell rate algorithm and the retry budget, as pure functions
    local    the Allowance protocol written once for allowances held in one place
    memory   one process only (tests, and a process on its own share of a limit)
    file     a JSON file under a lock: every process on one machine
    redis    one Lua script on the server's clock: every machine of a fleet

Each is imported from its own module, so a question imports only the one it uses.
"""
