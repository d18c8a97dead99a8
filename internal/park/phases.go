package park

import (
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

// The named phases of a resume's wait, in the order they are passed.
const (
	// PhaseControlPlane: the Cluster says its control plane serves; workers
	// cannot join before.
	PhaseControlPlane = "control plane available"
	// PhaseMachines: as many worker Machines as the pools ask for run, each
	// with its node joined (nodeRef).
	PhaseMachines = "machines running"
	// PhaseNodes: those nodes are Ready in the workload cluster.
	PhaseNodes = "nodes Ready"
	// PhaseHealth: the MachineHealthChecks that select the workers have
	// checked each one and count it healthy, so park status agrees.
	PhaseHealth = "health checks passed"
	// PhasePools: each pool's own status (its MachineDeployment or
	// MachinePool) counts its workers ready and up to date, as park status
	// shows them.
	PhasePools = "pools ready"
	// PhaseCSRs: the certificate signing requests still pending in the
	// workload cluster are listed (reported, never approved). It only
	// reports: a list that cannot be read does not hold the resume.
	PhaseCSRs = "pending CSRs listed"
)

// The states of a phase.
const (
	PhaseDone    = "Done"
	PhaseWaiting = "Waiting"
	// PhasePending: an earlier phase is not done yet.
	PhasePending = "Pending"
	// PhaseNotChecked: the workload cluster could not be read.
	PhaseNotChecked = "NotChecked"
	// PhaseStuck: the wait ended here (--timeout, Ctrl-C).
	PhaseStuck = "Stuck"
)

// PhaseReport is one named phase of a resume and how far it got.
type PhaseReport struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// resumeView is what a resume's wait has seen so far, phase by phase; a
// part not seen yet is nil.
type resumeView struct {
	cluster  *capi.Cluster
	machines []capi.Machine
	// desired is how many worker machines the pools ask for.
	desired      int
	machinesSeen bool
	nodes        []corev1.Node
	nodesSeen    bool
	// nodesError says why the workload cluster's nodes were not read.
	nodesError string
	// health: the health checks count every worker healthy.
	health checkedPart
	// pools: every pool's status counts its workers ready.
	pools     checkedPart
	csrs      []certificatesv1.CertificateSigningRequest
	csrsSeen  bool
	csrsError string
}

// checkedPart is a phase read from the platform's own objects: whether
// the wait has read them, whether the phase is done, and what it says.
type checkedPart struct {
	seen, done bool
	detail     string
}

// show is what the part says, or unseen before the wait has read it.
func (c checkedPart) show(unseen string) string {
	if !c.seen {
		return unseen
	}
	return c.detail
}

// resumePhases says where each named phase is, from what the wait has
// seen: every phase up to the first one not done is Done, that one is
// Waiting (or NotChecked), the ones after it Pending. The CSR phase only
// reports, so it never holds the others.
func resumePhases(v resumeView) []PhaseReport {
	var out []PhaseReport
	blocked := false
	add := func(name string, done bool, state, detail string) {
		switch {
		case blocked:
			out = append(out, PhaseReport{Name: name, State: PhasePending})
			return
		case done:
			state = PhaseDone
		case state == "":
			state = PhaseWaiting
		}
		if !done && name != PhaseCSRs {
			blocked = true
		}
		out = append(out, PhaseReport{Name: name, State: state, Detail: detail})
	}

	cpDone, cpDetail := false, "the Cluster not read yet"
	if v.cluster != nil {
		cpDone, cpDetail = controlPlaneAvailable(v.cluster)
	}
	add(PhaseControlPlane, cpDone, "", cpDetail)

	machines := resumePhase(v.machines, v.desired)
	mDetail := machines.String()
	if !v.machinesSeen {
		mDetail = "the Machines not read yet"
	}
	add(PhaseMachines, v.machinesSeen && machines.done, "", mDetail)

	nDone, nState, nDetail := false, "", "the nodes not read yet"
	switch {
	case v.nodesError != "":
		nState, nDetail = PhaseNotChecked, v.nodesError
	case v.nodesSeen:
		nDone, nDetail = nodesReady(v.nodes, joinedNodes(v.machines))
	}
	add(PhaseNodes, nDone, nState, nDetail)

	add(PhaseHealth, v.health.done, "", v.health.show("the health checks not read yet"))
	add(PhasePools, v.pools.done, "", v.pools.show("the pools not read yet"))

	cDone, cState, cDetail := false, "", "not listed yet"
	switch {
	case v.csrsError != "":
		cState, cDetail = PhaseNotChecked, v.csrsError
	case v.csrsSeen:
		cDone, cDetail = true, pendingCSRs(v.csrs)
	}
	add(PhaseCSRs, cDone, cState, cDetail)
	return out
}

// controlPlaneAvailable reads the Cluster's ControlPlaneAvailable
// condition (ControlPlaneReady before Cluster API v1.9). Its reason and
// message are the server's: cut short, and escaped where they are shown.
func controlPlaneAvailable(c *capi.Cluster) (bool, string) {
	cond := c.Status.Condition(capi.ClusterControlPlaneAvailableCondition)
	if cond == nil {
		cond = c.Status.Condition(capi.ClusterControlPlaneReadyCondition)
	}
	if cond == nil {
		return false, "the Cluster reports no " + capi.ClusterControlPlaneAvailableCondition + " condition yet"
	}
	if cond.Status == metav1.ConditionTrue {
		return true, cond.Type + " is True"
	}
	detail := fmt.Sprintf("%s is %s", cond.Type, cond.Status)
	if cond.Reason != "" {
		detail += " (" + truncate(cond.Reason) + ")"
	}
	if cond.Message != "" {
		detail += ": " + shorten(cond.Message, 160)
	}
	return false, detail
}

// nodesReady counts the named nodes that are Ready.
func nodesReady(nodes []corev1.Node, names []string) (bool, string) {
	want := sets.New(names...)
	ready := 0
	for _, n := range nodes {
		if want.Has(n.Name) && nodeReady(n) {
			ready++
		}
	}
	return ready >= want.Len(), fmt.Sprintf("nodes Ready: %d of %d", ready, want.Len())
}

// pendingCSRs names the requests no one has approved or denied yet.
func pendingCSRs(csrs []certificatesv1.CertificateSigningRequest) string {
	pending := BuildClusterView(nil, nil, csrs).PendingCSRs
	if len(pending) == 0 {
		return "none pending"
	}
	return fmt.Sprintf("%d pending: %s (reported, never approved: many usually mean the cluster's bootstrap path is broken; report them)", len(pending), strings.Join(pending, ", "))
}

// stuckPhase is the phase a wait that ended early stopped in, marked
// Stuck, and its name; "" when every phase that holds the resume is done.
func stuckPhase(phases []PhaseReport) string {
	for i := range phases {
		if phases[i].State == PhaseWaiting || phases[i].State == PhaseNotChecked && phases[i].Name != PhaseCSRs {
			phases[i].State = PhaseStuck
			return phases[i].Name
		}
	}
	return ""
}

// phaseSummary is a resume's phases in one line: the phase it is in (or
// stopped in) and its state, or, when every phase is done, what the last
// ones say.
func phaseSummary(phases []PhaseReport) string {
	for _, ph := range phases {
		if ph.State != PhaseDone && ph.Name != PhaseCSRs {
			return ph.Name + " (" + ph.State + "): " + ph.Detail
		}
	}
	var parts []string
	for _, ph := range phases {
		switch {
		case ph.Name == PhaseNodes:
			parts = append(parts, ph.Detail)
		case ph.Name == PhaseCSRs && ph.State == PhaseDone:
			// The count and names, without the advice that follows them.
			pending, _, _ := strings.Cut(ph.Detail, " (")
			parts = append(parts, "CSRs: "+pending)
		case ph.Name == PhaseCSRs:
			parts = append(parts, "CSRs not listed")
		}
	}
	return "all done: " + strings.Join(parts, "; ")
}

// phasesTable is the phases of one resume, one row each.
func phasesTable(phases []PhaseReport) cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "PHASE"}, {Name: "STATE"}, {Name: "DETAIL"}}}
	for _, ph := range phases {
		t.Rows = append(t.Rows, []string{ph.Name, ph.State, ph.Detail})
	}
	return t
}

// shorten cuts s to at most n runes.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
