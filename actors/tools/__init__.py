"""The file tools shared by every agent: search and read, confined to a root folder."""

__all__ = ["files", "paths", "search"]
