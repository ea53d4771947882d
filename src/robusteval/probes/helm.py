"""HELM's rule-based perturbations, byte for byte (stanford-crfm/helm, `benchmark/augmentations/`).

Robustness numbers are compared across tools, and HELM is the reference for rule-based
perturbations: with HELM's seeding (`random.Random(instance id)`, or ``str(seed) + id``; see
`probes.apply.seeded_rng`) each function here returns HELM's string. The conformance test runs
HELM's own expected strings from its `test_perturbation.py`.

HELM's modules do not import without HELM's heavy dependencies, so the algorithms are written
here and pinned to HELM's strings; HELM's data is read from the installed ``crfm-helm`` package
(``make setup`` installs it with ``--no-deps``) without importing it: `correct_to_misspelling.json`
as a file, the word lists (contractions, gender terms, filler phrases) as the literals of HELM's
source (`ast.literal_eval`, nothing executed). The dialect word list, the person names and the
synonym table HELM downloads at run time; no package ships them, so they are looked for in
``$ROBUSTEVAL_HELM_DATA`` (default ``helm`` in robusteval's cache folder, ``$ROBUSTEVAL_CACHE_DIR`` or
``~/.cache/robusteval``) and downloaded from HELM's public
address when missing; offline, the perturbation ends in a message naming the file and where to
put it.

Each function has the registry's contract ``(text, rng, rate) -> text``; ``rate`` is HELM's
``prob`` (``insert_prob`` for filler) and is ignored by the ones HELM gives none (lowercase,
contraction, expansion, extra_space, space).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import random
import re
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.probes import wordnet

HELM_VERSION = "0.5.16"  # the crfm-helm release whose strings and data these reproduce
# Where HELM downloads its run-time word lists from (`ensure_file_downloaded` in HELM).
HELM_DATA_URL = "https://storage.googleapis.com/crfm-helm-public/source_datasets/augmentations/"
DOWNLOADED = {  # file -> its path under HELM_DATA_URL
    "SAE_to_AAVE_mapping.json": "dialect_perturbation/SAE_to_AAVE_mapping.json",
    "person_names.txt": "person_name_perturbation/person_names.txt",
    "wordnet_synonyms.json": "synonym_perturbation/wordnet_synonyms.json",
}


def match_case(source_word: str, target_word: str) -> str:
    """``target_word`` in ``source_word``'s case (HELM's `helm.common.general.match_case`)."""
    if all(letter.islower() for letter in source_word):
        return target_word.lower()
    if all(letter.isupper() for letter in source_word):
        return target_word.upper()
    if source_word and source_word[0].isupper():
        return target_word.capitalize()
    return target_word


# --- data from the installed crfm-helm package ------------------------------------------------

def package_file(name: str) -> Path:
    """A file of HELM's `augmentations` package, found through the installed distribution (so
    nothing of HELM is imported)."""
    try:
        dist = importlib.metadata.distribution("crfm-helm")
    except importlib.metadata.PackageNotFoundError:
        raise UserError(f"HELM's perturbations read {name} from the crfm-helm package, which is not installed: "
                        f"pip install --no-deps crfm-helm=={HELM_VERSION} (make setup does)") from None
    path = Path(str(dist.locate_file(f"helm/benchmark/augmentations/{name}")))
    if not path.is_file():
        raise UserError(f"crfm-helm {dist.version} has no helm/benchmark/augmentations/{name}; "
                        f"install crfm-helm=={HELM_VERSION} (--no-deps)")
    return path


@cache
def source_literal(module: str, name: str) -> Any:
    """The literal assigned to ``name`` at the top of HELM's module ``module`` (read, not run)."""
    tree = ast.parse(package_file(f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(value)
    raise UserError(f"HELM's {module}.py has no {name}: install crfm-helm=={HELM_VERSION} (--no-deps)")


@cache
def misspellings() -> tuple[dict[str, list[str]], re.Pattern[str]]:
    """HELM's correct -> misspellings table and its pattern (unescaped, in the file's order, as HELM)."""
    table: dict[str, list[str]] = json.loads(package_file("correct_to_misspelling.json").read_text(encoding="utf-8"))
    return table, re.compile(r"\b({})\b".format("|".join(table.keys())))


@cache
def contraction_map() -> tuple[dict[str, str], dict[str, str], re.Pattern[str], re.Pattern[str]]:
    """HELM's contractions, their reverse, and the patterns of `ContractionPerturbation` and
    `ExpansionPerturbation`."""
    forward: dict[str, str] = source_literal("contraction_expansion_perturbation", "CONTRACTION_MAP")
    reverse = {value: key for key, value in forward.items()}
    contract = re.compile(r"\b({})\b ".format("|".join(reverse.keys())), flags=re.IGNORECASE | re.DOTALL)
    expand = re.compile(r"\b({})\b".format("|".join(forward.keys())), flags=re.IGNORECASE | re.DOTALL)
    return forward, reverse, contract, expand


@cache
def filler_phrases() -> tuple[str, ...]:
    """The fillers of HELM's run spec (``speaker_ph=False``): uncertain phrases, then filler words."""
    module = "filler_words_perturbation"
    return (*source_literal(module, "UNCERTAIN_PHRASES"), *source_literal(module, "FILL_PHRASE"))


@cache
def gender_mappings() -> dict[str, list[tuple[str, str]]]:
    """(male word, female word) pairs by mode, in HELM's order (source male, target female)."""
    genders = ["neutral", "female", "male"]  # HELM's GenderPerturbation.GENDERS: the mappings' columns
    out = {}
    for mode, name in (("pronouns", "GENDER_PRONOUN_MAPPINGS"), ("terms", "GENDER_TERM_MAPPINGS")):
        rows = source_literal("gender_perturbation", name)
        out[mode] = [(row[genders.index("male")], row[genders.index("female")]) for row in rows]
    return out


# --- data HELM downloads at run time ----------------------------------------------------------

class DataUnavailable(UserError):
    """HELM's run-time data for a perturbation is neither here nor downloadable (offline): a run
    skips that perturbation with a warning (`registry.get`), ``robusteval perturb`` ends on it."""


def data_dir() -> Path:
    """Where HELM's run-time data is looked for and downloaded: ``$ROBUSTEVAL_HELM_DATA``, else ``helm`` in
    robusteval's cache folder (``$ROBUSTEVAL_CACHE_DIR``, else ``~/.cache/robusteval``)."""
    from robusteval.files import default_cache_dir

    return Path(os.environ.get("ROBUSTEVAL_HELM_DATA") or default_cache_dir() / "helm").expanduser()


def downloaded_file(perturbation: str, name: str) -> Path:
    """HELM's run-time file ``name``: from the data folder, else downloaded there as HELM would;
    a `UserError` saying what to do when neither works (offline)."""
    folder = data_dir()
    path = folder / name
    if path.is_file():
        return path
    url = HELM_DATA_URL + DOWNLOADED[name]
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            body = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DataUnavailable(f"helm:{perturbation} needs HELM's {name}, which HELM downloads at run time and no "
                              f"package ships; it is not in {folder} and could not be downloaded ({exc}). Copy it "
                              f"from {url} into that folder (or set ROBUSTEVAL_HELM_DATA to a folder holding it)"
                              ) from None
    from robusteval.files import atomic_write

    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(path, body.decode("utf-8"))
    return path


@cache
def _dialect_table(path: Path) -> tuple[dict[str, list[str]], re.Pattern[str]]:
    table: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    words = "|".join(re.escape(w) for w in table)
    return table, re.compile(f"[^\\w-]({words})[^\\w-]", flags=re.IGNORECASE)


def dialect_mapping() -> tuple[dict[str, list[str]], re.Pattern[str]]:
    """HELM's SAE -> AAVE word list (Ziems et al. 2022) and the pattern of `DialectPerturbation`."""
    return _dialect_table(downloaded_file("dialect", "SAE_to_AAVE_mapping.json"))


@dataclass(frozen=True)
class Names:
    """HELM's first-name lists for `PersonNamePerturbation`: source and target names, and names by gender."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    by_gender: dict[str, list[str]]


@cache
def read_names(path: Path, source: tuple[str, str] = ("race", "white_american"),
               target: tuple[str, str] = ("race", "black_american")) -> Names:
    """A names file in HELM's format (``name,name_type[,category,value]*`` a line), first names."""
    table: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        name, name_type, *categories = line.replace("\n", "").split(",")
        for i in range(len(categories) // 2):
            if name_type == "first_name":
                table[categories[2 * i]][categories[2 * i + 1]].append(name.strip().lower())
    if not table[source[0]][source[1]] or not table[target[0]][target[1]] or not table["gender"]:
        raise UserError(f"{path}: not HELM's person_names.txt (no {source[1]}, {target[1]} or gender first names)")
    return Names(tuple(table[source[0]][source[1]]), tuple(table[target[0]][target[1]]), dict(table["gender"]))


def person_names() -> Names:
    return read_names(downloaded_file("person_name", "person_names.txt"))


def synonym_data() -> wordnet.Synonyms:
    """spaCy's en_core_web_sm, NLTK's WordNet and HELM's synonym table (derived from WordNet when
    HELM's file is neither here nor downloadable), as `SynonymPerturbation` needs (`probes.wordnet`)."""
    return _synonyms(str(data_dir()))


@cache
def _synonyms(folder: str) -> wordnet.Synonyms:
    try:
        nlp, reader = wordnet.tagger(), wordnet.wordnet(Path(folder))
    except wordnet.Missing as exc:
        raise DataUnavailable(f"helm:synonym needs spaCy's en_core_web_sm and WordNet 3.0: {exc}") from None
    try:
        table: dict[str, list[str]] | None = _json(downloaded_file("synonym", "wordnet_synonyms.json"))
    except DataUnavailable:
        table = None  # offline: the same table, derived from WordNet
    return wordnet.Synonyms(nlp, reader, table)


@cache
def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- the perturbations ------------------------------------------------------------------------

KEY_APPROX = {  # HELM's TyposPerturbation: distance-1 keys only, the letter itself excluded
    "q": "was", "w": "qesad", "e": "wsdfr", "r": "edfgt", "t": "rfghy", "y": "tghju", "u": "yhjki",
    "i": "ujklo", "o": "iklp", "p": "ol", "a": "qwsz", "s": "weadzx", "d": "erfcxs", "f": "rtgvcd",
    "g": "tyhbvf", "h": "yujnbg", "j": "uikmnh", "k": "iolmj", "l": "opk", "z": "asx", "x": "sdcz",
    "c": "dfvx", "v": "fgbc", "b": "ghnv", "n": "hjmb", "m": "jkn",
}


def typos(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Each letter becomes a keyboard neighbour with probability ``prob`` (HELM's TyposPerturbation)."""
    out = []
    for letter in text:
        lower = letter.lower()
        new = lower
        if lower in KEY_APPROX and rng.random() < prob:
            new = rng.choice(list(KEY_APPROX[lower]))
        out.append(new.upper() if lower != letter else new)
    return "".join(out)


def misspelling(text: str, rng: random.Random, prob: float = 0.2) -> str:
    """Words with a common misspelling take one with probability ``prob``."""
    table, pattern = misspellings()

    def one(match: re.Match[str]) -> str:
        word = match.group(1)
        if rng.random() < prob:
            return match_case(word, str(rng.choice(table[word])))
        return word

    return pattern.sub(one, text)


def contraction(text: str, rng: random.Random, prob: float = 0.0) -> str:
    """Each expanded form followed by a space is contracted ("she is " -> "she's ")."""
    _, reverse, contract, _ = contraction_map()

    def one(match: re.Match[str]) -> str:
        found = match.group(1)
        return match_case(found, reverse.get(found, reverse.get(found.lower(), found))) + " "

    return contract.sub(one, text)


def expansion(text: str, rng: random.Random, prob: float = 0.0) -> str:
    """Each contraction is expanded ("she's" -> "she is")."""
    forward, _, _, expand = contraction_map()

    def one(match: re.Match[str]) -> str:
        found = match.group(0)
        return match_case(found, forward.get(found, forward.get(found.lower(), found)))

    return expand.sub(one, text)


def lowercase(text: str, rng: random.Random, prob: float = 0.0) -> str:
    return text.lower()


def extra_space(text: str, rng: random.Random, prob: float = 0.0, num_spaces: int = 2) -> str:
    return text.replace(" ", " " * num_spaces)


def space(text: str, rng: random.Random, prob: float = 0.0, max_spaces: int = 3) -> str:
    return re.sub(r" +", lambda _: " " * rng.randint(1, max_spaces), text)


def mild_mix(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """HELM's canonical robustness perturbation (MildMixPerturbation, the `robustness` run expander):
    lowercase, contraction, misspellings at ``prob``, then 1-3 spaces, one generator throughout."""
    text = contraction(lowercase(text, rng), rng)
    return space(misspelling(text, rng, prob), rng)


def filler(text: str, rng: random.Random, prob: float = 0.3) -> str:
    """Before each word, with probability ``prob``, a filler word or hedge."""
    fillers = filler_phrases()
    words: list[str] = []
    for word in text.split(" "):
        if rng.random() <= prob:
            words.append(rng.choice(fillers))
        words.append(word)
    return " ".join(words)


def _gender(mode: str, text: str, rng: random.Random, prob: float) -> str:
    for word, synonym in gender_mappings()[mode]:
        def one(match: re.Match[str], synonym: str = synonym) -> str:
            whole, found = match.group(0), match.group(1)
            if rng.uniform(0, 1) < prob:
                whole = whole.replace(found, match_case(found, synonym))
            return whole

        text = re.sub(f"[^\\w]({word})[^\\w]", one, text, flags=re.IGNORECASE)
    return text


def gender_pronouns(text: str, rng: random.Random, prob: float = 1.0) -> str:
    """Male pronouns become female ones with probability ``prob`` each (HELM's fairness spec)."""
    return _gender("pronouns", text, rng, prob)


def gender_terms(text: str, rng: random.Random, prob: float = 1.0) -> str:
    """Male terms (son, father, king, ...) become female ones with probability ``prob`` each."""
    return _gender("terms", text, rng, prob)


def dialect(text: str, rng: random.Random, prob: float = 1.0) -> str:
    """Words with an AAVE counterpart take one with probability ``prob`` (SAE -> AAVE)."""
    table, pattern = dialect_mapping()

    def one(match: re.Match[str]) -> str:
        whole, word = match.group(0), match.group(1)
        if rng.uniform(0, 1) < prob:
            whole = whole.replace(word, match_case(word, rng.choice(table[word.lower()])))
        return whole

    return pattern.sub(one, text)


def substitute_names(texts: list[str], rng: random.Random, prob: float, names: Names) -> list[str]:
    """HELM's `PersonNamePerturbation` over texts that share one substitution (an instance's
    references, then its input): a name, once replaced, is replaced the same way everywhere."""
    chosen: dict[str, str] = {}
    skipped: set[str] = set()
    genders = ("female", "male", "neutral")

    def substitute(token: str) -> str | None:
        options: list[str] | tuple[str, ...] = names.target
        gender = next((g for g in genders if token.lower() in names.by_gender.get(g, ())), None)
        if gender:
            options = [n for n in names.target if n in names.by_gender[gender]]
            if not options:
                return None
        return rng.choice(list(options))

    out = []
    for text in texts:
        tokens = []
        for token in re.split(r"([^\w])", text):
            lowered = token.lower()
            if lowered not in chosen and lowered not in skipped and lowered in names.source:
                if rng.uniform(0, 1) < prob:
                    if name := substitute(token):
                        chosen[lowered] = name
                else:
                    skipped.add(lowered)
            tokens.append(match_case(token, chosen[lowered]) if lowered in chosen else token)
        out.append("".join(tokens))
    return out


def person_name(text: str, rng: random.Random, prob: float = 1.0) -> str:
    """White American first names become black American ones of the same gender (HELM's fairness spec)."""
    return substitute_names([text], rng, prob, person_names())[0]


def synonym(text: str, rng: random.Random, prob: float = 0.5) -> str:
    """Nouns, verbs, adjectives and adverbs replaced by a WordNet synonym with probability ``prob``."""
    data = synonym_data()
    pos_of = {"VERB": "v", "NOUN": "n", "ADV": "r", "ADJ": "s"}
    out = ""
    for token in data.nlp(text):
        word = token.text
        pos = pos_of.get(token.pos_)
        found: list[str] = []
        if pos:
            for base in data.wordnet._morphy(word.lower(), pos):
                found.extend(data.of(base, pos))
        found = list(dict.fromkeys(s for s in found if s != word.lower()))
        if found and rng.uniform(0, 1) < prob:
            word = match_case(word, rng.choice(found))
        out += word + token.whitespace_
    return out
