"""What every command runs on: the wiring of config, state, clock and engine (wiring), the
shared options, exit codes, failures as the user sees them, logging, the process start.
"""
