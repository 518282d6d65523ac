"""A live client (an HTTP client, loaded model weights) built on first use and left behind
when its holder is pickled, so providers and embedders can ride into Ray actors and rebuild
the client on the other side: sockets, locks and weights do not pickle, or should not travel."""

from __future__ import annotations

from typing import Any, ClassVar


class LazyClient:
    """Mixin: the attribute named by `live` holds a client that `connect()` builds;
    `live_client()` builds it on first use, and pickling drops it."""

    live: ClassVar[str] = "_client"

    def connect(self) -> Any:
        raise NotImplementedError

    def live_client(self) -> Any:
        client = getattr(self, self.live, None)
        if client is None:
            client = self.connect()
            setattr(self, self.live, client)
        return client

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state[self.live] = None
        return state
