# syntax=docker/dockerfile:1
# The rsc coordinator image: `rsc serve` as a non-root user, configured by COORDINATOR_* environment
# variables and/or a TOML file mounted at /etc/rsc/rsc.toml (set RSC_CONFIG=/etc/rsc/rsc.toml to read it).
#
#   docker build -t rsc .
#   docker run --rm -p 8080:8080 -e COORDINATOR_REDIS_URL=redis://redis:6379 -e RSC_ADMIN_PASSWORD=… rsc
#
# crates/cli/tests/packaging.rs runs this file's ENTRYPOINT, ENV and HEALTHCHECK against the real binary;
# the build itself is not tested there (images cannot be pulled on the test machines).

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY . .
# Only the rsc binary: the Terraform provider (which needs protoc) is not built.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p rsc-cli \
    && install -D -m 0755 target/release/rsc /out/rsc

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# ca-certificates for rediss:// to managed Redis; curl for the health check below.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 rsc \
    && useradd --system --uid 10001 --gid rsc --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin rsc \
    && mkdir -p /etc/rsc
COPY --from=build /out/rsc /usr/local/bin/rsc
# The API listens on all interfaces of the container on 8080 (the health check probes it there). This
# environment variable overrides `listen` in a mounted TOML file; set COORDINATOR_LISTEN to change it.
ENV COORDINATOR_LISTEN=0.0.0.0:8080 \
    RSC_LOG=info
# 8080: the API (and /metrics with a READ principal); 9464: the optional unauthenticated metrics
# listener (COORDINATOR_METRICS_LISTEN=0.0.0.0:9464).
EXPOSE 8080 9464
USER 10001:10001
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["curl", "--fail", "--silent", "--show-error", "--max-time", "2", "--output", "/dev/null", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/rsc", "serve"]
