"""Datasets: offline packages, local files and (for online users) the Hugging Face hub."""

from robusteval.data.mcq import load_items

__all__ = ["load_items"]
