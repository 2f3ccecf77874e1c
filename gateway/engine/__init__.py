"""The fallback engine: the loop (loop), its pure decisions (policy) and what each failure
kind means to them (table), waits (backoff), keys (credentials) and this process's
cooldowns (held).

Nothing is imported here, so importing one part costs only that part.
"""
