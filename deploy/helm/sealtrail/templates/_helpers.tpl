{{- define "sealtrail.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sealtrail.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sealtrail.labels" -}}
app.kubernetes.io/name: {{ include "sealtrail.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sealtrail.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sealtrail.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The service's config.json: the user's config plus what the chart owns. */}}
{{- define "sealtrail.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $_ := set $c "listen" (printf "0.0.0.0:%v" .Values.service.port) -}}
{{- $_ := set $c "dataDir" "/var/lib/sealtrail/data" -}}
{{- $_ := set $c "signingKeyFile" "/var/lib/sealtrail/keys/service.key" -}}
{{- $_ := set $c "kekFile" "/var/lib/sealtrail/keys/kek.key" -}}
{{- $_ := set $c "operatorTokenFile" "/var/lib/sealtrail/keys/operator.token" -}}
{{- $ops := default dict $c.ops -}}
{{- $_ := set $ops "keyHistoryFile" "/etc/sealtrail/service-key-history.json" -}}
{{- $_ := set $c "ops" $ops -}}
{{- toPrettyJson $c -}}
{{- end -}}
