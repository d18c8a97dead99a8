package spoke

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/helmrelease"
	"github.com/spokekit/spokekit/internal/values"
)

// releaseUpgrade is the upgrade of the hub's Helm release (--release) a
// command plans: the revision read, and the change of its spokes (none
// when the release already says what the command would make it say).
type releaseUpgrade struct {
	Name     string `json:"name"`
	Revision int    `json:"revision"`
	// NewRevision is the revision the upgrade makes (0: no upgrade).
	NewRevision int `json:"newRevision,omitempty"`
	// Diff is the change of the spokes section, as a unified diff.
	Diff string `json:"diff,omitempty"`

	// Edited is the release's spokes section after the edit.
	Edited  []byte `json:"-"`
	change  *helmrelease.Change
	client  *helmrelease.Client
	release *helmrelease.Release
}

// readRelease reads --release in the hub's namespace (nil without one) and
// refuses a release that cannot take a spokes change.
func (t *writeTarget) readRelease(namespace string) (*helmrelease.Client, *helmrelease.Release, error) {
	if t.Release == "" {
		return nil, nil, nil
	}
	c, err := helmrelease.Open(t.f, namespace)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.Read(t.Release)
	if err != nil {
		return nil, nil, err
	}
	if err := r.Refusal(); err != nil {
		return nil, nil, err
	}
	return c, r, nil
}

// planReleaseUpgrade runs edit (values.Add, Remove or SetSecret) on the
// release's spokes section; the upgrade changes only what it changed.
func planReleaseUpgrade(c *helmrelease.Client, r *helmrelease.Release, edit func(doc []byte, kind values.Kind) ([]byte, bool, error)) (*releaseUpgrade, error) {
	doc, err := r.Values()
	if err != nil {
		return nil, err
	}
	edited, changed, err := edit(doc, values.HelmValues)
	if err != nil {
		return nil, err
	}
	u := &releaseUpgrade{Name: r.Name, Revision: r.Revision, Edited: edited, client: c, release: r}
	if !changed {
		return u, nil
	}
	ch, err := r.Plan(edited)
	if err != nil {
		return nil, err
	}
	u.change, u.NewRevision, u.Diff = ch, ch.Revision, ch.Diff()
	return u, nil
}

// apply makes the revision: with --dry-run=server Helm renders and
// validates it against the hub and writes nothing; with client nothing is
// sent.
func (u *releaseUpgrade) apply(ctx context.Context, dryRun cli.DryRun, timeout time.Duration, p *cli.Progress) error {
	if u == nil || u.change == nil || dryRun == cli.DryRunClient {
		return nil
	}
	p.Update("upgrading Helm release %s to revision %d (its hooks apply the Spokes)", u.Name, u.NewRevision)
	_, err := u.client.Upgrade(ctx, u.change, helmrelease.UpgradeOptions{Timeout: timeout, ServerDryRun: dryRun == cli.DryRunServer})
	return err
}

// step is what the upgrade did, or under a dry run would do.
func (u *releaseUpgrade) step(ns string, dryRun cli.DryRun) Step {
	what := "helm release " + ns + "/" + u.Name
	switch {
	case u.change == nil:
		return Step{what, fmt.Sprintf("revision %d already says so: no upgrade", u.Revision)}
	case dryRun != cli.DryRunNone:
		return Step{what, fmt.Sprintf("would make revision %d from %d, only fleetConfig.spokes changed", u.NewRevision, u.Revision)}
	}
	return Step{what, fmt.Sprintf("revision %d made from %d, only fleetConfig.spokes changed", u.NewRevision, u.Revision)}
}

// printDiff writes the spokes change of a dry run after the table.
// The release's values are cluster data: escaped like every table cell.
func (u *releaseUpgrade) printDiff(o *cli.Output, out io.Writer, dryRun cli.DryRun) {
	if u == nil || u.Diff == "" || dryRun == cli.DryRunNone || !o.IsTable() {
		return
	}
	fmt.Fprint(out, cli.EscapeTerminal(u.Diff))
}
