"""The engine: store (SQLite), runner (async scheduling, retries), limits (RPM/TPM/AIMD), progress."""

from robusteval.engine.runner import Engine, RetryPolicy, Usage, gather_all
from robusteval.engine.store import Store, cache_key

__all__ = ["Engine", "RetryPolicy", "Store", "Usage", "cache_key", "gather_all"]
