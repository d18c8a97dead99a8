package spoke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// hubUnjoins tells whether the hub unjoins the cluster itself, with the
// stored kubeconfig: in unified mode (no agent add-on listed), for
// hub-as-spoke, and in addon mode before the agent took over (PivotComplete
// not True). Otherwise the agent on the spoke does it and the stored
// kubeconfig is not needed, and may have been purged. Either way only while
// the Spoke carries spoke-cleanup: without it (addon mode, never joined)
// there is nothing to unjoin and the hub deletes the Spoke at once. A join
// that adds it later needs the same stored kubeconfig.
func hubUnjoins(s *fleetconfig.Spoke) bool {
	if !slices.Contains(s.Finalizers, fleetconfig.FinalizerSpokeCleanup) {
		return false
	}
	return s.IsHubAsSpoke() || !listsAgent(s) || !pivoted(s)
}

// refuseUnusableCredential refuses, before anything changes, the removal of
// a spoke the hub must unjoin itself when the stored kubeconfig cannot do
// it: missing, unreadable, refused by the untrusted loader, or carrying a
// credential that has expired. The hub would wait on that unjoin forever.
func (h *HubClient) refuseUnusableCredential(ctx context.Context, s *fleetconfig.Spoke, now time.Time) error {
	if !hubUnjoins(s) || s.Spec.Kubeconfig.SecretReference == nil {
		return nil
	}
	rotate := fmt.Sprintf("store a working one with kubectl spoke rotate-kubeconfig %s --spoke-kubeconfig FILE, then run this again (or, if the cluster is gone for good, kubectl spoke force-remove %s)", s.Name, s.Name)
	kc, _, err := h.StoredKubeconfig(ctx, s)
	if errors.Is(err, errNoSecret) {
		// A secret gone is no proof of anything; the hub needs it here.
		rotate = fmt.Sprintf("store one with kubectl spoke add %s --spoke-kubeconfig FILE, then run this again (or, if the cluster is gone for good, kubectl spoke force-remove %s)", s.Name, s.Name)
	}
	if err != nil {
		return exitcode.RefusedErrorf("the hub unjoins spoke %s itself, with its stored kubeconfig, and cannot use it: %w; nothing was changed: %s", s.Name, err, rotate)
	}
	c, err := kc.Credential(now, 0)
	switch {
	case c.Expires != nil && !c.Expires.After(now):
		return exitcode.RefusedErrorf("the hub unjoins spoke %s itself, with its stored kubeconfig, whose %s expired at %s: the removal would wait forever; nothing was changed: %s",
			s.Name, c.Kind, c.Expires.UTC().Format(time.RFC3339), rotate)
	case err != nil:
		return exitcode.RefusedErrorf("the hub unjoins spoke %s itself, with its stored kubeconfig, and cannot use it: %w; nothing was changed: %s", s.Name, err, rotate)
	}
	return nil
}
