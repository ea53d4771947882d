"""Retrieval-augmented answering for the `tree` suite: entity extraction (ner), knowledge bases
(corpus), passage retrievers (retrievers) and the per-node pipeline with failure attribution."""
