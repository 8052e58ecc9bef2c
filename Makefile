# Paiju — the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
BUF_VERSION := 1.75.0
BUF := $(TOOLS)/npm/node_modules/.bin/buf
VENV := .venv
BENCH_VENV := .venv-bench
BIN := $(VENV)/bin
export UV_PYTHON_DOWNLOADS := never

.PHONY: help setup run test lint format scenario bench soak clean protos chromium cluster-test manifests docs node unit \
	integration

# Set-up steps (installing, generating code) print one line each; their output goes to SETUP_LOG, and when a step
# fails the last lines of the log are printed. `$(STEP) "what it does" command args…` runs one (the command is run
# as it is, without a shell: wrap shell syntax in `sh -c`).
SETUP_LOG := .data/logs/setup.log
STEP = sh -c 'what=$$1; shift; mkdir -p "$$(dirname "$(SETUP_LOG)")"; echo "  $$what"; \
	printf "\n== %s: %s\n" "$$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$$what" >> "$(SETUP_LOG)"; \
	"$$@" >> "$(SETUP_LOG)" 2>&1 || { status=$$?; echo "$$what: failed (exit $$status); the end of $(SETUP_LOG):" >&2; \
	tail -n 40 "$(SETUP_LOG)" >&2; exit $$status; }' step

## setup: install the pinned dependencies into .venv and generate the contract's code (every target does it first)

PROTOS := $(wildcard protos/paiju/v1/*.proto)
GEN := services/contract/paiju/v1
# The contract's imports from other projects, taken from the pinned packages that ship them (not committed):
# buf/validate/validate.proto rendered from protovalidate's descriptor, google/rpc/*.proto from
# googleapis-common-protos.
THIRD_PARTY_PROTOS := protos/buf/validate/validate.proto protos/google/rpc/status.proto \
	protos/google/rpc/error_details.proto protos/google/rpc/code.proto

setup: $(VENV)/.synced $(GEN)/.generated

## help: list the targets
help:
	@awk '/^## [a-z-]+: / { line = substr($$0, 4); at = index(line, ": "); \
		printf "  make %-13s %s\n", substr(line, 1, at - 1), substr(line, at + 2) }' $(firstword $(MAKEFILE_LIST))

## protos: the contract's third-party imports, and its Python code (paiju.v1, buf.validate) (not committed)
protos: $(GEN)/.generated

$(THIRD_PARTY_PROTOS) &: $(VENV)/.synced
	@$(STEP) "taking the contract's imports from their packages (protos/buf, protos/google)" \
		$(BIN)/python -m paiju.tools.protosource validate protos
	@$(STEP) "taking google.rpc's protos" $(BIN)/python -m paiju.tools.protosource googlerpc protos

$(GEN)/.generated: $(PROTOS) $(THIRD_PARTY_PROTOS) $(VENV)/.synced
	@rm -rf $(GEN) services/contract/buf
	@mkdir -p $(GEN)
	@$(STEP) "generating the contract's Python code from protos/ (services/contract/paiju/v1)" \
		env PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m grpc_tools.protoc -I protos \
		--python_out=services/contract --grpc_python_out=services/contract \
		--mypy_out=services/contract --mypy_grpc_out=services/contract $(PROTOS) buf/validate/validate.proto
	@touch $@

$(BUF):
	@$(STEP) "installing buf $(BUF_VERSION) (npm)" \
		npm install --silent --no-audit --no-fund --prefix $(TOOLS)/npm @bufbuild/buf@$(BUF_VERSION)

$(UV):
	@$(STEP) "making .tools, a virtual environment for uv" $(PYTHON) -m venv $(TOOLS)
	@$(STEP) "installing uv $(UV_VERSION), checked against its hashes (.ci/uv-requirements.txt)" \
		$(TOOLS)/bin/pip install --quiet --require-hashes -r .ci/uv-requirements.txt

$(VENV)/.synced: pyproject.toml services/*/pyproject.toml uv.lock | $(UV)
	@$(STEP) "installing the locked dependencies into .venv (uv sync: a minute or two the first time)" \
		$(UV) sync --frozen --python $(PYTHON)
	@touch $@

## run: the whole stack on this machine, a table of bots of each game, and how to play and watch (Ctrl-C stops it)
run: setup
	@$(BIN)/paiju stack $(ARGS)

## node: the TypeScript client (clients/node): its pinned packages (npm ci, from package-lock.json), its code of the
## contract generated from protos/ with the local protoc-gen-es (buf generate, into src/gen) and the whole package
## type-checked and compiled by the pinned tsc (into dist); none of it committed. tests/node runs it.
NODE_CLIENT := clients/node
NODE_SOURCES := $(wildcard $(NODE_CLIENT)/src/*.ts $(NODE_CLIENT)/examples/*.ts $(NODE_CLIENT)/test/*.ts)
node: $(NODE_CLIENT)/dist/.built

$(NODE_CLIENT)/node_modules/.package-lock.json: $(NODE_CLIENT)/package.json $(NODE_CLIENT)/package-lock.json
	@$(STEP) "installing the TypeScript client's packages (npm ci)" \
		npm ci --prefix $(NODE_CLIENT) --no-audit --no-fund --ignore-scripts

$(NODE_CLIENT)/src/gen/.generated: $(PROTOS) $(THIRD_PARTY_PROTOS) $(NODE_CLIENT)/buf.gen.yaml \
		$(NODE_CLIENT)/node_modules/.package-lock.json | $(BUF)
	@$(STEP) "generating the TypeScript client's code from protos/ (buf generate)" \
		$(BUF) generate protos --template $(NODE_CLIENT)/buf.gen.yaml
	@touch $@

$(NODE_CLIENT)/dist/.built: $(NODE_CLIENT)/src/gen/.generated $(NODE_SOURCES) $(NODE_CLIENT)/tsconfig.json
	@rm -rf $(NODE_CLIENT)/dist
	@$(STEP) "compiling the TypeScript client (tsc)" $(NODE_CLIENT)/node_modules/.bin/tsc -p $(NODE_CLIENT)
	@touch $@

## test: lint, type-check and run the whole test suite, then the cluster rehearsal
test: lint chromium node
	$(BIN)/pytest -n auto --dist loadgroup -m "not cluster" $(PYTEST_ARGS)
	$(MAKE) cluster-test

## unit: the unit tier alone (the test's process only: no NATS, no PostgreSQL, no other process; a tenth of each
## property's examples): the inner loop
unit: setup
	PAIJU_UNIT_ONLY=1 PAIJU_EXAMPLES=0.1 PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath .pytest_cache/pycache) $(BIN)/pytest -n auto -m unit -q $(PYTEST_ARGS)

## integration: the tiers that need no stack of processes (unit and integration)
integration: setup
	$(BIN)/pytest -n auto -m "unit or integration" $(PYTEST_ARGS)

## cluster-test: the cluster rehearsal: three nats-servers, engines and lobbies; a node, an engine and a lobby killed
cluster-test: setup
	$(BIN)/pytest -s -m cluster tests/cluster

## manifests: render every kustomize overlay and validate each object offline (strict, the K8S_VERSION schemas)
K8S_VERSION := 1.33.0
manifests: setup
	@command -v kubectl >/dev/null || { echo "make lint needs kubectl (its kustomize renders deploy/k8s)" >&2; exit 1; }
	@for overlay in dev prod; do \
	  kubectl kustomize deploy/k8s/$$overlay | $(BIN)/kubernetes-validate --strict -k $(K8S_VERSION) --quiet - \
	    || { echo "deploy/k8s/$$overlay does not validate" >&2; exit 1; }; \
	done

## chromium: the result-sheet tests render pages in headless Chromium (Debian's package, installed when root)
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "make test needs Debian's chromium: sudo apt-get install chromium" >&2; exit 1; fi; }

## docs: the API reference docs/api.md, generated from the protos' comments (commit it with any contract change), and
## the settings tables of docs/operations.md, from the processes' declarations and the manifests (kubectl kustomize)
docs: $(GEN)/.generated
	$(BIN)/python -m paiju.tools.apidoc docs/api.md
	$(BIN)/python -m paiju.tools.settingsdoc docs/operations.md

# the contract's last release (tag v0.1.0): `make lint` refuses a breaking change against it
CONTRACT_RELEASE := 7372fce17fe46289194781d894cda7124efcdf91

## lint: buf lint and buf breaking of the contract, api.md up to date, the manifests, ruff, ruff format, mypy, imports
lint: setup $(BUF) manifests
	$(BUF) lint protos
	@if git cat-file -e $(CONTRACT_RELEASE)^{commit} 2>/dev/null; then \
	  $(BUF) breaking protos --against '.git#ref=$(CONTRACT_RELEASE),subdir=protos' \
	    || { echo "the contract breaks v0.1.0 ($(CONTRACT_RELEASE)): add, do not change" >&2; exit 1; }; \
	else echo "WARNING: the contract's last release ($(CONTRACT_RELEASE)) is not in this clone (shallow?): buf breaking not run" >&2; fi
	$(BIN)/python -m paiju.tools.apidoc --check docs/api.md
	$(BIN)/python -m paiju.tools.settingsdoc --check docs/operations.md
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

## format: apply ruff's formatting and fixes
format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## scenario: run one rule scenario file, e.g. make scenario FILE=tests/scenarios/zlj/<name>.json
scenario: setup
	@test -n "$(FILE)" || { echo "usage: make scenario FILE=path/to/scenario.json" >&2; exit 2; }
	@$(BIN)/paiju scenario "$(FILE)"

$(BENCH_VENV)/.installed: bench/requirements-rlcard.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet -r bench/requirements-rlcard.txt
	touch $@

## bench: every benchmark, the 30-minute memory soak among them (docs/benchmarks.md)
# Rules-core speed beside RLCard's Dou Dizhu; the codec's views, events and actions; engine act latency, throughput
# and replay speed; scoring's projection throughput and rebuild time; a Swiss round of 64 teams paired; how fast a
# new player's rating settles; the bot strengths against each other; a fair deal by commit–reveal beside version 1;
# JetStream's appends/s per durability setting;
# the command line's start-up CPU; engine start-up with and without 100,000 stored games; a lobby reading the
# matchmaking queue after 50,000 commands, in one aggregate and in generations; the edge's CPU per call
# against a bare server; what traces cost the engine, off and on; the whole stack loaded with bot tables and
# spectators, per Act against the floor of its parts (bench/floor.py), and a 30-minute memory soak; the full fuzz of
# every method (100,000 requests); the web view under a crowd; the environments beside RLCard's.
bench: setup $(BENCH_VENV)/.installed
	$(BIN)/python bench/run.py --rlcard-python $(BENCH_VENV)/bin/python $(ARGS)
	$(BIN)/python bench/codec.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/append.py
	$(BIN)/python bench/scoring.py
	$(BIN)/python bench/lobby_follow.py
	$(BIN)/python bench/swiss.py
	$(BIN)/python bench/fair_dealing.py
	$(BIN)/python bench/ratings.py
	$(BIN)/python bench/bots.py
	$(BIN)/python bench/durability.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/queue_history.py
	$(BIN)/python bench/commands.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/edge.py
	$(BIN)/python bench/cold.py
	$(BIN)/python bench/tracing.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/load.py --soak 30
	$(BIN)/python bench/fuzz.py
	$(BIN)/python bench/web.py
	$(BIN)/python bench/envs.py --rlcard-python $(BENCH_VENV)/bin/python

## soak: the memory soak alone (bench/load.py --soak MINUTES; 30 by default): each process's slope in MiB a minute
SOAK_MINUTES := 30
soak: setup
	$(BIN)/python bench/load.py --soak $(SOAK_MINUTES)

## clean: remove the environments, the tools and the caches (not .data, the stack's streams and database)
clean:
	rm -rf $(VENV) $(BENCH_VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache .hypothesis clients/node/node_modules clients/node/src/gen clients/node/dist
