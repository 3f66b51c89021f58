# outletd — the two commands of README.md, and the pieces behind them.
SWIFT ?= swift

.PHONY: run test deps build sql lint format clean

## make run: install what is missing, start a throwaway mosquitto + PostgreSQL, outletd and
## simulated outlets, and show the per-outlet summary updating (Ctrl-C stops everything).
run: deps
	scripts/demo

## make test: install what is missing, build, run every test (they start their own servers).
test: deps lint
	$(SWIFT) build --build-tests
	$(SWIFT) test

## make lint: the one formatter (.swift-format: 4 spaces, 120 columns); make format fixes.
lint:
	$(SWIFT) format lint --strict -r Sources Tests Benchmarks Package.swift

format:
	$(SWIFT) format -i -r Sources Tests Benchmarks Package.swift

deps:
	scripts/install-deps

build: deps
	$(SWIFT) build

## make sql: embed sql/*.sql into the binary after editing a migration (a test fails until you do).
sql:
	scripts/embed-sql

clean:
	rm -rf .build
