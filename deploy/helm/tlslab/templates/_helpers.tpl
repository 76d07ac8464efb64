{{/* The chart's name, as Kubernetes names allow (63 characters). */}}
{{- define "tlslab.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's name for its objects: RELEASE-tlslab, or RELEASE alone if it says tlslab. */}}
{{- define "tlslab.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "tlslab.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "tlslab.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "tlslab.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tlslab.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tlslab.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tlslab.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tlslab.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret holding the store's URL: the existing one named, or the chart's own. */}}
{{- define "tlslab.storeSecret" -}}
{{- if .Values.store.existingSecret }}
{{- .Values.store.existingSecret }}
{{- else if .Values.store.url }}
{{- printf "%s-store" (include "tlslab.fullname" .) }}
{{- else }}
{{- fail "store.existingSecret or store.url is required: the agents' PostgreSQL results store (docs/distributed.md)" }}
{{- end }}
{{- end }}

{{/* The run's number, checked: what `tlslab run ... --detach` printed. */}}
{{- define "tlslab.run" -}}
{{- $run := toString (required "run is required: the number `tlslab run --agents N --store URL --detach` printed (docs/distributed.md)" .Values.run) }}
{{- if not (regexMatch "^[0-9]+$" $run) }}
{{- fail (printf "run is %q, not a run number: give the number `tlslab run ... --detach` printed" $run) }}
{{- end }}
{{- $run }}
{{- end }}
