"""Rewrites a model writes: the request to the rewriter for each style, dialect or language.

Each instruction holds ``{text}``; the rewriter's reply is read as the rewritten text (a preamble,
quotes or a list marker around it are removed: probes/paraphrase.py `parse_candidates`). These are
the ELOQUENT 2024 robustness variations (formality, politeness, dialect, spelling, topicalisation,
"asking for a friend", other languages) and LexEval's paraphrase.
"""

from __future__ import annotations

_KEEP = ("Keep exactly what is asked and every detail needed to answer it; do not answer it. "
         "Reply with the rewritten text only.\n\nText: {text}")

INSTRUCTIONS: dict[str, str] = {
    "paraphrase": "Rewrite the text below with different words, keeping exactly its meaning. " + _KEEP,
    "formality": "Rewrite the text below in a very formal register, as in an official letter. " + _KEEP,
    "informal": "Rewrite the text below in a casual, informal register, as in a chat with a friend. " + _KEEP,
    "politeness": "Rewrite the text below so that it is very polite and courteous. " + _KEEP,
    "impolite": "Rewrite the text below so that it is curt and impatient (but not offensive). " + _KEEP,
    "dialect": "Rewrite the text below in a regional dialect of English (for example Scottish or Southern "
               "US English), with that dialect's words and grammar. " + _KEEP,
    "spelling": "Rewrite the text below in British spelling if it uses American spelling, "
                "and in American spelling otherwise; change nothing else. " + _KEEP,
    "topicalisation": "Rewrite the text below so that its topic comes first, e.g. 'The capital of France, "
                      "what is it?'. " + _KEEP,
    "friend": "Rewrite the text below as if the person is asking on behalf of a friend "
              "('Asking for a friend: ...'). " + _KEEP,
    # an answer option of a multiple-choice question (mcq's option_paraphrase): the question is unchanged
    "option_paraphrase": "Rewrite the answer option below with different words, keeping exactly its meaning; keep "
                         "every number, name and unit as it is. Do not add anything. Reply with the rewritten "
                         "option only.\n\nOption: {text}",
}

LANGUAGE_NAMES = {
    "ar": "Arabic", "de": "German", "en": "English", "es": "Spanish", "fi": "Finnish", "fr": "French",
    "hi": "Hindi", "it": "Italian", "ja": "Japanese", "nl": "Dutch", "no": "Norwegian", "pl": "Polish",
    "pt": "Portuguese", "ru": "Russian", "sv": "Swedish", "tr": "Turkish", "uk": "Ukrainian", "zh": "Chinese",
}


def translation(language: str) -> str:
    """The instruction that translates into ``language`` (an ISO 639-1 code or a language name)."""
    name = LANGUAGE_NAMES.get(language.lower(), language)
    return (f"Translate the text below into {name}. Keep exactly what is asked and every detail needed to "
            f"answer it; do not answer it. Reply with the translation only.\n\nText: {{text}}")
