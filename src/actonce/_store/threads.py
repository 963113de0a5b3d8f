"""The one thread adapter: any synchronous store, awaitable.

``threaded(store)`` answers every primitive of a synchronous store (SQLite,
memory, a user's own) as a coroutine that runs the call in one worker thread
of its own, in order. It is generic: it knows no primitive by name, so a
primitive added to a store is awaitable at once, and nothing is written
twice. ``AsyncLedger``, ``AsyncLease`` and ``AsyncWorkQueue`` use it for
synchronous stores.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from .base import AsyncStore

__all__ = ["ThreadedStore", "threaded"]


class ThreadedStore:
    """A synchronous store behind coroutines, one worker thread."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="actonce-store")

    def __getattr__(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.inner, name)
        if not callable(fn):
            return cast(Callable[..., Any], fn)

        async def call(*args: Any, **kwargs: Any) -> Any:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(
                self._executor, functools.partial(fn, *args, **kwargs)
            )

        call.__name__ = name
        return call

    async def aclose(self) -> None:
        """Close the inner store (in its thread), then the thread."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self.inner.close)
        finally:
            self._executor.shutdown(wait=True)


def threaded(store: Any) -> AsyncStore:
    """``store`` as an :class:`AsyncStore` (itself, when it already is one)."""
    if isinstance(store, ThreadedStore) or inspect.iscoroutinefunction(getattr(store, "get", None)):
        return cast(AsyncStore, store)
    return cast(AsyncStore, ThreadedStore(store))
