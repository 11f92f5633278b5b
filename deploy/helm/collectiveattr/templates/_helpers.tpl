{{- define "collectiveattr.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "collectiveattr.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "collectiveattr.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "collectiveattr.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: pass (list $ "component"). */}}
{{- define "collectiveattr.selectorLabels" -}}
{{- $top := index . 0 -}}
app.kubernetes.io/name: {{ include "collectiveattr.name" $top }}
app.kubernetes.io/instance: {{ $top.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "collectiveattr.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "collectiveattr.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "collectiveattr.gatewayService" -}}
{{- printf "%s-gateway" (include "collectiveattr.fullname" .) -}}
{{- end -}}

{{/* Environment shared by every collector container: its own IP for the
listeners, its node for node-local DCGM target selection. */}}
{{- define "collectiveattr.commonEnv" -}}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: HEALTH_CHECK_PORT
  value: {{ .Values.healthCheckPort | quote }}
- name: SELF_METRICS_PORT
  value: {{ .Values.selfMetricsPort | quote }}
{{- end -}}

{{- define "collectiveattr.dcgmEnv" -}}
- name: DCGM_POD_LABEL_APP
  value: {{ .Values.dcgm.podLabelApp | quote }}
- name: DCGM_PORT
  value: {{ .Values.dcgm.port | quote }}
- name: DCGM_SCRAPE_INTERVAL
  value: {{ .Values.dcgm.scrapeInterval | quote }}
{{- end -}}

{{- define "collectiveattr.probes" -}}
livenessProbe:
  httpGet:
    path: /
    port: health
  initialDelaySeconds: 5
  periodSeconds: 10
readinessProbe:
  httpGet:
    path: /
    port: health
  periodSeconds: 5
{{- end -}}

{{- define "collectiveattr.promAnnotations" -}}
{{- if .Values.prometheusExporter.podAnnotations -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.prometheusExporter.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/*
The persistence volume and its mount (persistence.enabled): a hostPath, or an
emptyDir when persistence.hostPath is empty.
*/}}
{{- define "collectiveattr.persistenceVolume" -}}
- name: persistence
  {{- if .Values.persistence.hostPath }}
  hostPath:
    path: {{ .Values.persistence.hostPath }}
    type: DirectoryOrCreate
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}

{{- define "collectiveattr.persistenceMount" -}}
- name: persistence
  mountPath: /var/lib/collectiveattr
{{- end }}

{{- define "collectiveattr.persistenceEnv" -}}
- name: CHECKPOINT_INTERVAL
  value: {{ .Values.persistence.checkpointInterval | quote }}
{{- end }}

{{/*
The topology: nodeLocal or multiNode. `mode` is its deprecated name and
wins when set (a values file written for the old key); anything else in
`mode` is most likely an attribution mode given to the wrong key.
*/}}
{{- define "collectiveattr.topology" -}}
{{- $t := .Values.topology -}}
{{- if hasKey .Values "mode" -}}
{{- if not (has .Values.mode (list "nodeLocal" "multiNode")) -}}
{{- fail (printf "mode is the deprecated name of topology (nodeLocal or multiNode), got %q: set the attribution mode with collectiveattr.mode (reference or evidence)" (toString .Values.mode)) -}}
{{- end -}}
{{- $t = .Values.mode -}}
{{- end -}}
{{- if not (has $t (list "nodeLocal" "multiNode")) -}}
{{- fail (printf "topology must be nodeLocal or multiNode, got %q" (toString $t)) -}}
{{- end -}}
{{- $t -}}
{{- end -}}

{{/*
The processor's settings from .Values.collectiveattr, merged last on top of
the collector config. Storage belongs to `persistence`, which also adds the
file_storage extension the key names.
*/}}
{{- define "collectiveattr.processorConfig" -}}
{{- range $k := list "storage" "checkpoint_interval" }}
{{- if hasKey $.Values.collectiveattr $k }}
{{- fail (printf "collectiveattr.%s is set by the chart: use persistence.enabled and persistence.checkpointInterval" $k) }}
{{- end }}
{{- end -}}
# Rendered from the chart's `collectiveattr` values.
processors:
  collectiveattr:
    {{- toYaml .Values.collectiveattr | nindent 4 }}
{{- end -}}

{{/*
Where the result log records go (resultLogs), merged on top of the
collector config. The logs pipeline's exporter list is replaced.
*/}}
{{- define "collectiveattr.resultLogsConfig" -}}
{{- if eq .Values.resultLogs.exporter "file" -}}
# Rendered from the chart's `resultLogs` values: OTLP JSON lines, rotated.
#   RESULT_LOGS_PATH   the file, on the results volume
exporters:
  file/results:
    path: ${env:RESULT_LOGS_PATH}
    rotation:
      max_megabytes: {{ int .Values.resultLogs.file.maxMegabytes }}
      max_backups: {{ int .Values.resultLogs.file.maxBackups }}
service:
  pipelines:
    logs:
      exporters: [file/results]
{{- else if eq .Values.resultLogs.exporter "otlp" -}}
{{- if not .Values.resultLogs.otlp.endpoint }}
{{- fail "resultLogs.exporter otlp needs resultLogs.otlp.endpoint (host:port)" }}
{{- end -}}
# Rendered from the chart's `resultLogs` values: OTLP gRPC to a log backend.
#   RESULT_LOGS_OTLP_ENDPOINT   host:port
exporters:
  otlp/results:
    endpoint: ${env:RESULT_LOGS_OTLP_ENDPOINT}
    tls:
      insecure: true
service:
  pipelines:
    logs:
      exporters: [otlp/results]
{{- else -}}
{{- fail (printf "resultLogs.exporter must be file or otlp, got %q" (toString .Values.resultLogs.exporter)) -}}
{{- end -}}
{{- end -}}

{{/* Environment of the result logs exporter: pass (list $ "file name"). */}}
{{- define "collectiveattr.resultLogsEnv" -}}
{{- $top := index . 0 -}}
{{- if eq $top.Values.resultLogs.exporter "file" -}}
- name: RESULT_LOGS_PATH
  value: {{ printf "/var/log/collectiveattr/%s" (index . 1) | quote }}
{{- else -}}
- name: RESULT_LOGS_OTLP_ENDPOINT
  value: {{ $top.Values.resultLogs.otlp.endpoint | quote }}
{{- end -}}
{{- end -}}

{{- define "collectiveattr.resultLogsMount" -}}
{{- if eq .Values.resultLogs.exporter "file" -}}
- name: results
  mountPath: /var/log/collectiveattr
{{- end -}}
{{- end -}}

{{- define "collectiveattr.resultLogsVolume" -}}
{{- if eq .Values.resultLogs.exporter "file" -}}
- name: results
  hostPath:
    path: {{ .Values.resultLogs.file.hostPath }}
    type: DirectoryOrCreate
{{- end -}}
{{- end -}}

{{/*
The init container that makes the collector's user own the hostPath
directories it writes: pass (list $ (list "volume name" ...)). Renders
nothing when there is none or volumePermissions is off.
*/}}
{{- define "collectiveattr.volumePermissions" -}}
{{- $top := index . 0 -}}
{{- $volumes := index . 1 -}}
{{- if and $top.Values.volumePermissions.enabled $volumes -}}
- name: volume-permissions
  image: "{{ $top.Values.volumePermissions.image.repository }}:{{ $top.Values.volumePermissions.image.tag }}"
  imagePullPolicy: {{ $top.Values.volumePermissions.image.pullPolicy }}
  command:
    - sh
    - -c
    - chown {{ $top.Values.podSecurityContext.runAsUser }}:{{ $top.Values.podSecurityContext.runAsGroup }}{{ range $volumes }} /mnt/{{ . }}{{ end }}
  securityContext:
    runAsUser: 0
    runAsGroup: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
      add: [CHOWN]
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
    limits:
      memory: 32Mi
  volumeMounts:
    {{- range $volumes }}
    - name: {{ . }}
      mountPath: /mnt/{{ . }}
    {{- end }}
{{- end -}}
{{- end -}}

{{- define "collectiveattr.otlpService" -}}
{{- printf "%s-otlp" (include "collectiveattr.fullname" .) -}}
{{- end -}}
