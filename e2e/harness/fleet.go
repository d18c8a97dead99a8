package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// InstallHubCRDs installs what a fleet hub serves: the CRDs of the OCM
// release the test bed runs and the FleetConfig Spoke and Hub CRDs (upstream
// when ../shared/crds exists, otherwise the project's generated ones; it
// says which).
func InstallHubCRDs(ctx context.Context, c *Cluster) error {
	ocm, err := ModuleGlob(ctx, OCMComponents, OCMHubCRDs)
	if err != nil {
		return err
	}
	fc, source, err := FleetConfigCRDs()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "harness: %s: the %s Spoke and Hub CRDs from %s\n", c.Name, source, filepath.Dir(fc[0]))
	if err := c.InstallCRDs(ctx, append(ocm, fc...)...); err != nil {
		return fmt.Errorf("installing the hub CRDs: %w", err)
	}
	return nil
}

// InstallPlatformCRDs installs the Cluster API CRDs a platform cluster serves.
func InstallPlatformCRDs(ctx context.Context, c *Cluster) error {
	capi, err := ModuleFiles(ctx, CAPIModule, CAPICRDs)
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(ctx, capi...); err != nil {
		return fmt.Errorf("installing the Cluster API CRDs: %w", err)
	}
	return nil
}
