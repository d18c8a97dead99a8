{{/*
mural.featureGates renders a map of gate: bool as "Gate=true,Other=false",
sorted by name.
*/}}
{{- define "mural.featureGates" -}}
{{- $gates := list -}}
{{- range $name := keys . | sortAlpha -}}
{{- $gates = append $gates (printf "%s=%t" $name (index $ $name)) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/*
mural.spokes renders one Spoke per fleetConfig.spokes entry, in the release
namespace, the way the fleetconfig-controller chart renders them.
*/}}
{{- define "mural.spokes" -}}
{{- $ns := .Release.Namespace -}}
{{- $gates := include "mural.featureGates" (.Values.fleetConfig.spokeFeatureGates | default dict) -}}
{{- range .Values.fleetConfig.spokes }}
---
apiVersion: fleetconfig.open-cluster-management.io/v1beta1
kind: Spoke
metadata:
  name: {{ .name }}
  namespace: {{ $ns }}
spec:
  hubRef:
    name: {{ (.hubRef | default dict).name | default $.Values.fleetConfig.hub.name }}
    namespace: {{ $ns }}
  {{- with .cleanupConfig }}
  cleanupConfig:
    purgeKlusterletOperator: {{ ternary .purgeKlusterletOperator true (hasKey . "purgeKlusterletOperator") }}
    purgeKubeconfigSecret: {{ .purgeKubeconfigSecret | default false }}
    purgeAgentNamespace: {{ .purgeAgentNamespace | default false }}
    forceClusterDrain: {{ ternary .forceClusterDrain true (hasKey . "forceClusterDrain") }}
  {{- end }}
  {{- with .kubeconfig }}
  kubeconfig:
    {{- with .context }}
    context: {{ . | quote }}
    {{- end }}
    inCluster: {{ .inCluster | default false }}
    {{- if and .secretReference .secretReference.name }}
    secretReference:
      name: {{ .secretReference.name }}
      kubeconfigKey: {{ .secretReference.kubeconfigKey | default "kubeconfig" }}
    {{- end }}
  {{- end }}
  {{- with .timeout }}
  timeout: {{ . }}
  {{- end }}
  {{- with .logVerbosity }}
  logVerbosity: {{ . }}
  {{- end }}
  {{- $k := .klusterlet | default dict }}
  klusterlet:
    mode: {{ $k.mode | default "Default" | quote }}
    {{- with $gates }}
    featureGates: {{ . | quote }}
    {{- end }}
    forceInternalEndpointLookup: {{ $k.forceInternalEndpointLookup | default false }}
    {{- with $k.annotations }}
    annotations: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $k.resources }}
    resources: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $k.values }}
    values: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $k.valuesFrom }}
    valuesFrom: {{- toYaml . | nindent 6 }}
    {{- end }}
  {{- with .addOns }}
  addOns: {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
