# oncegate: `make run` starts the whole stack and follows its logs; `make test` runs every test.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# make soak PROFILE=prod soaks the production-like profile; make bench-e2e PROFILE=prod benchmarks it.
PROFILE ?= dev

.PHONY: help run up down status clean prod-clean test bench bench-e2e bench-scale build lint fuzz soak deps prod-up prod-down prod-status test-prod

help: ## list the targets
	@grep -E '^[a-z0-9/-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

run: ## install what is missing, start the stack, follow the logs (Ctrl-C stops it)
	@./scripts/stack.sh run

up: ## start the stack in the background (only what is not running)
	@./scripts/stack.sh up

down: ## stop the stack
	@./scripts/stack.sh down

status: ## show which components run
	@./scripts/stack.sh status

clean: ## stop the stack and forget everything it kept (.run/, and its PostgreSQL folder under /var/tmp if it has one)
	@./scripts/stack.sh clean

prod-up: ## the production-like profile: Temporal server on PostgreSQL, Web UI, Redis Cluster, 2 gateways, 2 workers
	@./scripts/prod.sh up

prod-down: ## stop the production-like profile
	@./scripts/prod.sh down

prod-status: ## show which components of the production-like profile run
	@./scripts/prod.sh status

prod-clean: ## stop the production-like profile and forget everything it kept (.run-prod/, and its PostgreSQL folder under /var/tmp if it has one)
	@./scripts/prod.sh clean

test-prod: ## the end-to-end and crash tests against the production-like profile (starts it when it is not up)
	@./scripts/test-prod.sh

test: ## every test: unit, integration against real Redis/PostgreSQL/Temporal, short fuzzing
	@./scripts/test.sh

soak: ## chaos soak: agents retry while every component is killed; audits every operation (PROFILE=dev|prod, SOAK_DURATION, SOAK_SEED, SOAK_AGENTS)
	@./scripts/deps.sh
	SOAK_PROFILE=$(PROFILE) go run ./cmd/soak

fuzz: ## every fuzz target for FUZZTIME each (default 10m), results in .run/fuzz/
	@./scripts/fuzz.sh

bench: ## benchmarks (params binding, fingerprint, stores)
	go test -run='^$$' -bench=. -benchmem ./internal/params/ ./fingerprint/ ./idemstore/...

bench-e2e: ## the cost of safety: oncegate against floors in one run (PROFILE=dev: own stack, docs/benchmarks.md; PROFILE=prod: own production-like profile, docs/benchmarks-prod.md, CPU per process; BENCH_ARGS)
ifeq ($(PROFILE),prod)
	@./scripts/bench-prod.sh
else
	@./scripts/deps.sh
	go run ./cmd/bench-e2e -profile 10 $(BENCH_ARGS)
endif

bench-scale: ## cost as the truth grows: at each size (SCALE_SIZES, default 0,1000000 operations) fill the truth by COPY and measure against the floors; docs/benchmarks-scale.md
	@./scripts/deps.sh
	SCALE_SIZES=$(SCALE_SIZES) go run ./cmd/bench-scale

build: ## build the binaries into ./bin
	go build -o bin/ ./cmd/...

deps: ## install redis-server, postgresql and the Temporal CLI when missing
	@./scripts/deps.sh

bin/temporal:
	@./scripts/deps.sh

lint: ## gofmt, go vet, and every switch over one of the project's enums lists each member (exhaustive)
	@./scripts/lint.sh
