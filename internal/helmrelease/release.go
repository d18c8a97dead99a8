// Package helmrelease upgrades the hub's Helm release with only
// fleetConfig.spokes changed: the seed's own way to add, remove or re-point a
// spoke.
//
// It uses the Helm SDK (helm.sh/helm/v4) rather than code of its own: the
// release record's encoding (Helm 3's and Helm 4's), the storage driver's
// labels and locking, the chart rendering with the release's capabilities,
// the hooks (the job that applies the Spokes runs after every upgrade) and
// the three-way apply are Helm's, and a second implementation of any of them
// would drift from what `helm upgrade` does to the same release.
package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// historyMax is how many revisions an upgrade keeps, as `helm upgrade`
// keeps by default.
const historyMax = 10

// Client reads and upgrades the releases of one namespace.
type Client struct {
	cfg       *action.Configuration
	namespace string
	guard     *revisionGuard
}

// FieldManager is the field manager the helm CLI applies with (it sets the
// SDK's to this name): a release installed or upgraded with `helm` holds
// its objects' fields under it, so an upgrade under any other name would
// conflict with each field it changes.
const FieldManager = "helm"

// Open is a Client for the releases of namespace, stored as Helm stores them
// by default (Secrets), reached through getter. It applies as the helm CLI
// does, under FieldManager.
func Open(getter genericclioptions.RESTClientGetter, namespace string) (*Client, error) {
	kube.ManagedFieldsManager = FieldManager
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(getter, namespace, "secret"); err != nil {
		return nil, fmt.Errorf("setting up the Helm client: %w", err)
	}
	return newClient(cfg, namespace), nil
}

// newClient wraps cfg's release storage in the guard every upgrade sets.
func newClient(cfg *action.Configuration, namespace string) *Client {
	g := &revisionGuard{Driver: cfg.Releases.Driver}
	cfg.Releases.Driver = g
	return &Client{cfg: cfg, namespace: namespace, guard: g}
}

// Release is the latest revision of a release, as read.
type Release struct {
	Name      string
	Namespace string
	Revision  int
	Status    string
	// Chart is the chart's name-version.
	Chart  string
	record *release.Release
}

func newRelease(r *release.Release) *Release {
	out := &Release{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, record: r}
	if r.Info != nil {
		out.Status = r.Info.Status.String()
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		out.Chart = r.Chart.Metadata.Name + "-" + r.Chart.Metadata.Version
	}
	return out
}

// Read reads the latest revision of release name. A release that is not
// there, or cannot be read, is a refusal: nothing was changed.
func (c *Client) Read(name string) (*Release, error) {
	last, err := c.cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, exitcode.RefusedErrorf("there is no Helm release %q in namespace %s; nothing was changed: name the hub's release (helm list -n %s)", name, c.namespace, c.namespace)
	}
	if err != nil {
		return nil, exitcode.RefusedErrorf("reading Helm release %s/%s: %w; nothing was changed", c.namespace, name, err)
	}
	r, err := v1Release(last)
	if err != nil {
		return nil, exitcode.RefusedErrorf("reading Helm release %s/%s: %w; nothing was changed", c.namespace, name, err)
	}
	return newRelease(r), nil
}

func v1Release(r ri.Releaser) (*release.Release, error) {
	switch rel := r.(type) {
	case *release.Release:
		return rel, nil
	case release.Release:
		return &rel, nil
	}
	return nil, fmt.Errorf("release record of an unknown kind %T", r)
}

// UpgradeOptions are how Upgrade runs.
type UpgradeOptions struct {
	// Timeout bounds the upgrade, the hooks included (0: five minutes).
	Timeout time.Duration
	// ServerDryRun renders and validates against the API server and writes
	// nothing.
	ServerDryRun bool
}

// Upgrade makes the change's revision: the chart of the release record,
// the change's values, the hooks run and waited for as `helm upgrade` does.
// Another upgrade that made a revision after the change was planned is a
// refusal, and nothing is written.
func (c *Client) Upgrade(ctx context.Context, ch *Change, o UpgradeOptions) (*Release, error) {
	rec := ch.Release.record
	u := action.NewUpgrade(c.cfg)
	u.Namespace = c.namespace
	// The values given are the whole of the user-supplied values.
	u.ResetValues = true
	u.WaitStrategy = kube.HookOnlyStrategy
	u.Timeout = o.Timeout
	if u.Timeout == 0 {
		u.Timeout = 5 * time.Minute
	}
	u.MaxHistory = historyMax
	if o.ServerDryRun {
		u.DryRunStrategy = action.DryRunServer
	}
	c.guard.expect(rec.Name, ch.Revision)
	out, err := u.RunWithContext(ctx, rec.Name, rec.Chart, ch.Values)
	if moved := c.guard.moved(); moved != nil {
		return nil, moved
	}
	if err != nil {
		return nil, fmt.Errorf("helm upgrade of %s/%s to revision %d: %w (helm history %s -n %s shows what it left)", c.namespace, rec.Name, ch.Revision, err, rec.Name, c.namespace)
	}
	r, err := v1Release(out)
	if err != nil {
		return nil, err
	}
	return newRelease(r), nil
}

// revisionGuard refuses an upgrade whose base another upgrade has moved:
// Helm takes the latest revision again when it upgrades, and would put this
// change's values over that other upgrade's.
type revisionGuard struct {
	driver.Driver
	name string
	// want is the revision the upgrade must make (0: no upgrade running).
	want    int
	created bool
	refused error
}

func (g *revisionGuard) expect(name string, revision int) {
	g.name, g.want, g.created, g.refused = name, revision, false, nil
}

func (g *revisionGuard) moved() error { return g.refused }

// Query is how Helm finds the latest revision before upgrading.
func (g *revisionGuard) Query(labels map[string]string) ([]ri.Releaser, error) {
	found, err := g.Driver.Query(labels)
	if err != nil || g.want == 0 || g.created || labels["name"] != g.name || labels["status"] != "" {
		return found, err
	}
	for _, r := range found {
		if rel, err := v1Release(r); err == nil && rel.Version >= g.want {
			return nil, g.refuse(rel.Version)
		}
	}
	return found, nil
}

// Create writes the new revision's record, create-only: a revision of that
// number made meanwhile fails it.
func (g *revisionGuard) Create(key string, r ri.Releaser) error {
	if g.want != 0 {
		rel, err := v1Release(r)
		if err != nil {
			return err
		}
		if rel.Name == g.name && rel.Version != g.want {
			return g.refuse(rel.Version - 1)
		}
	}
	if err := g.Driver.Create(key, r); err != nil {
		if errors.Is(err, driver.ErrReleaseExists) {
			return g.refuse(g.want)
		}
		return err
	}
	g.created = true
	return nil
}

func (g *revisionGuard) refuse(found int) error {
	g.refused = exitcode.RefusedErrorf("Helm release %s has revision %d now, made by another upgrade while this command ran; nothing was changed: run it again, to start from that revision", g.name, found)
	return g.refused
}
