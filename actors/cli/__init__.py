"""The front door: the `chorus` command (`python -m actors.cli`)."""
