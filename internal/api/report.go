// Package api holds the small typed models the plugins read and write: the
// FleetConfig Spoke and Hub (v1beta1), the fields of other projects' kinds the
// plugins use, and the reports they print.
package api

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReportGroupVersion is the apiVersion of every report the plugins print with
// -o json|yaml, so scripts can tell them apart from cluster objects.
var ReportGroupVersion = schema.GroupVersion{Group: "spokekit.io", Version: "v1alpha1"}

// ReportMeta is the header of a printed report: kind, apiVersion and a name,
// which is what -o name and custom-columns read.
type ReportMeta struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ReportMetadata `json:"metadata"`
}

// ReportMetadata names a report or one of its items.
type ReportMetadata struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// NewReportMeta returns the header of a report of the given kind.
func NewReportMeta(kind, name string) ReportMeta {
	return ReportMeta{APIVersion: ReportGroupVersion.String(), Kind: kind, Metadata: ReportMetadata{Name: name}}
}

// NewNamespacedReportMeta is NewReportMeta for an item that lives in a namespace.
func NewNamespacedReportMeta(kind, namespace, name string) ReportMeta {
	m := NewReportMeta(kind, name)
	m.Metadata.Namespace = namespace
	return m
}

// NodeKind is the kind of a Node, for ObjectName.
var NodeKind = schema.GroupKind{Kind: "Node"}

// ObjectName writes an object's name as kubectl's -o name does
// (kind.group/name, kind/name in the core group), so that other kubectl
// commands take it.
func ObjectName(gk schema.GroupKind, name string) string {
	return strings.ToLower(gk.String()) + "/" + name
}
