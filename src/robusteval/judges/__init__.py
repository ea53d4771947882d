"""Judges: how similar two answers are, or whether one follows from another.

`embedding` (sentence embeddings, offline MiniLM or multilingual E5), `nli` (a user-named
Hugging Face NLI model); LLM judges live with the suite that prompts them, and call the engine.
"""
