# The agent distribution (multi-node DaemonSet: job-keyed load balancing to
# the gateways). Pinned to collector v0.161.0, so it is built with ocb
# v0.161.0. Build from the repository root:
#   docker build -f deploy/docker/agent.Dockerfile -t collectiveattr/otelcol-collectiveattr-agent:0.1.0 .
# Multi-stage: one static binary (CGO_ENABLED=0) on distroless/static, run as
# the distroless nonroot user.
FROM golang:1.26-bookworm AS build
ARG OCB_VERSION=v0.161.0
RUN go install go.opentelemetry.io/collector/cmd/builder@${OCB_VERSION}
WORKDIR /src
COPY builder-config-agent.yaml ./
ENV CGO_ENABLED=0
RUN builder --config builder-config-agent.yaml \
 && cp build/otelcol-collectiveattr-agent-src/otelcol-collectiveattr-agent /otelcol-collectiveattr-agent \
 && /otelcol-collectiveattr-agent --version

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /otelcol-collectiveattr-agent /otelcol-collectiveattr-agent
USER 65532:65532
# OTLP gRPC / HTTP, health_check.
EXPOSE 4317 4318 13133
ENTRYPOINT ["/otelcol-collectiveattr-agent"]
CMD ["--config=/conf/agent.yaml", "--config=/conf/resolver.yaml"]
