package spoke

import (
	"bytes"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/helmrelease"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
	"github.com/spokekit/spokekit/internal/values"
)

// secretAction is what add does to the spoke's kubeconfig secret.
type secretAction string

const (
	secretCreate secretAction = "create"
	// secretUpdate writes the new kubeconfig into a secret that holds one
	// of the same cluster.
	secretUpdate secretAction = "update"
	// secretReplace writes over a secret that is not shown to be this
	// cluster's (--overwrite).
	secretReplace   secretAction = "replace"
	secretUnchanged secretAction = "unchanged"
)

// entryAction is what add does to the values file.
type entryAction string

const (
	entryNoFile  entryAction = "no file"
	entryAdd     entryAction = "add"
	entryPresent entryAction = "present"
)

// spokeAction is what add --apply does to the Spoke.
type spokeAction string

const (
	spokeNotApplied spokeAction = "not applied"
	spokeCreate     spokeAction = "create"
	spokePresent    spokeAction = "present"
)

// addFacts is what add read before planning: the new kubeconfig, the
// fleet's Hub, and what already exists under the spoke's name.
type addFacts struct {
	Namespace  string
	Kubeconfig []byte
	// Redacted is the kubeconfig without its credentials, for dry-run output.
	Redacted   []byte
	Credential kubeconfig.Credential
	Hub        *fleetconfig.Hub
	// Secret is the existing NAME-kubeconfig secret (nil: none), and
	// SecretHolds what it was found to hold when its kubeconfig differs.
	Secret      *corev1.Secret
	SecretHolds secretHolds
	// Spoke is the existing Spoke of that name (nil: none).
	Spoke *fleetconfig.Spoke
	// File is the values or HelmRelease file as read (nil: none given).
	File *values.File
	// Mode is how the hub's FleetConfig controller runs.
	Mode fleetMode
	// ClusterUID is the UID of the kube-system namespace of the cluster
	// the kubeconfig reaches.
	ClusterUID string
	// Release is the --release release as read (nil: none given).
	Release       *helmrelease.Release
	releaseClient *helmrelease.Client
	// HelmOwned is whether the hub's release renders Spokes itself, so
	// that Helm owns one --apply creates.
	HelmOwned bool
	// FluxLive is the live HelmRelease --helmrelease --apply applies over
	// (nil: no such apply).
	FluxLive *unstructured.Unstructured
}

// secretHolds is what an existing secret with another kubeconfig holds.
type secretHolds struct {
	// Unreadable is why it holds no kubeconfig this command can read.
	Unreadable error
	// OtherCluster is how its kubeconfig's cluster differs ("": the same).
	OtherCluster string
}

// addPlan is what add will write: a value built by planAdd from what was
// read, applied by apply and shown by steps.
type addPlan struct {
	Secret       hubclient.SecretWrite `json:"-"`
	SecretAction secretAction          `json:"secretAction"`
	Credential   kubeconfig.Credential `json:"credential"`
	Values       entryAction           `json:"values"`
	ListPath     string                `json:"listPath,omitempty"`
	fileEdit     `json:"-"`
	SpokeAction  spokeAction `json:"spokeAction"`
	// Spoke is the Spoke as the chart would render it from the entry.
	Spoke *fleetconfig.Spoke `json:"spoke"`
	// Record is what add records on the Spoke (see Record): in the Spoke
	// it creates, by RecordPatch on one that exists, or not at all when
	// there is none yet (RecordAction says which).
	Record       Record        `json:"-"`
	RecordPatch  []api.PatchOp `json:"recordPatch,omitempty"`
	RecordAction recordAction  `json:"recordAction"`
	// Release is the upgrade of --release (nil: none given).
	Release *releaseUpgrade `json:"release,omitempty"`
	// Flux is the apply of the --helmrelease file (nil: none).
	Flux *fluxApply `json:"flux,omitempty"`
}

// recordAction is how add records what it wrote on the Spoke.
type recordAction string

const (
	recordInSpoke    recordAction = "in the Spoke created"
	recordPatched    recordAction = "patch"
	recordPresent    recordAction = "present"
	recordNoSpokeYet recordAction = "no Spoke yet"
)

// planAdd decides every write from the facts; it reads and writes nothing.
func planAdd(o *AddOptions, f addFacts) (*addPlan, error) {
	name := secretName(o.Name)
	p := &addPlan{
		Secret:      hubclient.SecretWrite{Namespace: f.Namespace, Name: name, Key: fleetconfig.DefaultKubeconfigKey, Data: f.Kubeconfig, Existing: f.Secret},
		Credential:  f.Credential,
		Values:      entryNoFile,
		SpokeAction: spokeNotApplied,
	}
	switch {
	case f.Secret == nil:
		p.SecretAction = secretCreate
	case bytes.Equal(f.Secret.Data[fleetconfig.DefaultKubeconfigKey], f.Kubeconfig):
		p.SecretAction = secretUnchanged
	case o.Overwrite:
		p.SecretAction = secretReplace
	case f.SecretHolds.Unreadable != nil:
		return nil, exitcode.RefusedErrorf("secret %s/%s exists and does not hold a kubeconfig this command can read (%w), so it may be someone else's; nothing was changed: pass --overwrite to replace it", f.Namespace, name, f.SecretHolds.Unreadable)
	case f.SecretHolds.OtherCluster != "":
		return nil, exitcode.RefusedErrorf("secret %s/%s holds a kubeconfig of another cluster (different %s); nothing was changed: pass --overwrite to replace it", f.Namespace, name, f.SecretHolds.OtherCluster)
	default:
		p.SecretAction = secretUpdate
	}
	var entry map[string]any
	spec := values.Entry{
		Name: o.Name, SecretName: name, CopyFrom: o.CopyFrom, Cleanup: o.Cleanup,
		HubName: f.Hub.Name, AddOns: agentAddOns(f.Mode), OCIRegistry: o.ociRegistry,
	}
	if f.File != nil {
		kind := f.File.Kind
		edited, changed, err := values.Add(f.File.Data, kind, spec)
		if err != nil {
			return nil, addRefusal(f.File.Path, err)
		}
		p.File, p.ListPath, p.Values = f.File, kind.ListPath(), entryPresent
		if changed {
			p.Edited, p.Values = edited, entryAdd
		}
		if entry, err = values.EntryValues(edited, kind, o.Name); err != nil {
			return nil, exitcode.RefusedErrorf("%s: %w; nothing was changed", f.File.Path, err)
		}
	}
	settingsFrom := f.File
	if f.Release != nil {
		var err error
		where := "Helm release " + f.Release.Name
		p.Release, err = planReleaseUpgrade(f.releaseClient, f.Release, func(doc []byte, kind values.Kind) ([]byte, bool, error) {
			return values.Add(doc, kind, spec)
		})
		if err != nil {
			return nil, addRefusal(where, err)
		}
		if f.File == nil {
			if entry, err = values.EntryValues(p.Release.Edited, values.HelmValues, o.Name); err != nil {
				return nil, exitcode.RefusedErrorf("%s: %w; nothing was changed", where, err)
			}
			settingsFrom = &values.File{Path: where, Kind: values.HelmValues, Data: p.Release.Edited}
		}
	}
	chart, err := chartSettings(settingsFrom, o.Cleanup, f.Mode)
	if err != nil {
		return nil, exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	chart.HelmOwned = f.HelmOwned
	if p.Spoke, err = RenderSpoke(o.Name, f.Hub, name, entry, chart); err != nil {
		return nil, exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	if f.FluxLive != nil {
		// Flux upgrades the release, whose job applies the Spoke.
		if p.Flux, err = planFluxFile(f.File, p.Edited, f.FluxLive); err != nil {
			return nil, err
		}
	} else if o.Apply {
		// checkName showed an existing Spoke is this cluster's: a re-run.
		p.SpokeAction = spokeCreate
		if f.Spoke != nil {
			p.SpokeAction = spokePresent
		}
	}
	p.Record = Record{Secret: name, Credential: f.Credential, ClusterUID: f.ClusterUID}
	switch {
	case f.Spoke != nil && recorded(f.Spoke, p.Record):
		p.RecordAction = recordPresent
	case f.Spoke != nil:
		p.RecordAction, p.RecordPatch = recordPatched, recordPatch(f.Spoke, p.Record)
	case p.SpokeAction == spokeCreate:
		p.RecordAction = recordInSpoke
		if p.Spoke.Annotations == nil {
			p.Spoke.Annotations = map[string]string{}
		}
		maps.Copy(p.Spoke.Annotations, p.Record.annotations())
	default:
		p.RecordAction = recordNoSpokeYet
	}
	return p, nil
}

// chartSettings are what the chart renders into a Spoke from the values
// file besides its entry (f nil: no file, the chart's defaults).
func chartSettings(f *values.File, cleanup fleetconfig.CleanupConfig, mode fleetMode) (ChartSettings, error) {
	gates, err := spokeFeatureGates(f)
	if err != nil {
		return ChartSettings{}, err
	}
	c := ChartSettings{Cleanup: cleanup, Mode: mode, FeatureGates: gates}
	if f != nil {
		if c.Annotations, err = values.SpokeAnnotations(f.Data, f.Kind); err != nil {
			return ChartSettings{}, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return c, nil
}

// addRefusal is the refusal of an entry values.Add could not make in where.
func addRefusal(where string, err error) error {
	if errors.Is(err, values.ErrNoOCIRegistry) {
		return exitcode.RefusedErrorf("%s: %w; nothing was changed: give it with --oci-registry '{...}', or --copy-from an entry that has one", where, err)
	}
	if exitcode.IsRefused(err) {
		return err
	}
	return exitcode.RefusedErrorf("%s: %w; nothing was changed", where, err)
}

// spokeFeatureGates is klusterlet.featureGates as the chart renders it from
// the file's spokeFeatureGates, or from the chart's default (no file, or
// none set in it).
func spokeFeatureGates(f *values.File) (string, error) {
	gates := chartSpokeFeatureGates
	if f != nil {
		g, found, err := values.SpokeFeatureGates(f.Data, f.Kind)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.Path, err)
		}
		if found {
			gates = g
		}
	}
	out, err := featureGates(gates)
	if err != nil && f != nil {
		return "", fmt.Errorf("%s: %w", f.Path, err)
	}
	return out, err
}

// access is what writing the plan needs on the hub.
func (p *addPlan) access(wait bool, hub *HubClient) []authz.Permission {
	// Read before: which mode the FleetConfig controller runs in.
	out := []authz.Permission{access("get", ocm.ClusterManagementAddOnResource, "")}
	switch p.SecretAction {
	case secretCreate:
		out = append(out, hub.secretAccess("create", p.Secret.Name))
	case secretUpdate, secretReplace:
		out = append(out, hub.secretAccess("update", p.Secret.Name))
	}
	if p.SpokeAction != spokeNotApplied {
		out = append(out, hub.spokeAccess("create")...)
	}
	if p.RecordPatch != nil || (p.RecordAction == recordNoSpokeYet && (p.Release != nil || p.Flux != nil) && wait) {
		out = append(out, hub.spokeAccess("patch")...)
	}
	if p.SpokeAction != spokeNotApplied && wait {
		out = append(out, hub.waitJoinedAccess()...)
	}
	if p.Flux != nil {
		out = append(out, p.Flux.access(wait)...)
		if wait {
			out = append(out, hub.waitJoinedAccess()...)
		}
	}
	return out
}

// steps is what the plan did, or under a dry run would do, as report steps.
func (p *addPlan) steps(ns, name string, dryRun cli.DryRun) []Step {
	would := func(s string) string {
		if dryRun != cli.DryRunNone {
			return "would be " + s
		}
		return s
	}
	secret := map[secretAction]string{secretCreate: "created", secretUpdate: "updated", secretReplace: "replaced (--overwrite)", secretUnchanged: "unchanged"}[p.SecretAction]
	out := []Step{{"secret " + ns + "/" + p.Secret.Name, would(secret) + " (" + p.Credential.Kind + ", expires " + p.Credential.ExpiryString() + ")"}}
	switch {
	case p.Values == entryPresent:
		out = append(out, Step{"values " + p.File.Path, "entry already in " + p.ListPath})
	case p.Values == entryAdd && dryRun != cli.DryRunNone:
		out = append(out, Step{"values " + p.File.Path, "would add the entry to " + p.ListPath})
	case p.Values == entryAdd:
		out = append(out, Step{"values " + p.File.Path, "entry added to " + p.ListPath})
	}
	if p.Release != nil {
		out = append(out, p.Release.step(ns, dryRun))
	}
	if p.Flux != nil {
		out = append(out, p.Flux.step(dryRun))
	}
	switch p.SpokeAction {
	case spokeCreate:
		out = append(out, Step{"spoke " + ns + "/" + name, would("created")})
	case spokePresent:
		out = append(out, Step{"spoke " + ns + "/" + name, "already there"})
	}
	switch p.RecordAction {
	case recordPatched:
		out = append(out, Step{"record on spoke " + ns + "/" + name, would("written") + " (secret, credential, kube-system UID)"})
	case recordNoSpokeYet:
		out = append(out, Step{"record on spoke " + ns + "/" + name, "not written: there is no Spoke yet; once the upgrade made it, run this again to record the secret on it (status, health and the printed grants need the record)"})
	}
	return out
}
