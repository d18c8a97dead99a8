package harness

import (
	"context"
	"fmt"
)

// InstallHubCRDs installs what a fleet hub serves: the OCM CRDs and the
// FleetConfig Spoke and Hub CRDs (upstream when ../shared/crds exists,
// otherwise the project's generated ones).
func InstallHubCRDs(ctx context.Context, c *Cluster) error {
	ocm, err := ModuleFiles(ctx, OCMModule, OCMCRDs)
	if err != nil {
		return err
	}
	fc, _, err := FleetConfigCRDs()
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(ctx, append(ocm, fc...)...); err != nil {
		return fmt.Errorf("installing the hub CRDs: %w", err)
	}
	return nil
}
