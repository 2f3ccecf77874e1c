"""The fallback engine: the loop (loop), its pure decisions and their one table (policy), waits
(backoff), keys (credentials) and this process's cooldowns (held).

Nothing is imported here, so importing one part costs only that part.
"""
