{{/* The objects' name: the release's, with "-canaryd" unless it has it. */}}
{{- define "canaryd.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "canaryd" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-canaryd" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* What selects the pods: never changes for a release. */}}
{{- define "canaryd.selectorLabels" -}}
app.kubernetes.io/name: canaryd
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "canaryd.labels" -}}
{{ include "canaryd.selectorLabels" . }}
app.kubernetes.io/component: server
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "canaryd.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "canaryd.fullname" .) -}}
{{- end -}}

{{- define "canaryd.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* "true" on a postgres store, "" on memory. */}}
{{- define "canaryd.postgres" -}}
{{- if eq .Values.store.mode "postgres" }}true{{ end -}}
{{- end -}}

{{- define "canaryd.replicas" -}}
{{- if include "canaryd.postgres" . }}{{ .Values.store.postgres.replicas }}{{ else }}1{{ end -}}
{{- end -}}

{{/*
The pod's grace period: preStop (5s), --shutdown-grace, with a store its
hand-over (an analysis that does not stop or a store that does not answer,
3s + 5s, and the release of the leases, 5s), the HTTP server's shutdown
(5s), and 5s to spare, rounded up to 5s: 45 on memory, 60 on postgres with
the default 30s.
*/}}
{{- define "canaryd.terminationGracePeriodSeconds" -}}
{{- $sum := add 5 (int .Values.shutdownGraceSeconds) 5 5 -}}
{{- if include "canaryd.postgres" . }}{{ $sum = add $sum 13 }}{{ end -}}
{{- mul (div (add $sum 4) 5) 5 -}}
{{- end -}}

{{/* The store's URL, from its Secret: for serve and migrate alike. */}}
{{- define "canaryd.storeEnv" -}}
- name: CANARYD_STORE
  valueFrom:
    secretKeyRef:
      name: {{ required "store.postgres.url.secretName: the Secret holding the store's URL" .Values.store.postgres.url.secretName }}
      key: {{ .Values.store.postgres.url.key }}
{{- end -}}

{{- define "canaryd.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop:
    - ALL
{{- end -}}
