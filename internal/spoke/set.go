package spoke

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// MutableFields are the Spoke spec fields set may change (the FleetConfig
// webhook rejects a change to any other). kubeconfig may change too, but
// only through rotate-kubeconfig: it proves the new credentials reach the
// same cluster.
var MutableFields = []string{
	"addOns", "cleanupConfig", "timeout", "logVerbosity",
	"klusterlet.annotations", "klusterlet.values", "klusterlet.valuesFrom",
}

// credentialField holds the spoke's credentials.
const credentialField = "kubeconfig"

// Assignment is one FIELD=VALUE of set: a path under spec and its value
// (nil removes the field).
type Assignment struct {
	Path  []string `json:"path"`
	Value any      `json:"value"`
}

// Field is the path as set reads it.
func (a Assignment) Field() string { return FormatPath(a.Path) }

// ParseAssignments reads FIELD=VALUE arguments. FIELD is a path under spec
// ("spec." may be given; see splitAssignment for keys with dots); VALUE is
// YAML, so 3, true, "text", {a: b} and [x, y] all mean what they say, and
// null removes the field.
func ParseAssignments(args []string) ([]Assignment, error) {
	var out []Assignment
	for _, arg := range args {
		path, raw, err := splitAssignment(arg)
		if err != nil {
			return nil, exitcode.UsageErrorf("%q is not FIELD=VALUE: %v", arg, err)
		}
		if len(path) > 1 && path[0] == "spec" {
			path = path[1:]
		}
		var v any
		if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
			return nil, exitcode.UsageErrorf("the value of %s is not YAML: %v", FormatPath(path), err)
		}
		out = append(out, Assignment{Path: path, Value: v})
	}
	return out, nil
}

// Mutable says whether the field at path may be changed by set.
func Mutable(path []string) bool {
	for _, m := range MutableFields {
		if p := strings.Split(m, "."); len(path) >= len(p) && slices.Equal(path[:len(p)], p) {
			return true
		}
	}
	return false
}

// refuseImmutable names every field set may not change and the supported
// path: rotate-kubeconfig for the credentials, remove and add for the rest.
func refuseImmutable(name string, as []Assignment) error {
	var bad []string
	for _, a := range as {
		if a.Path[0] == credentialField {
			return exitcode.RefusedErrorf("spoke %s: %s holds the spoke's credentials, which only rotate-kubeconfig changes, after it proved the new ones reach the same cluster; nothing was changed: run kubectl spoke rotate-kubeconfig %s --spoke-kubeconfig FILE",
				name, a.Field(), name)
		}
		if !Mutable(a.Path) {
			bad = append(bad, a.Field())
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return exitcode.RefusedErrorf("spoke %s: %s cannot change once the spoke exists (only %s can); nothing was changed: remove the spoke (kubectl spoke remove %s) and add it again with the new configuration",
		name, strings.Join(bad, ", "), strings.Join(MutableFields, ", "), name)
}

// SetSpec is the spec of the JSON merge patch that makes the assignments
// (hubclient.SetSpokeFields guards it with the resourceVersion read).
func SetSpec(as []Assignment) map[string]any {
	spec := map[string]any{}
	for _, a := range as {
		m := spec
		for _, k := range a.Path[:len(a.Path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[a.Path[len(a.Path)-1]] = a.Value
	}
	return spec
}

// SetOptions are the options of `kubectl spoke set`.
type SetOptions struct {
	Name        string
	Assignments []Assignment
	// assignmentArgs are the FIELD=VALUE arguments, parsed in Validate.
	assignmentArgs []string
	DryRun         cli.DryRun
	Output         *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// SetReport is what set prints.
type SetReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string      `json:"dryRun,omitempty"`
	Changes        []SetChange `json:"changes"`
	Warnings       []string    `json:"warnings,omitempty"`
}

// SetChange is one field before and after.
type SetChange struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// NewCmdSet builds `kubectl spoke set`.
func NewCmdSet(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &SetOptions{Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "set NAME FIELD=VALUE...",
		Short: "Change the fields of a spoke that may change in place",
		Long: cli.LongDesc(`
			Change fields of a Spoke's spec. FIELD is a path of keys under spec,
			separated by dots; a key that has dots itself (an annotation such as
			example.com/team) goes in brackets, ["example.com/team"], or has each
			of its dots escaped with a backslash (see the examples; quote the
			argument for the shell).
			VALUE is YAML (3, true, text, {key: value}, [a, b]; null removes it).

			Only these may change in place: ` + strings.Join(MutableFields, ", ") + `.
			The kubeconfig is refused with exit 3: change credentials with
			kubectl spoke rotate-kubeconfig, which checks they reach the same
			cluster. Anything else (the name, hubRef, the klusterlet mode, proxy
			settings, ...) is refused with exit 3: remove the spoke and add it
			again.

			A change the hub's API server rejects exits 1 with the server's
			reason, and nothing is changed: a value its schema does not allow
			(logVerbosity=99), or add-ons the FleetConfig webhook refuses (in
			addon mode every spoke but hub-as-spoke lists the
			fleetconfig-controller-agent add-on, so addOns=null is rejected; in
			unified mode none may list it).

			A Spoke rendered by Helm gets its values back on the next helm
			upgrade: change them in the values file as well.`),
		Example: templates.Examples(`
			# More verbose join logs and a longer timeout
			kubectl spoke set spoke-1 logVerbosity=4 timeout=600

			# Drain placement workloads when the spoke is removed
			kubectl spoke set spoke-1 cleanupConfig.forceClusterDrain=true

			# Annotate the klusterlet
			kubectl spoke set spoke-1 klusterlet.annotations.team=ml

			# An annotation key with dots, in brackets or with the dots escaped
			kubectl spoke set spoke-1 'klusterlet.annotations["example.com/team"]=ml'
			kubectl spoke set spoke-1 'klusterlet.annotations.example\.com/team=ml'

			# Remove an annotation
			kubectl spoke set spoke-1 'klusterlet.annotations["example.com/team"]=null'`),
		Args:              cli.MinArgs(2, "arguments: NAME and at least one FIELD=VALUE"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and the dry-run strategy.
func (o *SetOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name, o.assignmentArgs = args[0], args[1:]
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	return err
}

// Validate rejects bad input, and fields that may not change, before any request.
func (o *SetOptions) Validate() error {
	var err error
	if o.Assignments, err = ParseAssignments(o.assignmentArgs); err != nil {
		return err
	}
	if err := cli.ValidateNames(cli.ClusterName, o.Name); err != nil {
		return err
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return refuseImmutable(o.Name, o.Assignments)
}

// Run patches the Spoke.
func (o *SetOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	u, err := hub.SpokeObject(ctx, o.Name)
	if err != nil {
		return err
	}
	if err := refuseComputePool(u); err != nil {
		return err
	}
	r := &SetReport{ReportMeta: api.NewNamespacedReportMeta("SpokeSet", hub.Namespace, o.Name), DryRun: cli.DryRunName(o.DryRun)}
	for _, a := range o.Assignments {
		from, _, _ := unstructured.NestedFieldNoCopy(u.Object, append([]string{"spec"}, a.Path...)...)
		r.Changes = append(r.Changes, SetChange{Field: a.Field(), From: from, To: a.Value})
	}
	if err := hub.preflight(ctx, o.DryRun, nil, hub.spokeAccess("patch")); err != nil {
		return err
	}
	if o.DryRun != cli.DryRunClient {
		if err := hub.SetSpokeFields(ctx, o.Name, u.GetResourceVersion(), SetSpec(o.Assignments), o.DryRun); err != nil {
			return fmt.Errorf("changing Spoke %s/%s: %w; nothing was changed", hub.Namespace, o.Name, err)
		}
	}
	if release := HelmRelease(u); release != "" {
		w := fmt.Sprintf("Warning: Helm release %q renders spoke %s: make the same change in its fleetConfig.spokes values, or the next helm upgrade undoes it", release, o.Name)
		r.Warnings = append(r.Warnings, w)
		fmt.Fprintln(o.ErrOut, w)
	}
	return o.Output.Print(o.Out, r, func() cli.Table {
		t := cli.Table{Columns: []cli.Column{{Name: "FIELD"}, {Name: "FROM"}, {Name: "TO"}}}
		for _, c := range r.Changes {
			t.Rows = append(t.Rows, []string{c.Field, show(c.From), show(c.To)})
		}
		return t
	})
}

func show(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Subjects is the Spoke changed, for -o name.
func (r SetReport) Subjects() []string { return []string{subject(r.Metadata.Name, false)} }
