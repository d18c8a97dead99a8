package ocm

import (
	"time"
)

// Toleration operators.
const (
	TolerationOpEqual  = "Equal"
	TolerationOpExists = "Exists"
)

// Misconfigured says why upstream's placement scheduler refuses a
// placement's tolerations ("" when it does not). A refused placement selects
// no cluster at all.
func Misconfigured(tolerations []Toleration) string {
	for _, t := range tolerations {
		if t.Key == "" && t.Operator != TolerationOpExists {
			return "a toleration with an empty key must use operator Exists"
		}
		if t.Operator == TolerationOpExists && t.Value != "" {
			return "a toleration with operator Exists must have no value"
		}
	}
	return ""
}

// KeptUntil says until when a placement with these tolerations keeps a
// cluster carrying taints, by the rules of upstream's placement scheduler
// (its TaintToleration filter), and whether it lets the cluster go at all.
// inDecision tells whether the placement already selected the cluster.
//
// A PreferNoSelect taint never makes a placement drop a cluster, nor does a
// NoSelectIfNew taint on a cluster already selected. Any other taint needs a
// toleration: its effect empty or the taint's, its key empty or the taint's,
// and with operator Equal (the default) the taint's value, with Exists any
// value. tolerationSeconds limits any such toleration, counted from the
// taint's timeAdded (set by the hub; a taint without one counts as added
// long ago). The placement lets the cluster go at the first moment some
// taint has no toleration left.
func KeptUntil(tolerations []Toleration, taints []Taint, inDecision bool) (until time.Time, leaves bool) {
	for _, taint := range taints {
		t, ok := taintKeptUntil(tolerations, taint, inDecision)
		if ok && (!leaves || t.Before(until)) {
			until, leaves = t, true
		}
	}
	return until, leaves
}

// taintKeptUntil is KeptUntil for one taint.
func taintKeptUntil(tolerations []Toleration, taint Taint, inDecision bool) (until time.Time, leaves bool) {
	if taint.Effect == TaintEffectPreferNoSelect || (taint.Effect == TaintEffectNoSelectIfNew && inDecision) {
		return time.Time{}, false
	}
	// Untolerated, a taint is kept for no time after it was added.
	if taint.TimeAdded != nil {
		until = taint.TimeAdded.Time
	}
	added := until
	leaves = true
	for _, t := range tolerations {
		if !t.matches(taint) {
			continue
		}
		if t.TolerationSeconds == nil {
			return time.Time{}, false
		}
		if end := added.Add(time.Duration(*t.TolerationSeconds) * time.Second); end.After(until) {
			until = end
		}
	}
	return until, leaves
}

func (t Toleration) matches(taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case TolerationOpExists:
		return true
	case TolerationOpEqual, "":
		return t.Value == taint.Value
	}
	return false
}
