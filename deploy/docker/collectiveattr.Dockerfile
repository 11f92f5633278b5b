# The collectiveattr distribution (node-local DaemonSet and gateway
# StatefulSet). Build from the repository root:
#   docker build -f deploy/docker/collectiveattr.Dockerfile -t collectiveattr/otelcol-collectiveattr:0.1.0 .
# Multi-stage: ocb and the Go toolchain stay in the build stage; the image
# holds one static binary (CGO_ENABLED=0) on distroless/static, run as the
# distroless nonroot user.
FROM golang:1.26-bookworm AS build
ARG OCB_VERSION=v0.165.0
RUN go install go.opentelemetry.io/collector/cmd/builder@${OCB_VERSION}
WORKDIR /src
# Module downloads first, cached unless the manifests change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN builder --config builder-config.yaml \
 && /src/build/otelcol-collectiveattr --version

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/build/otelcol-collectiveattr /otelcol-collectiveattr
USER 65532:65532
# OTLP gRPC / HTTP, Prometheus exporter, health_check.
EXPOSE 4317 4318 8889 13133
ENTRYPOINT ["/otelcol-collectiveattr"]
CMD ["--config=/conf/node-local.yaml"]
