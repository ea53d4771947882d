"""A random-weight Llama with a word-level tokenizer, built offline: the hf backend's test model
(tests/conftest.py) and the benchmark's (benchmarks/hf_throughput.py). Needs the ``hf`` extra."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPECIAL = ("<unk>", "<pad>", "</s>")  # ids 0, 1, 2: unknown word, padding, end of sequence


def save_tiny_llama(path: Path | str, words: Sequence[str], template: str, *, seed: int = 0, hidden: int = 32,
                    intermediate: int = 64, layers: int = 2, heads: int = 2, positions: int = 128) -> None:
    """Save to ``path`` a Llama of this shape with random weights (torch seeded with ``seed``) and a
    tokenizer whose words are ``words`` (split on whitespace) and whose chat template is ``template``."""
    import tokenizers
    import torch
    import transformers

    vocab = {w: i for i, w in enumerate([*SPECIAL, *words])}
    raw = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>",
                                               eos_token="</s>")
    tok.chat_template = template
    tok.save_pretrained(path)
    config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=intermediate,
                                      num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                                      max_position_embeddings=positions, eos_token_id=2, pad_token_id=1,
                                      bos_token_id=None)
    torch.manual_seed(seed)
    transformers.LlamaForCausalLM(config).save_pretrained(path)
