"""robusteval: does a language model keep its answer when nothing that should matter changes?"""

__version__ = "0.1.0"
