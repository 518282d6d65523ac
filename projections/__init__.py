"""The views: projection runner, read models, replay / fork / diff tools (issue 3)."""
