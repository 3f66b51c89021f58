# outletd — the two commands of README.md, and the pieces behind them.
SWIFT ?= swift

.PHONY: run test deps build sql clean

## make run: install what is missing, start a throwaway mosquitto + PostgreSQL, outletd and
## simulated outlets, and show the per-outlet summary updating (Ctrl-C stops everything).
run: deps
	scripts/demo

## make test: install what is missing, build, run every test (they start their own servers).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

deps:
	scripts/install-deps

build: deps
	$(SWIFT) build

## make sql: embed sql/*.sql into the binary after editing a migration (a test fails until you do).
sql:
	scripts/embed-sql

clean:
	rm -rf .build
