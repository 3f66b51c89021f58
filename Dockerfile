# outletd in a container: a two-stage build. The first stage builds a release binary with the Swift runtime
# linked in; the second is Debian 12 slim with libpq and libmosquitto, running as the non-root user outletd.
#
#   docker build --build-arg OUTLETD_COMMIT=$(git rev-parse --short=12 HEAD) -t outletd .
#   docker run -e OUTLETD_DATABASE_URL=postgresql://… -e OUTLETD_MQTT_URL=mqtt://… -p 9464:9464 \
#       -v outletd-spool:/var/lib/outletd outletd
#
# scripts/check-packaging checks that every path copied below exists.

FROM swift:6.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmosquitto-dev libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
ARG OUTLETD_COMMIT=dev
COPY Package.swift VERSION ./
COPY scripts/build-info scripts/build-info
COPY Sources Sources
# sql/ is embedded into the binary when it is built (Plugins/EmbedSQLPlugin).
COPY Plugins Plugins
COPY sql sql
# The manifest names every target's directory, tests and benchmarks included.
COPY Benchmarks Benchmarks
COPY Tests Tests
RUN OUTLETD_COMMIT="$OUTLETD_COMMIT" scripts/build-info \
    && swift build -c release --static-swift-stdlib --product outletd \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/outletd" /out/outletd \
    && strip --strip-unneeded /out/outletd

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 libmosquitto1 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/outletd --shell /usr/sbin/nologin outletd \
    && install -d -o outletd -g outletd -m 0700 /var/lib/outletd
COPY --from=build /out/outletd /usr/bin/outletd
COPY config/outletd.yaml /etc/outletd/outletd.yaml
USER outletd
WORKDIR /var/lib/outletd
ENV OUTLETD_SPOOL_DIRECTORY=/var/lib/outletd/spool \
    OUTLETD_HTTP_LISTEN=0.0.0.0:9464
VOLUME /var/lib/outletd
EXPOSE 9464
ENTRYPOINT ["/usr/bin/outletd"]
CMD ["run", "--config", "/etc/outletd/outletd.yaml"]
