"""robusteval: does a language model keep its answer when nothing that should matter changes?"""

__version__ = "0.1.0"

__all__ = ["evaluate", "evaluate_async", "load_run", "score"]


def __getattr__(name: str):
    """The Python API (`robusteval.api`), imported on first use: ``import robusteval`` stays light."""
    if name in __all__:
        from robusteval import api

        return getattr(api, name)
    raise AttributeError(f"module 'robusteval' has no attribute {name!r}")
