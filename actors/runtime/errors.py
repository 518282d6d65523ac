"""The error a person's bad input or configuration raises: the `chorus` command prints it as
one line and exits 2, with nothing written to the log. Light on purpose, so any module can
raise it."""


class UserError(Exception):
    """Bad input or configuration: one line, exit 2."""
