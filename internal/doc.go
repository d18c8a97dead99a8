// Package internal holds the code of the three spokekit plugins; this
// documentation is the map for contributors.
//
// # Layers
//
// plugins/kubectl-<name>/main.go is a thin main: cli.Main(<domain>.NewCmd<Name>).
// Each plugin's commands live in its domain package:
//
//   - spoke: `kubectl spoke`, the FleetConfig Spokes of a hub;
//   - fleetdrain: `kubectl fleetdrain`, nodes of a cluster and spokes out of
//     a fleet's placements;
//   - park: `kubectl park`, a Cluster API cluster's workers.
//
// They build on the shared packages, never on each other:
//
//   - cli: the root command with kubectl's global flags, the factory of
//     clients, -o printers, --dry-run, the exit code of an error, access
//     checks before a change, prompts, progress, waits and terminal escaping;
//   - api: typed models of the kinds read (fleetconfig, ocm, capi), their
//     unstructured conversion, JSON patches and report metadata;
//   - kubeconfig: checks of the kubeconfigs the commands are handed, and the
//     only loader of a kubeconfig read from a Secret (untrusted);
//   - values: edits of a Helm values file or HelmRelease that keep comments;
//   - exitcode, authz, scrub, localfile: leaves that import no other
//     spokekit package, so that kubeconfig and values need no cli: exit codes
//     and the errors that carry them, what the current user may do (a
//     SelfSubjectRulesReview per namespace, SelfSubjectAccessReviews for the
//     rest), credentials scrubbed from what is printed, bounded reads of
//     the files a user names.
//
// A domain package keeps below its commands, in packages of its own, what
// stands on its own: spoke/hubclient sends every request spoke makes to
// the hub, each write with its guard; spoke/probe reaches a spoke's API
// server through a kubeconfig for `spoke health --deep`; spoke/health
// judges what `spoke health` read (the rules of a healthy spoke, pure: no
// request, no printing). Such a
// package is imported by its commands and imports none of them (that
// would be a cycle) nor another domain's; depguard's prefixes take it as
// part of its domain package.
//
// family tests what the three plugins promise alike; release holds the
// GoReleaser configuration and the krew templates.
//
// # A leaf command
//
// Each leaf command lives in a file named after it (`fleetdrain cluster` in
// fleetdrain/cluster.go, its pure plan in clusterplan.go); what several
// commands share lives in a file named for what it is (spoke/steps.go: the
// steps a report lists), never in one command's file. A command has an Options
// struct whose RunE is cli.RunE(o, o.Complete), kubectl's order:
//
//   - Complete reads the command line and the kubeconfig; it sends no request;
//   - Validate refuses bad input (names, flag values, local files) before any
//     request, with exitcode.UsageErrorf (exit 2);
//   - Run gets its clients from the plugin's cli.Factory and does the work.
//
// Run goes plan, access check, apply, report:
//
//  1. plan: read what is there and compute the change in a pure function
//     (no client), which the unit tests golden-test;
//  2. access check: every permission the plan needs (cli.Preflight, which
//     asks authz); a missing one refuses before any change;
//  3. apply: thin writes of the plan (each with the --dry-run option), then
//     an optional wait bounded by --timeout;
//  4. report: one report value printed by the command's cli.Output (table,
//     wide, json, yaml, name, jsonpath, custom-columns).
//
// --dry-run=client stops after the plan, --dry-run=server sends the writes
// with dryRun. Everything read from a cluster is untrusted: it is escaped
// before printing (cli.EscapeTerminal) and a kubeconfig from a Secret goes
// through kubeconfig's loader. Errors wrap with fmt.Errorf("...: %w", err).
//
// # Exit codes
//
// Defined once in exitcode, ended in every plugin's help: 0 done, 1 failed,
// 2 usage (exitcode.UsageErrorf), 3 refused before anything changed, also
// when a safety check cannot check (exitcode.RefusedError), 4 changed but
// the wait timed out (exitcode.TimedOutError), 130 interrupted (wrapping
// exitcode.ErrInterrupted). cli.Execute maps an error to its code
// (exitcode.Of).
//
// # Recipe: adding a leaf command
//
//  1. Write <command>.go in the domain package: Options with Complete,
//     Validate and Run as above; NewCmd<Command>(f, streams) with Short,
//     Long, Example, Args (cli.ExactArgs and friends), cli.RunE, the
//     Output's flags, cli.AddDryRunFlag if it changes something and
//     --timeout ("(0: no limit)") if it waits.
//  2. Put the pure plan in its own function (or <command>plan.go) and
//     golden-test it with gotest.tools/v3 (testdata/*.golden; rewrite them
//     with `go test ./internal/<domain>/ -update` and read the diff).
//  3. Register it in the plugin's cmd.go with root.AddCommand.
//  4. Add a valid command line to leafArgs in family/family_test.go, and the
//     command to reads or waits there as it applies: the family test then
//     checks its help, -o, --dry-run, --timeout and that bad input is
//     refused before any request.
//  5. Test it end to end in e2e/<plugin> (see e2e/README.md).
//
// `make lint` and `make test-unit` (with -race) must pass.
package internal
