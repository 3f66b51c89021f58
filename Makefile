# outletd — the two commands of README.md, and the pieces behind them.
SWIFT ?= swift

.PHONY: run test deps build build-info install deb sql lint format fuzz clean chaos chaos-short bench bench-soak scale-test browser-test failover-test

## make run: install what is missing, start a throwaway mosquitto + PostgreSQL, outletd and
## simulated outlets, and show the per-outlet summary updating (Ctrl-C stops everything).
run: deps build-info
	scripts/demo

## make test: install what is missing, check the page's JavaScript (node --check), build, run every test
## (they start their own servers), then the short chaos run (kill -9, PostgreSQL and mosquitto restarts;
## under a minute) and the PostgreSQL failover test (about 2 minutes on an idle machine).
test: deps lint build-info
	scripts/check-page
	$(SWIFT) build --build-tests
	scripts/ha-venv
	scripts/alert-venv
	SWIFT=$(SWIFT) scripts/unit-tests
	scripts/browser-test
	scripts/check-systemd
	scripts/check-packaging
	scripts/check-alert-rules
	scripts/fuzz 30
	scripts/chaos --short
	scripts/failover-test

## make browser-test: the owners' page in headless Chromium against a throwaway stack (about a minute):
## log in, claim, see power, switch off and see it confirmed, count the chart's hours with data.
browser-test: deps
	scripts/browser-test

## make fuzz: every libFuzzer target for FUZZ_SECONDS each (default 600).
FUZZ_SECONDS ?= 600
fuzz:
	scripts/fuzz $(FUZZ_SECONDS)

## make chaos: the full chaos run (about 2 minutes): 5 × kill -9, PostgreSQL restarted twice
## (once down 30 s), mosquitto restarted; prints acknowledged/stored/lost/duplicated.
chaos: deps
	scripts/chaos

chaos-short: deps
	scripts/chaos --short

## make bench: the broker's delivery ceiling (B: broker-ceiling, outletd's MQTT layer storing nothing), outletd,
## one COPY (D) and two Python ingesters drain the same QoS 1 backlog (READINGS=1000000; B, outletd and D in
## ROUNDS=3 rounds, medians reported), durable: outletd against H = 1/(1/B + 1/D) and min(B, D), CPU per million
## readings of the whole pipeline beside the floor (B's broker and client, D's COPY); then live latency at H/2
## (docs/PERFORMANCE.md; about 8 min, longer with the one-INSERT peer: NAIVE_READINGS=100000).
## make bench-soak: RSS over SOAK_SECONDS=600 at SOAK_RATE=1000/s.
bench: deps
	Benchmarks/throughput.sh

bench-soak: deps
	Benchmarks/throughput.sh --soak

## make failover-test: a primary and an asynchronous standby, the standby lagging, the primary killed
## (kill -9) and the standby promoted, with durability local (readings lost: how many) and replicated (none
## lost), then a planned switchover; prints acknowledged/stored/lost/duplicated per run (docs/HIGH-AVAILABILITY.md).
failover-test: deps
	scripts/failover-test

## make scale-test: 3 instances in one share group, 4 × kill -9 of one of them (about 2 minutes);
## prints acknowledged/stored/lost/duplicated and compares totals and rollups with a recomputation.
scale-test: deps
	scripts/scale-test

## make lint: the one formatter (.swift-format: 4 spaces, 120 columns); make format fixes. Then the docs: every
## link and docs/ mention resolves, README.md at most 200 lines, docs/README.md lists every page (scripts/check-docs).
lint:
	$(SWIFT) format lint --strict -r Sources Tests Benchmarks Plugins Package.swift
	scripts/check-docs

format:
	$(SWIFT) format -i -r Sources Tests Benchmarks Plugins Package.swift

deps:
	scripts/install-deps

build: deps build-info
	$(SWIFT) build

## make build-info: the version (VERSION) and git commit that `outletd --version` and /metrics report, written
## into Sources/CBuildInfo/generated/ (not committed); a plain `swift build` without it reports "dev".
build-info:
	scripts/build-info

## make install PREFIX=/usr/local DESTDIR=: the release binary (Swift runtime linked in), its man page,
## bash/zsh/fish completions, the systemd unit, a sysusers.d/tmpfiles.d pair and /etc/outletd/outletd.yaml
## (kept if present). make deb: the same as a Debian package in .build/deb/ (unit enabled by postinst,
## the configuration a conffile).
PREFIX ?= /usr/local
DESTDIR ?=
install: deps
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install

deb: deps
	scripts/build-deb

## make sql: nothing any more: `swift build` embeds sql/ (Plugins/EmbedSQLPlugin).
sql:
	scripts/embed-sql

clean:
	rm -rf .build
