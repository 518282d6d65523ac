"""The HTTP control plane: a FastAPI app over the runtime (runs, events, SSE, sessions, page)."""
