#!/usr/bin/env bash
# Writes the demo collector's sources into OUT_DIR: ocb's output for builder-config-demo.yaml
# (main.go, main_*.go, components.go, go.mod, go.sum), gofmt'ed, with the collector's own
# telemetry factory (otelconftelemetry, which brings in OTLP and Prometheus exporters, cloud
# resource detectors and a Kubernetes client) replaced by telemetry.go's logger-only one, and
# go.mod tidied to match. telemetry.go is kept by hand and copied from here.
#
#   make demo-sources         regenerates cmd/otelcol-collectiveattr-demo (commit the result)
#   make check-demo-sources   fails when the committed sources differ from this output
#
# usage: generate.sh OCB OUT_DIR   (OUT_DIR two levels below the repository root: go.mod's
# replace of the collectiveattr module is ../..)
set -euo pipefail
ocb=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
gen=build/otelcol-collectiveattr-demo-gen
rm -rf "$gen"
mkdir -p build "$out"
sed "s|^  output_path: .*|  output_path: ./$gen|" builder-config-demo.yaml > build/builder-config-demo-gen.yaml
"$ocb" --config build/builder-config-demo-gen.yaml --skip-compilation >"$gen.log" 2>&1 || { cat "$gen.log" >&2; exit 1; }
for f in main.go main_others.go main_windows.go components.go go.mod go.sum; do
  cp "$gen/$f" "$out/$f"
done
[[ $out -ef $here ]] || cp "$here/telemetry.go" "$out/telemetry.go"
sed -i -e '/^\s*otelconftelemetry "go.opentelemetry.io\/collector\/service\/telemetry\/otelconftelemetry"$/d' \
  -e 's|Telemetry: otelconftelemetry.NewFactory(),|Telemetry: demoTelemetryFactory(),|' "$out/components.go"
grep -q 'Telemetry: demoTelemetryFactory(),' "$out/components.go" || { echo "generate.sh: ocb's components.go changed: no otelconftelemetry factory to replace" >&2; exit 1; }
gofmt -w "$out"/*.go
(cd "$out" && go mod tidy)
