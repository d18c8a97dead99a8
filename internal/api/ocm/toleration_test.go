package ocm

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKeptUntil(t *testing.T) {
	added := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := metav1.NewTime(added)
	taint := Taint{Key: "example.io/drain", Effect: TaintEffectNoSelect, TimeAdded: &at}
	secs := func(s int64) *int64 { return &s }
	never := time.Time{}
	cases := []struct {
		name       string
		tol        Toleration
		taint      Taint
		inDecision bool
		want       time.Time // zero: kept for good
	}{
		{"no toleration: leaves at once", Toleration{Key: "example.io/other", Operator: TolerationOpExists}, taint, true, added},
		{"empty key with Exists tolerates every taint", Toleration{Operator: TolerationOpExists}, taint, true, never},
		{"empty key with Equal matches on the value (upstream)", Toleration{Operator: TolerationOpEqual}, taint, true, never},
		{"empty key with Equal and another value", Toleration{Value: "x"}, taint, true, added},
		{"same key, Exists", Toleration{Key: "example.io/drain", Operator: TolerationOpExists}, taint, true, never},
		{"same key, default Equal, same (empty) value", Toleration{Key: "example.io/drain"}, taint, true, never},
		{"same key, other value", Toleration{Key: "example.io/drain", Value: "no"}, taint, true, added},
		{"unknown operator matches nothing", Toleration{Key: "example.io/drain", Operator: "Gt"}, taint, true, added},
		{"other effect", Toleration{Operator: TolerationOpExists, Effect: TaintEffectNoSelectIfNew}, taint, true, added},
		{"same effect", Toleration{Operator: TolerationOpExists, Effect: TaintEffectNoSelect}, taint, true, never},
		{"tolerationSeconds 30 from timeAdded", Toleration{Operator: TolerationOpExists, TolerationSeconds: secs(30)}, taint, true, added.Add(30 * time.Second)},
		{"tolerationSeconds 0", Toleration{Operator: TolerationOpExists, TolerationSeconds: secs(0)}, taint, true, added},
		{"PreferNoSelect is never enforced", Toleration{Key: "other", Operator: TolerationOpExists}, Taint{Key: "k", Effect: TaintEffectPreferNoSelect}, false, never},
		{"NoSelectIfNew keeps a selected cluster", Toleration{Key: "other", Operator: TolerationOpExists}, Taint{Key: "k", Effect: TaintEffectNoSelectIfNew, TimeAdded: &at}, true, never},
		{"NoSelectIfNew keeps out a new one", Toleration{Key: "other", Operator: TolerationOpExists}, Taint{Key: "k", Effect: TaintEffectNoSelectIfNew, TimeAdded: &at}, false, added},
		{
			"tolerationSeconds limits NoSelectIfNew too",
			Toleration{Key: "k", Operator: TolerationOpExists, TolerationSeconds: secs(30)},
			Taint{Key: "k", Effect: TaintEffectNoSelectIfNew, TimeAdded: &at},
			false, added.Add(30 * time.Second),
		},
		{
			"without timeAdded tolerationSeconds ran out long ago",
			Toleration{Operator: TolerationOpExists, TolerationSeconds: secs(30)},
			Taint{Key: "k", Effect: TaintEffectNoSelect},
			true, time.Time{}.Add(30 * time.Second),
		},
	}
	for _, c := range cases {
		until, leaves := KeptUntil([]Toleration{c.tol}, []Taint{c.taint}, c.inDecision)
		if leaves != !c.want.IsZero() || !until.Equal(c.want) {
			t.Errorf("%s: KeptUntil = %v, %v; want %v", c.name, until, leaves, c.want)
		}
	}

	// The longest matching toleration of a taint counts; the earliest taint
	// to run out decides.
	other := Taint{Key: "example.io/other", Effect: TaintEffectNoSelect, TimeAdded: &at}
	tols := []Toleration{
		{Operator: TolerationOpExists, TolerationSeconds: secs(30)},
		{Key: "example.io/drain", Operator: TolerationOpExists, TolerationSeconds: secs(60)},
	}
	until, leaves := KeptUntil(tols, []Taint{taint, other}, true)
	if !leaves || !until.Equal(added.Add(30*time.Second)) {
		t.Errorf("two taints: KeptUntil = %v, %v; want +30s", until, leaves)
	}
	if _, leaves := KeptUntil(nil, nil, true); leaves {
		t.Error("a cluster without taints is kept")
	}
}

func TestMisconfigured(t *testing.T) {
	for _, c := range []struct {
		tols []Toleration
		bad  bool
	}{
		{nil, false},
		{[]Toleration{{Operator: TolerationOpExists}}, false},
		{[]Toleration{{Key: "k", Value: "v"}}, false},
		{[]Toleration{{Operator: TolerationOpEqual}}, true},
		{[]Toleration{{}}, true},
		{[]Toleration{{Key: "k", Operator: TolerationOpExists, Value: "v"}}, true},
	} {
		if got := Misconfigured(c.tols) != ""; got != c.bad {
			t.Errorf("Misconfigured(%+v) = %v, want %v", c.tols, got, c.bad)
		}
	}
}
