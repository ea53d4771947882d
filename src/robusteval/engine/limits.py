"""Limits that keep a backend busy without tripping its rate limits.

- `Pacer`: requests per minute, spread evenly (a server that enforces R/min with a token bucket or a
  sliding window then never sees a burst above R, so it sends no 429s). When the user gave no
  ``--rpm``, the pacer learns one: on a 429 it paces at 80% of the success rate it just measured,
  and each success shortens the interval by 1% until pacing switches itself off again (AIMD on
  the rate, not only on concurrency: a server's RPM limit is a rate, and halving concurrency alone
  lets the waiting requests retry in one burst after a short Retry-After).
- `TokenBudget`: tokens per minute, charged with an estimate before sending and corrected with the
  real usage afterwards.
- `AdaptiveLimit`: concurrency that halves on a 429 and grows back by one per window of successes
  (AIMD, as TCP does), never above the backend's own maximum.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque


class Pacer:
    """Spaces request starts at least 60/rpm seconds apart (GCRA with a burst of one)."""

    WINDOW_S = 10.0  # successes counted over this window to measure the rate the server accepts
    CUT = 0.8  # on a 429, pace at this share of the measured rate
    RECOVER = 0.99  # each success shortens the learned interval by 1%
    COOLDOWN_S = 1.0  # one cut per cooldown: a burst of 429s from one overload is one signal

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self.adaptive = not rpm
        self._next = 0.0
        self._lock = asyncio.Lock()
        self._successes: deque[float] = deque()
        self._last_cut = -1e9
        self._started = time.monotonic()

    @property
    def rpm(self) -> float | None:
        """The pace in force (requests per minute), or None when unpaced."""
        return 60.0 / self.interval if self.interval else None

    def on_success(self) -> None:
        if not self.adaptive:
            return
        now = time.monotonic()
        self._successes.append(now)
        while self._successes and self._successes[0] < now - self.WINDOW_S:
            self._successes.popleft()
        if self.interval:
            self.interval *= self.RECOVER
            if self.interval < 1e-3:
                self.interval = 0.0  # the server keeps up: stop pacing

    def on_rate_limited(self) -> None:
        """Learn a pace from the rate that succeeded just before the server pushed back."""
        if not self.adaptive:
            return
        now = time.monotonic()
        if now - self._last_cut < self.COOLDOWN_S:
            return
        self._last_cut = now
        window = max(1.0, min(self.WINDOW_S, now - self._started))
        measured = sum(1 for t in self._successes if t >= now - window) * 60.0 / window
        current = self.rpm or float("inf")
        target = max(1.0, self.CUT * min(current, measured if measured > 0 else current))
        if target == float("inf"):
            target = 60.0  # a 429 before any success: start at one request per second and learn
        self.interval = 60.0 / target

    async def wait(self) -> None:
        if not self.interval and self._next <= time.monotonic():
            return  # no pacing and no Retry-After pending: the fast path
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)

    def push_back(self, seconds: float) -> None:
        """After a 429 with Retry-After, nobody starts before the server said to come back."""
        self._next = max(self._next, time.monotonic() + seconds)


class TokenBudget:
    """A token bucket refilled at tpm/60 tokens per second, holding at most ten seconds' worth."""

    def __init__(self, tpm: float | None):
        self.rate = tpm / 60.0 if tpm else 0.0
        self.capacity = self.rate * 10.0
        self._level = self.capacity
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, tokens: int) -> None:
        if not self.rate:
            return
        tokens = min(tokens, int(self.capacity))  # a request larger than the bucket still runs
        async with self._lock:
            self._refill()
            while self._level < tokens:
                await asyncio.sleep((tokens - self._level) / self.rate)
                self._refill()
            self._level -= tokens

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the charge once the real token count is known (may go negative: a debt)."""
        if self.rate:
            self._refill()
            self._level -= actual - estimated


class AdaptiveLimit:
    """A semaphore whose size adapts: multiplicative decrease on 429, additive increase on success.

    Waiters queue in FIFO order and a release wakes exactly one of them (a condition variable's
    notify_all would wake every queued request on every release: quadratic with thousands queued).
    """

    def __init__(self, maximum: int, cooldown_s: float = 1.0):
        self.maximum = max(1, maximum)
        self.limit = float(self.maximum)
        self.in_flight = 0
        self.cooldown_s = cooldown_s
        self._last_cut = -1e9
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.in_flight < int(self.limit) and not self._waiters:
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # granted just as we were cancelled: hand the slot on
                self._wake()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    async def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    def on_success(self) -> None:
        if self.limit < self.maximum:
            self.limit = min(self.maximum, self.limit + 1.0 / self.limit)
            self._wake()

    def on_rate_limited(self) -> None:
        now = time.monotonic()
        # One cut per cooldown: a burst of 429s from one overload should not collapse us to 1.
        if now - self._last_cut >= self.cooldown_s:
            self.limit = max(1.0, self.limit / 2)
            self._last_cut = now
