"""Contexts, conversation views and question prompts of the persona suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from robusteval.data.persona import Openers, Persona, load_questionnaire
from robusteval.errors import UserError
from robusteval.probes.persona import Turn, parse_context, persona_system, question, user_system, view

OPENERS = Openers(posts=("first post", "second post", "third post"), fixed=(("chess", "1. e4"),))
FIX = Path(__file__).parent.parent / "fixtures" / "persona"


def test_no_conv_and_fixed_contexts():
    assert parse_context("no_conv", OPENERS, 5).opener_for(0) is None
    chess = parse_context("fixed:chess", OPENERS, 5)
    assert chess.kind == "fixed" and chess.name == "fixed_chess"
    assert {chess.opener_for(i) for i in range(5)} == {"1. e4"}
    literal = parse_context("fixed:Hello there, how are you?", OPENERS, 5)
    assert literal.opener_for(3) == "Hello there, how are you?" and literal.name == "fixed_hello_there__how_are_you"


def test_chunk_gives_each_persona_a_different_post_seeded():
    a = parse_context("chunk:0", OPENERS, 3, seed=0)
    b = parse_context("chunk:1", OPENERS, 3, seed=0)
    assert sorted(a.openers) == sorted(OPENERS.posts)  # three personas, three different posts
    assert a == parse_context("chunk", OPENERS, 3, seed=0)  # chunk means chunk:0
    assert a.name == "chunk_0" and b.name == "chunk_1"
    assert [parse_context(f"chunk:{k}", OPENERS, 3).openers for k in range(6)].count(a.openers) < 6
    assert len(parse_context("chunk:0", OPENERS, 7).openers) == 7  # more personas than posts: reused


def test_file_context_and_errors():
    c = parse_context(f"file:{FIX / 'chunk.jsonl'}", OPENERS, 4)
    assert c.kind == "chunk" and c.name == "file_chunk" and c.opener_for(3) == c.opener_for(0)
    for bad, message in (("chunk:x", "chunk takes a number"), ("hub:abc", "hub takes a chunk number"),
                         ("fixed:", "give an opener name"), ("banter", "unknown context 'banter'")):
        with pytest.raises(UserError, match=message):
            parse_context(bad, OPENERS, 3)


def test_views_put_each_side_in_its_own_seat():
    turns = (Turn("interlocutor", "hi"), Turn("persona", "hello"), Turn("interlocutor", "how are you?"))
    persona = view("P", turns, "persona")
    assert [(m.role, m.content) for m in persona] == [("system", "P"), ("user", "hi"), ("assistant", "hello"),
                                                       ("user", "how are you?")]
    other = view("I", turns[:2], "interlocutor")
    assert [m.role for m in other] == ["system", "assistant", "user"]
    assert "hi" in user_system("hi")


def test_question_puts_the_scale_first_and_uses_the_gendered_text():
    p = Persona("x", "Ada Quill", "female", "A lighthouse keeper.")
    assert persona_system(p).startswith("You are Ada Quill. A lighthouse keeper.")
    q = load_questionnaire("ours")
    text = question(q, q.items[0], "female")
    assert text.startswith("Answer with one letter (A, B, C, D, E, F):\nA. Not like me at all\n")
    assert text.endswith(q.prompt.format(text=q.items[0].text))
    # all items of one conversation share everything before the item
    other = question(q, q.items[5], "female")
    prefix = text[: text.index(q.items[0].text)]
    assert other.startswith(prefix.split('"')[0])


def test_truncation_cuts_long_posts_at_a_word_boundary(realdata):
    """The leaderboard's chunk_4: 90 posts of 1,388-2,711 characters; --context-max-tokens 100 cuts
    each to at most 400 characters, at a space, and leaves short texts alone."""
    from robusteval.probes.persona import truncate_context, truncate_text

    chunk = parse_context(f"file:{realdata / 'value-stability' / 'contexts' / 'chunk_4.jsonl'}", OPENERS, 5)
    assert chunk.name == "file_chunk_4" and len(chunk.openers) == 90
    cut, changed = truncate_context(chunk, 100)
    assert changed == tuple(range(90)) and cut.name == chunk.name and cut.kind == "chunk"
    for before, after in zip(chunk.openers, cut.openers):
        assert 200 < len(after) <= 400 and before.startswith(after) and before[len(after)] == " "
    assert truncate_context(chunk, 1000) == (chunk, ())  # 4,000 characters: none is that long
    assert truncate_context(chunk, None) == (chunk, ())
    assert truncate_text("short text", 3) == "short text" and truncate_text("one two three four", 3) == "one two"
