"""Limits that keep a backend busy without tripping its rate limits.

- `Pacer`: requests per minute, spread evenly (a server that enforces R/min with a token bucket or a
  sliding window then never sees a burst above R, so it sends no 429s). When the user gave no
  ``--rpm``, the pacer learns one: on a 429 it paces at 80% of the success rate it measured, climbs
  back to that rate fast once the 429s stop, and then shortens the interval by 1% per success until
  pacing switches itself off again (AIMD on the rate, not only on concurrency: a server's RPM limit
  is a rate, and halving concurrency alone lets the waiting requests retry in one burst after a
  short Retry-After).
- `TokenBudget`: tokens per minute, charged with an estimate before sending and corrected with the
  real usage afterwards.
- `AdaptiveLimit`: concurrency that halves on a 429 and grows back (AIMD, as TCP does), never above
  the backend's own maximum.

Both adaptive limits follow one rule after a burst of 429s (a "storm"): the first cut sets the
level they return to (the *goal*); cuts that follow while nothing has recovered lower the level
further but not the goal; once the 429s stop they climb back to the goal multiplicatively (TCP's
slow start), and only above it additively. So a storm costs its own length and a few seconds, not
a slow crawl back from the bottom."""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque


class Pacer:
    """Spaces request starts at least 60/rpm seconds apart (GCRA with a burst of one).

    Adaptive when the user gave no ``--rpm`` (module docstring). Its rule after a 429, as TCP's slow
    start after a loss and the CUBIC pacer of AWS's adaptive retry mode do it, kept simple:

    - the first 429 after a success sets the *goal*: 80% of the success rate measured over the window
      before the last success (not before now: while every request is refused nothing succeeds, and
      the rate the server accepted before the storm stays the measure); with no success measured yet
      there is no goal; 429s with no success between them are one storm and keep the goal;
    - each 429 (one per cooldown) cuts the pace to 80% of the lower of the pace and the measured
      rate, never below `MIN_RPM`: while nothing succeeds the probes slow down, but the end of a
      storm is still seen within 60/MIN_RPM seconds;
    - each success below the goal (or with no goal) doubles the pace per `DOUBLING_S` seconds since
      the last 429, up to the goal: back at the measured rate within seconds of the storm's end;
    - at the goal, each success shortens the interval by 1% until pacing switches itself off.

    A request waiting for its start re-reads the pace whenever it changes: no slot reserved at a
    storm's pace outlives it.
    """

    WINDOW_S = 10.0  # successes counted over this window to measure the rate the server accepts
    CUT = 0.8  # on a 429, pace at this share of the measured rate
    RECOVER = 0.99  # at the goal, each success shortens the interval by 1%
    COOLDOWN_S = 1.0  # one cut per cooldown: a burst of 429s from one overload is one signal
    DOUBLING_S = 1.0  # below the goal, the pace doubles per this many seconds without a 429
    MIN_RPM = 6.0  # the slowest pace: one probe per 10 s while every request is refused

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self.adaptive = not rpm
        self._last_slot = -math.inf  # when the last request was let start
        self._not_before = -math.inf  # nobody starts before this (a Retry-After)
        self._lock = asyncio.Lock()  # waiters queue in order; only the first one sleeps
        self._changed = asyncio.Event()  # set when the pace changes: the first waiter re-reads it
        self._successes: deque[float] = deque()
        self._goal: float | None = None  # requests per minute the pace climbs back to fast
        self._succeeded_since_cut = True  # else a 429 is the same storm as the last cut's
        self._last_cut = -math.inf
        self._grown_at = -math.inf  # growth below the goal counts from here: the last 429 or growth
        self._started = time.monotonic()

    @property
    def rpm(self) -> float | None:
        """The pace in force (requests per minute), or None when unpaced."""
        return 60.0 / self.interval if self.interval else None

    def measured(self) -> float:
        """Successes per minute over the window before the last success (0 before any)."""
        if not self._successes:
            return 0.0
        last = self._successes[-1]
        window = max(1.0, min(self.WINDOW_S, last - self._started))
        return sum(1 for t in self._successes if t >= last - window) * 60.0 / window

    def on_success(self) -> None:
        if not self.adaptive:
            return
        now = time.monotonic()
        self._succeeded_since_cut = True
        self._successes.append(now)
        while self._successes[0] < now - self.WINDOW_S:
            self._successes.popleft()
        if not self.interval:
            return
        if self._goal is None or self.interval > 60.0 / self._goal:  # climbing back: doubling per DOUBLING_S
            doublings = min(64.0, max(0.0, now - self._grown_at) / self.DOUBLING_S)  # 2**1100 overflows
            rpm = 60.0 / self.interval * 2.0**doublings
            self._grown_at = now
            self.interval = 60.0 / (rpm if self._goal is None else min(rpm, self._goal))
        else:
            self.interval *= self.RECOVER
        if self.interval < 1e-3:
            self.interval, self._goal = 0.0, None  # the server keeps up: stop pacing
        self._changed.set()

    def on_rate_limited(self) -> None:
        """Learn a pace from the rate that succeeded just before the server pushed back."""
        if not self.adaptive:
            return
        now = time.monotonic()
        self._grown_at = now
        if now - self._last_cut < self.COOLDOWN_S:
            return
        self._last_cut = now
        measured = self.measured()
        current = self.rpm or math.inf
        if self._succeeded_since_cut:  # a new push-back, not the same storm: it sets the goal
            self._goal = self.CUT * measured if measured > 0 else None
            self._succeeded_since_cut = False
        target = self.CUT * min(current, measured if measured > 0 else current)
        if target == math.inf:
            target = 60.0  # a 429 before any success: start at one request per second and learn
        self.interval = 60.0 / max(self.MIN_RPM, target)
        self._changed.set()

    def _due(self) -> float:
        """When the next request may start: one interval (as it is now) after the last start, and not
        before a Retry-After."""
        return max(self._last_slot + self.interval, self._not_before)

    async def wait(self) -> None:
        if not self.interval and self._not_before <= time.monotonic():
            return  # no pacing and no Retry-After pending: the fast path
        async with self._lock:
            waited = False
            while (due := self._due()) > (now := time.monotonic()):
                waited = True
                self._changed.clear()
                try:  # until the slot, or sooner if the pace changes (a storm's slot is not kept)
                    async with asyncio.timeout(due - now):
                        await self._changed.wait()
                except TimeoutError:
                    pass
            # A late wake-up keeps its slot, so the pace holds on average on a loaded machine.
            self._last_slot = due if waited else now

    def push_back(self, seconds: float) -> None:
        """After a 429 with Retry-After, nobody starts before the server said to come back."""
        self._not_before = max(self._not_before, time.monotonic() + seconds)
        self._changed.set()


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
    """A semaphore whose size adapts: multiplicative decrease on 429, increase on success: by one per
    success back up to the goal (the size the first cut of a storm set), then by one per window of
    successes.

    Waiters queue in FIFO order and a release wakes exactly one of them (a condition variable's
    notify_all would wake every queued request on every release: quadratic with thousands queued).
    """

    def __init__(self, maximum: int, cooldown_s: float = 1.0):
        self.maximum = max(1, maximum)
        self.limit = float(self.maximum)
        self.in_flight = 0
        self.cooldown_s = cooldown_s
        self._last_cut = -1e9
        self._goal = self.limit
        self._succeeded_since_cut = True  # else a 429 is the same storm as the last cut's
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
        self._succeeded_since_cut = True
        if self.limit < self.maximum:
            if self.limit < self._goal:  # slow start back to the goal: doubles per window of successes
                self.limit = min(self._goal, self.limit + 1.0)
            else:
                self.limit = min(self.maximum, self.limit + 1.0 / self.limit)
            self._wake()

    def on_rate_limited(self) -> None:
        now = time.monotonic()
        # One cut per cooldown: a burst of 429s from one overload should not collapse us to 1.
        if now - self._last_cut >= self.cooldown_s:
            if self._succeeded_since_cut:  # a new push-back, not the same storm: it sets the goal
                self._goal = max(1.0, self.limit / 2)
                self._succeeded_since_cut = False
            self.limit = max(1.0, self.limit / 2)
            self._last_cut = now
