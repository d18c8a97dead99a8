// Package admissionpolicy holds the unit tests of the ValidatingAdmissionPolicies
// the plugins ship beside their roles (plugins/kubectl-*/admission-policy*.yaml).
//
// Its tests compile each shipped policy with the API server's own admission
// code (k8s.io/apiserver, the version of the k8s.io modules in go.mod) and
// evaluate it against requests made by a user bound to the shipped roles
// (plugins/kubectl-*/rbac.yaml), read as RBAC reads them. So a rule of a
// policy is tested both ways, allowed and denied, without a cluster; e2e then
// shows the same policies installed in a real one.
//
// A test builds a request (operation, resource, object and old object as
// YAML, the user's bound shipped roles and any other RBAC rules) and asks
// admit for the verdict of every shipped policy: which matched, which
// denied and with what message. The authorizer the policies call answers
// as RBAC would from those roles and rules.
//
// A new policy file needs nothing here but tests: every admission-policy*.yaml
// of every plugin is loaded, and every ValidatingAdmissionPolicy in it must
// have a binding that denies.
package admissionpolicy
