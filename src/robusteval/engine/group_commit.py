"""Group commit: the responses that complete while a write is under way go into the next ONE transaction.

Why: the engine must write every answer before a suite uses it (a crash never loses a used answer),
but one SQLite transaction per response, run on the event loop, stalls every other request while it
commits. Here a caller hands its row over and waits; one flusher task commits everything pending in a
worker thread (the loop keeps serving responses meanwhile) and wakes each caller only after the
transaction holding its row has committed. Under load, batches grow by themselves; alone, a row is
committed at once.
"""

from __future__ import annotations

import asyncio

from robusteval.engine.store import Store, StoreRow


class GroupCommit:
    """Batches `Store.put_many` calls for the coroutines of one event loop."""

    def __init__(self, store: Store, *, replace: bool = False):
        self.store = store
        self.replace = replace  # `Store.put_many`'s: stored answers are replaced (``--no-cache``)
        self._pending: list[tuple[StoreRow, asyncio.Future[bool]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def put(self, row: StoreRow) -> bool:
        """Returns once ``row`` is committed: True, or False where the store kept another answer it held
        for the key (stored meanwhile by another process); raises what the commit raised."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending.append((row, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        return await done

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                written = await asyncio.to_thread(self.store.put_many, [row for row, _ in batch], replace=self.replace)
            except BaseException as exc:  # the callers learn it; cancellation still ends this task
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
                        done.exception()  # a cancelled caller no longer retrieves it
                if not isinstance(exc, Exception):
                    raise
                continue
            kept_other = set(written.conflicts)
            for row, done in batch:
                if not done.done():  # a caller cancelled meanwhile: its row is stored all the same
                    done.set_result(row.key not in kept_other)

    async def drain(self) -> None:
        """Wait until everything handed over is committed (or has failed)."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.wait({self._flusher})  # never cancels the flusher
