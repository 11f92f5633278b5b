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
