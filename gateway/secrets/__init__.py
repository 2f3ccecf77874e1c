"""Secrets: what one looks like (`shapes`, with the one placeholder every output uses), a
key as read and held (`key`), and the run's known values cut out of what it writes
(`redactor`). Importing the package imports none of them."""
