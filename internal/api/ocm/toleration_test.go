package ocm

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTolerates(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	added := metav1.NewTime(now.Add(-time.Minute))
	taint := Taint{Key: "example.io/drain", Value: "yes", Effect: TaintEffectNoSelect, TimeAdded: &added}
	secs := func(s int64) *int64 { return &s }
	cases := []struct {
		name string
		tol  Toleration
		want bool
	}{
		{"empty key with Exists tolerates everything", Toleration{Operator: TolerationOpExists}, true},
		{"empty key without Exists tolerates nothing", Toleration{}, false},
		{"same key, Exists", Toleration{Key: "example.io/drain", Operator: TolerationOpExists}, true},
		{"same key and value, default Equal", Toleration{Key: "example.io/drain", Value: "yes"}, true},
		{"same key, other value", Toleration{Key: "example.io/drain", Value: "no"}, false},
		{"other key", Toleration{Key: "example.io/other", Operator: TolerationOpExists}, false},
		{"other effect", Toleration{Operator: TolerationOpExists, Effect: TaintEffectNoSelectIfNew}, false},
		{"same effect", Toleration{Operator: TolerationOpExists, Effect: TaintEffectNoSelect}, true},
		{"tolerationSeconds not yet run out", Toleration{Operator: TolerationOpExists, TolerationSeconds: secs(120)}, true},
		{"tolerationSeconds run out", Toleration{Operator: TolerationOpExists, TolerationSeconds: secs(60)}, false},
	}
	for _, c := range cases {
		if got := Tolerates([]Toleration{c.tol}, taint, now); got != c.want {
			t.Errorf("%s: Tolerates = %v, want %v", c.name, got, c.want)
		}
	}
	if Tolerates(nil, taint, now) {
		t.Error("no tolerations must not tolerate a taint")
	}
	unset := taint
	unset.TimeAdded = nil
	if !Tolerates([]Toleration{{Operator: TolerationOpExists, TolerationSeconds: secs(1)}}, unset, now) {
		t.Error("without timeAdded tolerationSeconds cannot have run out")
	}
}
