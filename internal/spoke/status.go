package spoke

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/spoke/health"
)

// SpokeStatus is what status prints about one spoke, or about a
// ManagedCluster joined out of band (OutOfBand; no Spoke, so only the
// ManagedCluster and its ManifestWorks).
type SpokeStatus struct {
	api.ReportMeta `json:",inline"`
	OutOfBand      bool                  `json:"outOfBand,omitempty"`
	Phase          string                `json:"phase"`
	Deleting       bool                  `json:"deleting,omitempty"`
	Conditions     []ConditionReport     `json:"conditions"`
	ManagedCluster *ManagedClusterReport `json:"managedCluster,omitempty"`
	BlockingWorks  []string              `json:"blockingManifestWorks,omitempty"`
	// PlacementWorks are the placement works that block removal too, by
	// the rule remove enforces (see RemovalBlockers), and why.
	PlacementWorks []string `json:"blockingPlacementManifestWorks,omitempty"`
	PlacementWhy   string   `json:"blockingPlacementReason,omitempty"`
	OtherWorks     int      `json:"otherManifestWorks"`
	// ForceClusterDrain is the Spoke's cleanupConfig.forceClusterDrain.
	ForceClusterDrain bool `json:"forceClusterDrain,omitempty"`
	// Hint is the product's advice for the state the spoke is in.
	Hint        string            `json:"hint,omitempty"`
	HelmRelease string            `json:"helmRelease,omitempty"`
	ComputePool string            `json:"computePool,omitempty"`
	Secret      string            `json:"kubeconfigSecret,omitempty"`
	Credential  *CredentialReport `json:"credential,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
	// Note says what could not be checked.
	Note string `json:"note,omitempty"`
}

// ConditionReport is a Spoke condition in words.
type ConditionReport struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Want    string `json:"wantStatus"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// ManagedClusterReport is what the spoke's ManagedCluster says.
type ManagedClusterReport struct {
	Joined    string   `json:"joined"`
	Available string   `json:"available"`
	Reason    string   `json:"reason,omitempty"`
	Taints    []string `json:"taints,omitempty"`
	// BrushIgnore: PaletteAI installs nothing on the cluster.
	BrushIgnore bool `json:"brushIgnore,omitempty"`
}

// clusterReport is what status shows of a ManagedCluster (nil: none).
func clusterReport(mc *ocm.ManagedCluster) *ManagedClusterReport {
	if mc == nil {
		return nil
	}
	cr := &ManagedClusterReport{
		Joined:      conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionJoined),
		Available:   conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionAvailable),
		Taints:      taintStrings(mc.Spec.Taints),
		BrushIgnore: brushIgnored(mc),
	}
	for _, c := range mc.Status.Conditions {
		if c.Type == ocm.ManagedClusterConditionAvailable && c.Status != metav1.ConditionTrue {
			cr.Reason = c.Message
		}
	}
	return cr
}

// setWorks sorts the ManifestWorks of the cluster's namespace.
func (r *SpokeStatus) setWorks(works []ocm.ManifestWork) {
	r.BlockingWorks = BlockingWorks(works)
	r.OtherWorks = len(works) - len(r.BlockingWorks)
}

// CredentialReport describes the stored kubeconfig without any secret.
type CredentialReport struct {
	Kind    string `json:"kind,omitempty"`
	Expires string `json:"expires,omitempty"`
	// Purged: the secret is gone because the agent manages the spoke and
	// cleanupConfig.purgeKubeconfigSecret had it deleted (a normal state).
	Purged bool `json:"purged,omitempty"`
	// Recorded: Kind and Expires are what kubectl spoke recorded on the
	// Spoke when it wrote the Secret (the Secret is not read).
	Recorded bool   `json:"recorded,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// BlockingWorks names the ManifestWorks that keep a spoke from being
// removed: those that neither a placement nor an add-on owns.
func BlockingWorks(works []ocm.ManifestWork) []string {
	var out []string
	for i := range works {
		if !works[i].IsAddOnWork() && !works[i].IsPlacementWork() {
			out = append(out, works[i].Name)
		}
	}
	return out
}

// BuildStatus puts together the status report (pure: the callers read).
// blockers are the works' removal blockers, by the rule remove enforces.
func BuildStatus(s *fleetconfig.Spoke, mc *ocm.ManagedCluster, works []ocm.ManifestWork, blockers RemovalBlockers, cred *CredentialReport) SpokeStatus {
	r := SpokeStatus{
		ReportMeta:        api.NewNamespacedReportMeta("SpokeStatus", s.Namespace, s.Name),
		Phase:             s.Status.Phase,
		Deleting:          s.DeletionTimestamp != nil,
		HelmRelease:       HelmRelease(s),
		ComputePool:       fleetconfig.ComputePoolOf(s),
		Credential:        cred,
		Finalizers:        s.Finalizers,
		ForceClusterDrain: s.Spec.CleanupConfig.ForceClusterDrain,
		Hint:              disconnectedHint(mc),
	}
	if ref := s.Spec.Kubeconfig.SecretReference; ref != nil {
		r.Secret = ref.Name
	}
	for _, c := range s.Status.Conditions {
		r.Conditions = append(r.Conditions, ConditionReport{Type: c.Type, Status: string(c.Status), Want: string(c.WantStatus), OK: c.Status == c.WantStatus, Message: c.Message})
	}
	r.ManagedCluster = clusterReport(mc)
	r.setWorks(works)
	switch {
	case len(blockers.Placed) > 0:
		r.PlacementWorks = blockers.Placed
		r.PlacementWhy = "cleanupConfig.forceClusterDrain is off, so removal does not move them and the hub waits while they stay: run kubectl fleetdrain cluster " + s.Name + " first"
	case len(blockers.Kept) > 0:
		r.PlacementWorks = blockers.Kept
		r.PlacementWhy = "their placements tolerate the " + TaintWorkloadCleanup + " taint removal adds, or cannot be found: nothing shows they leave"
	}
	r.OtherWorks -= len(r.PlacementWorks)
	return r
}

// Table is the human view: one line per fact.
func (r SpokeStatus) Table() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "ASPECT"}, {Name: "STATE"}}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	switch {
	case r.OutOfBand && r.Deleting:
		add("spoke", "none, and the ManagedCluster is being deleted (finalizers: "+strings.Join(r.Finalizers, ", ")+")")
	case r.OutOfBand:
		add("spoke", "none: joined out of band (clusteradm join); kubectl spoke does not manage it")
	default:
		phase := r.Phase
		if r.Deleting {
			phase += " (being deleted; finalizers: " + strings.Join(r.Finalizers, ", ") + ")"
		}
		add("phase", phase)
	}
	for _, c := range r.Conditions {
		state := c.Status
		if !c.OK {
			state += " (wants " + c.Want + ")"
		}
		if c.Message != "" {
			state += ": " + c.Message
		}
		add("condition "+c.Type, state)
	}
	if mc := r.ManagedCluster; mc != nil {
		add("managed cluster", fmt.Sprintf("joined %s, available %s", mc.Joined, mc.Available))
		if mc.Reason != "" {
			add("not available because", mc.Reason)
		}
		add("taints", strings.Join(mc.Taints, ", "))
		if mc.BrushIgnore {
			add("brush-ignore", "true (PaletteAI installs none of its components there)")
		}
	} else {
		add("managed cluster", "none on the hub")
	}
	blocking := "none"
	switch {
	case len(r.BlockingWorks) > 0 && r.OutOfBand:
		blocking = strings.Join(r.BlockingWorks, ", ") + " (no placement or add-on owns them: move or delete them before the cluster leaves)"
	case len(r.BlockingWorks) > 0:
		blocking = strings.Join(r.BlockingWorks, ", ") + " (they block removal; no placement or add-on owns them)"
	}
	add("blocking ManifestWorks", blocking)
	switch {
	case len(r.PlacementWorks) > 0:
		add("blocking placement works", strings.Join(r.PlacementWorks, ", ")+" ("+r.PlacementWhy+")")
		add("other ManifestWorks", fmt.Sprintf("%d (add-on or placement works that leave on their own)", r.OtherWorks))
	case r.OutOfBand:
		add("other ManifestWorks", fmt.Sprintf("%d (placement or add-on; they leave on their own)", r.OtherWorks))
	case r.ForceClusterDrain:
		add("other ManifestWorks", fmt.Sprintf("%d (add-on works, and placement works that leave when removal taints the cluster)", r.OtherWorks))
	default:
		add("other ManifestWorks", fmt.Sprintf("%d (add-on works; they leave on their own)", r.OtherWorks))
	}
	if r.Hint != "" {
		add("hint", r.Hint)
	}
	if r.Note != "" {
		add("note", r.Note)
	}
	if r.OutOfBand {
		if !r.Deleting {
			add("removal", "by hand, not by kubectl spoke: kubectl spoke remove "+r.Metadata.Name+" prints the steps")
		}
		return t
	}
	add("helm release", orNone(r.HelmRelease))
	add("compute pool", orNone(r.ComputePool))
	add("kubeconfig secret", orNone(r.Secret))
	if c := r.Credential; c != nil {
		switch {
		case c.Purged:
			add("credential", "purged: the agent on the spoke manages it, and cleanupConfig.purgeKubeconfigSecret had the stored kubeconfig deleted (nothing to rotate)")
		case c.Problem != "":
			add("credential", c.Problem)
		case c.Recorded:
			add("credential", c.Kind+", expires "+c.Expires+" (as recorded when kubectl spoke wrote the secret; the Secret is not read)")
		default:
			add("credential", c.Kind+", expires "+c.Expires)
		}
	}
	return t
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// StatusOptions are the options of `kubectl spoke status`.
type StatusOptions struct {
	Name   string
	Output *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// NewCmdStatus builds `kubectl spoke status`.
func NewCmdStatus(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Explain one spoke: conditions, availability, blockers, owners, credential expiry",
		Long: cli.LongDesc(`
			Explain where a spoke stands: the Spoke's phase and each condition in
			words, whether its ManagedCluster joined and is available and with
			which taints, the ManifestWorks that would block its removal, whether
			Helm or a Compute Pool owns it, and when the stored credential expires
			(as kubectl spoke recorded it on the Spoke when it wrote the Secret:
			status reads no Secret).

			For a cluster joined out of band (a ManagedCluster that no Spoke of
			the namespace has) it reports that, the ManagedCluster's state, its
			brush-ignore mark and its ManifestWorks.`),
		Example: templates.Examples(`
			# Why is spoke-2 not Running?
			kubectl spoke status spoke-2

			# The same for a script
			kubectl spoke status spoke-2 -o json`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the argument.
func (o *StatusOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	return nil
}

// Validate rejects bad input before any request.
func (o *StatusOptions) Validate() error {
	if err := cli.ValidateNames(cli.ClusterName, o.Name); err != nil {
		return err
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run reads the spoke and what belongs to it, and prints the report.
func (o *StatusOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	s, err := hub.Spoke(ctx, o.Name)
	if err != nil {
		return err
	}
	if s == nil {
		return o.printOutOfBand(ctx, hub)
	}
	mc, err := hub.ManagedCluster(ctx, o.Name)
	if err != nil {
		return err
	}
	works, err := hub.blockingWorks(ctx, o.Name)
	if err != nil {
		return err
	}
	cred, refused := credential(s, time.Now())
	blockers, err := hub.removalBlockers(ctx, s, works)
	r := BuildStatus(s, mc, works, blockers, cred)
	if err != nil {
		// Then no placement is known, so its works count as staying.
		r.Note = fmt.Sprintf("whether placement works would leave on removal could not be checked: %v", err)
	}
	if err := o.Output.Print(o.Out, r, r.Table); err != nil {
		return err
	}
	return refused
}

// printOutOfBand reports a ManagedCluster that no Spoke of the namespace
// registers; without one either, the spoke is not found.
func (o *StatusOptions) printOutOfBand(ctx context.Context, hub *HubClient) error {
	mc, note, err := hub.outOfBandCluster(ctx, o.Name)
	if err != nil {
		return err
	}
	if mc == nil {
		return hub.SpokeNotFound(o.Name)
	}
	works, err := hub.blockingWorks(ctx, o.Name)
	if err != nil {
		return err
	}
	r := BuildOutOfBandStatus(mc, works, note)
	return o.Output.Print(o.Out, r, r.Table)
}

// credential describes the stored credential from the record on the Spoke
// (see recordedCredential): status reads no Secret. A record that is not
// well formed is also returned as the error, so status reports it and
// exits 3.
func credential(s *fleetconfig.Spoke, now time.Time) (*CredentialReport, error) {
	if s.Spec.Kubeconfig.SecretReference == nil {
		return nil, nil
	}
	if m := missingSecret(s); m.Purged {
		return m, nil
	}
	c := recordedCredential(s, now)
	switch c.State {
	case health.CredentialRefused:
		_, err := readRecord(s)
		return &CredentialReport{Problem: c.Detail}, err
	case health.CredentialUnknown:
		return &CredentialReport{Problem: c.Detail}, nil
	}
	r := &CredentialReport{Kind: c.Kind, Expires: "never", Recorded: true}
	if c.Expires != nil {
		r.Expires = c.Expires.UTC().Format(time.RFC3339)
	}
	return r, nil
}

// missingSecret describes a Spoke whose kubeconfig secret does not exist:
// purged, the normal state once the agent took over (PivotComplete) with
// purgeKubeconfigSecret on; anything else is a problem, since the hub then
// has no way to join or unjoin the cluster itself.
func missingSecret(s *fleetconfig.Spoke) *CredentialReport {
	// Only the agent's takeover in addon mode purges the secret: a Spoke
	// without the agent add-on (unified mode) keeps it, as the hub dials
	// the spoke with it on every reconcile.
	if s.Spec.CleanupConfig.PurgeKubeconfigSecret && listsAgent(s) && pivoted(s) {
		return &CredentialReport{Purged: true}
	}
	return &CredentialReport{Problem: fmt.Sprintf("the kubeconfig secret %s does not exist, and the agent has not taken the spoke over (PivotComplete not True) or purgeKubeconfigSecret is off: the hub cannot join or unjoin the cluster itself; store one with kubectl spoke add %s --spoke-kubeconfig FILE",
		s.Spec.Kubeconfig.SecretReference.Name, s.Name)}
}

// listsAgent tells a Spoke that runs the FleetConfig agent add-on (addon
// mode; hub-as-spoke never does).
func listsAgent(s *fleetconfig.Spoke) bool {
	return slices.ContainsFunc(s.Spec.AddOns, func(a fleetconfig.AddOn) bool { return a.ConfigName == fleetconfig.AgentAddOn })
}

// pivoted tells a Spoke whose agent has taken it over (PivotComplete True).
func pivoted(s *fleetconfig.Spoke) bool {
	c := findCondition(s.Status.Conditions, fleetconfig.SpokeConditionPivotComplete)
	return c != nil && c.Status == metav1.ConditionTrue
}

// Subjects is the spoke's Spoke (its ManagedCluster when joined out of band), for -o name.
func (r SpokeStatus) Subjects() []string { return []string{subject(r.Metadata.Name, r.OutOfBand)} }
