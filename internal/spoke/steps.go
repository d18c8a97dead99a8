package spoke

import "github.com/spokekit/spokekit/internal/cli"

// Step is one thing a command did, or would do: the reports of add,
// prepare, remove and force-remove list them, and the changes to the hub's
// release or HelmRelease are steps too.
type Step struct {
	What   string `json:"what"`
	Result string `json:"result"`
}

// stepsTable is the table of a report made of steps: one row each.
func stepsTable(steps []Step) cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "STEP"}, {Name: "RESULT"}}}
	for _, s := range steps {
		t.Rows = append(t.Rows, []string{s.What, s.Result})
	}
	return t
}
