// Package harness starts real local Kubernetes control planes for the
// end-to-end tests (kwokctl's binary runtime: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and the kwok controller), runs the
// real upstream controllers beside them (Open Cluster Management, Cluster
// API), installs CRDs and runs the built plugins through the built kubectl.
//
// # Writing a test
//
// A package's TestMain starts its clusters once, through Main; its tests
// share them and use names of their own. A test then does what a user does
// and checks what the user would:
//
//	func TestParkTwiceIsANoOp(t *testing.T) {
//		// The objects the test needs, from the fixture builders.
//		assert.NilError(t, platform.ApplyYAML(harness.Context(t, time.Minute), fixture.Docs(...)))
//		// The plugin, as typed: kubectl finds it on PATH.
//		r := harness.Kubectl(t, platform.For(t.TempDir()), "park", "cluster", "app", "-n", "dynamo-dev")
//		assert.Equal(t, r.ExitCode, 0, r)
//		// The cluster's real state, read with the harness's clients.
//		c, err := platform.Dynamic.Resource(...).Get(harness.Context(t, time.Minute), "app", metav1.GetOptions{})
//		...
//	}
//
// Context bounds one step; Kubectl runs one command (an exit code is a
// result, a command that cannot start fails the test). Each package wraps
// them in a one-line ctx and kubectl of its own for its cluster. Wait on a
// condition with a bound (wait.PollUntilContextTimeout, kubectl wait),
// never with a sleep. Cluster.WithFault puts a fault proxy in front of an
// API server (stall, lose an answer, interleave another writer) for the
// fault scenarios; ServiceAccountCommand runs commands as a user bound to
// the shipped roles (PluginRBAC) and nothing else.
//
// Which test to copy: a read-only command, e2e/spoke/list_test.go; a change
// and its refusals, e2e/spoke/remove_test.go or e2e/park/park_test.go;
// least privilege, */rbac_test.go; API faults, */faults_test.go; Ctrl-C,
// e2e/fleetdrain/interrupt_test.go; the FleetConfig modes,
// e2e/spoke/fleetmodes_test.go.
package harness
