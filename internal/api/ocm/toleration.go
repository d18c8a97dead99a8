package ocm

import "time"

// Toleration operators.
const (
	TolerationOpEqual  = "Equal"
	TolerationOpExists = "Exists"
)

// Tolerates reports whether a placement with these tolerations may keep (or
// pick) a cluster carrying taint at time now, by the rules of the Placement
// API: an empty key with Exists matches every taint; Exists matches any value
// of its key; Equal (the default) needs the same value; an empty effect
// matches every effect; tolerationSeconds counts from the taint's timeAdded
// and only limits NoSelect and PreferNoSelect taints.
func Tolerates(tolerations []Toleration, taint Taint, now time.Time) bool {
	for _, t := range tolerations {
		if t.matches(taint) && !t.expired(taint, now) {
			return true
		}
	}
	return false
}

func (t Toleration) matches(taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key == "" {
		return t.Operator == TolerationOpExists
	}
	if t.Key != taint.Key {
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

func (t Toleration) expired(taint Taint, now time.Time) bool {
	if t.TolerationSeconds == nil || taint.TimeAdded == nil {
		return false
	}
	if taint.Effect != TaintEffectNoSelect && taint.Effect != TaintEffectPreferNoSelect {
		return false
	}
	return !now.Before(taint.TimeAdded.Add(time.Duration(*t.TolerationSeconds) * time.Second))
}
