package cli

import (
	"context"
	"strings"

	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// AccessRefusal is the refusal (exit 3) for missing permissions; nil when
// none is missing. rbac names the manifest that grants them.
func AccessRefusal(missing []string, rbac string) error {
	if len(missing) == 0 {
		return nil
	}
	return exitcode.RefusedErrorf("the current user may not %s; nothing was changed: bind the roles of %s (see docs/permissions.md), or run as a user who may",
		strings.Join(missing, ", "), rbac)
}

// Preflight checks, before a command's first write, that the current user
// may do everything the command will do. A check that cannot run refuses
// too: nothing was changed either way. A client dry run sends nothing and
// is not checked.
func Preflight(ctx context.Context, client authz.Client, dryRun DryRun, rbac string, needs []authz.Permission) error {
	if dryRun == DryRunClient || len(needs) == 0 {
		return nil
	}
	missing, err := authz.Missing(ctx, client, needs)
	if err != nil {
		return exitcode.RefusedErrorf("checking permissions: %w; nothing was changed", err)
	}
	return AccessRefusal(missing, rbac)
}
