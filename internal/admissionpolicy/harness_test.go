package admissionpolicy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// shipped is every policy, binding and ClusterRole the plugins ship, read
// once from plugins/kubectl-*/.
type shipped struct {
	policies map[string]*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings map[string][]*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	roles    map[string]*rbacv1.ClusterRole
	// validators: each policy compiled as the API server compiles it.
	validators map[string]validating.Validator
}

var (
	loadOnce sync.Once
	loaded   *shipped
	loadErr  error
)

// load reads the shipped manifests and compiles the policies.
func load(t *testing.T) *shipped {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = readShipped(filepath.Join("..", "..", "plugins")) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func readShipped(dir string) (*shipped, error) {
	s := &shipped{
		policies:   map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{},
		bindings:   map[string][]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		roles:      map[string]*rbacv1.ClusterRole{},
		validators: map[string]validating.Validator{},
	}
	files, err := filepath.Glob(filepath.Join(dir, "kubectl-*", "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		base := filepath.Base(file)
		if base != "rbac.yaml" && !strings.HasPrefix(base, "admission-policy") {
			continue
		}
		if err := s.read(file); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	for name, p := range s.policies {
		if len(s.bindings[name]) == 0 {
			return nil, fmt.Errorf("policy %s has no binding: it would hold back nothing", name)
		}
		if p.Spec.ParamKind != nil {
			return nil, fmt.Errorf("policy %s has params, which this harness does not evaluate", name)
		}
		v := compile(p)
		if err := v.CompileError(); err != nil {
			return nil, fmt.Errorf("policy %s does not compile: %w", name, err)
		}
		s.validators[name] = v
	}
	return s, nil
}

func (s *shipped) read(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		var into interface{ GetName() string }
		switch meta.Kind {
		case "":
			continue
		case "ValidatingAdmissionPolicy":
			into = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			into = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		case "ClusterRole":
			into = &rbacv1.ClusterRole{}
		default:
			return fmt.Errorf("unexpected kind %s", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			return fmt.Errorf("%s %s: %w", meta.Kind, into.GetName(), err)
		}
		switch o := into.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			s.policies[o.Name] = o
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			if o.Spec.ParamRef != nil || o.Spec.MatchResources != nil {
				return fmt.Errorf("binding %s narrows or parameterizes its policy, which this harness does not evaluate", o.Name)
			}
			s.bindings[o.Spec.PolicyName] = append(s.bindings[o.Spec.PolicyName], o)
		case *rbacv1.ClusterRole:
			s.roles[o.Name] = o
		}
	}
}

// compile builds a policy's validator from the same parts, in the same way,
// as the API server's ValidatingAdmissionPolicy plugin (compilePolicy in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating, unexported).
func compile(p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	withAuthz := celplugin.OptionalVariableDeclarations{HasAuthorizer: true}
	noAuthz := celplugin.OptionalVariableDeclarations{}
	compiler, err := celplugin.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, p.Spec.FailurePolicy, err)
	}
	vars := make([]celplugin.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(vars, withAuthz, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		conds := make([]celplugin.ExpressionAccessor, len(p.Spec.MatchConditions))
		for i := range p.Spec.MatchConditions {
			conds[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conds, withAuthz, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	checks := make([]celplugin.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]celplugin.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		checks[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return validating.NewValidator(
		compiler.CompileCondition(checks, withAuthz, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, withAuthz, environment.StoredExpressions),
		compiler.CompileCondition(messages, noAuthz, environment.StoredExpressions),
		p.Spec.FailurePolicy,
		nil,
	)
}

// binding is one role bound to the requesting user: in Namespace with a
// RoleBinding, or cluster-wide with a ClusterRoleBinding when it is empty.
type binding struct {
	Role      string
	Namespace string
}

// request is one API request as admission sees it.
type request struct {
	Operation admission.Operation
	Resource  schema.GroupVersionResource
	// Subresource, as "status" or "approval".
	Subresource string
	Namespace   string
	// Name defaults to the object's (or old object's) name.
	Name string
	// Object and OldObject as YAML, with apiVersion and kind; empty for none
	// (no Object on DELETE, no OldObject on CREATE).
	Object, OldObject string
	// NamespaceLabels, for a policy with a namespaceSelector.
	NamespaceLabels map[string]string

	User   string
	Groups []string
	// Bound: the shipped roles the user holds; Rules: any other grant.
	Bound []binding
	Rules []rbacv1.PolicyRule
}

// verdict is what every shipped policy made of a request.
type verdict struct {
	// Matched names the policies whose constraints and matchConditions
	// selected the request.
	Matched []string
	// Denied: policy name, ": ", the message the user sees.
	Denied []string
}

func (v verdict) deniedBy(policy string) bool {
	return slices.ContainsFunc(v.Denied, func(d string) bool { return strings.HasPrefix(d, policy+": ") })
}

// admit evaluates every shipped policy against r as the API server would,
// and fails the test on an evaluation error (a policy that errs denies
// under failurePolicy Fail, but never by design).
func admit(t *testing.T, r request) verdict {
	t.Helper()
	s := load(t)
	attrs, err := r.attributes()
	if err != nil {
		t.Fatal(err)
	}
	authz := &rbacStub{roles: s.roles, bound: r.Bound, rules: r.Rules}
	var v verdict
	names := make([]string, 0, len(s.policies))
	for name := range s.policies {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.policies[name]
		ok, err := matches(p.Spec.MatchConstraints, attrs, r.NamespaceLabels)
		if err != nil {
			t.Fatalf("policy %s: %v", name, err)
		}
		if !ok {
			continue
		}
		res := s.validators[name].Validate(context.Background(), r.Resource, attrs, nil, nil, celconfig.RuntimeCELCostBudget, authz)
		// No decision at all: its matchConditions passed the request by
		// (a policy that matched has one decision per validation).
		if len(res.Decisions) == 0 {
			continue
		}
		v.Matched = append(v.Matched, name)
		for _, d := range res.Decisions {
			if d.Evaluation == validating.EvalError {
				t.Fatalf("policy %s: evaluation error: %s", name, d.Message)
			}
			if d.Action == validating.ActionDeny && denies(s.bindings[name]) {
				v.Denied = append(v.Denied, name+": "+d.Message)
			}
		}
	}
	return v
}

func denies(bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
	for _, b := range bs {
		if slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			return true
		}
	}
	return false
}

// matches applies a policy's matchConstraints: resource rules (with their
// resourceNames), exclusions and label selectors.
func matches(m *admissionregistrationv1.MatchResources, attrs admission.Attributes, nsLabels map[string]string) (bool, error) {
	if m == nil {
		return false, errors.New("no matchConstraints")
	}
	in := func(rs []admissionregistrationv1.NamedRuleWithOperations) bool {
		for _, r := range rs {
			if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, attrs.GetName()) {
				continue
			}
			if (&rules.Matcher{Rule: r.RuleWithOperations, Attr: attrs}).Matches() {
				return true
			}
		}
		return false
	}
	if !in(m.ResourceRules) || in(m.ExcludeResourceRules) {
		return false, nil
	}
	if m.ObjectSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(m.ObjectSelector)
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set(objectLabels(attrs.GetObject()))) && !sel.Matches(labels.Set(objectLabels(attrs.GetOldObject()))) {
			return false, nil
		}
	}
	if m.NamespaceSelector != nil && attrs.GetNamespace() != "" {
		sel, err := metav1.LabelSelectorAsSelector(m.NamespaceSelector)
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set(nsLabels)) {
			return false, nil
		}
	}
	return true, nil
}

func objectLabels(o any) map[string]string {
	if u, ok := o.(*unstructured.Unstructured); ok && u != nil {
		return u.GetLabels()
	}
	return nil
}

func (r request) attributes() (*admission.VersionedAttributes, error) {
	obj, err := decode(r.Object)
	if err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	old, err := decode(r.OldObject)
	if err != nil {
		return nil, fmt.Errorf("oldObject: %w", err)
	}
	name := r.Name
	var gvk schema.GroupVersionKind
	for _, o := range []*unstructured.Unstructured{old, obj} {
		if o != nil {
			gvk = o.GroupVersionKind()
			if name == "" {
				name = o.GetName()
			}
		}
	}
	info := &user.DefaultInfo{Name: r.User, Groups: r.Groups}
	attrs := admission.NewAttributesRecord(runtimeObject(obj), runtimeObject(old), gvk, r.Namespace, name, r.Resource, r.Subresource, r.Operation, nil, false, info)
	return admission.NewVersionedAttributes(attrs, gvk, nil)
}

// runtimeObject keeps "no object" nil as an interface: a nil
// *Unstructured inside a runtime.Object would read as an object.
func runtimeObject(u *unstructured.Unstructured) runtime.Object {
	if u == nil {
		return nil
	}
	return u
}

func decode(y string) (*unstructured.Unstructured, error) {
	if strings.TrimSpace(y) == "" {
		return nil, nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, errors.New("apiVersion and kind are required")
	}
	return u, nil
}

// rbacStub answers the policies' authorizer checks as RBAC would for a
// user holding the bound shipped roles and the extra rules.
type rbacStub struct {
	roles map[string]*rbacv1.ClusterRole
	bound []binding
	rules []rbacv1.PolicyRule
}

func (a *rbacStub) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "only resource requests are modelled", nil
	}
	for _, r := range a.rules {
		if ruleAllows(r, attrs) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	for _, b := range a.bound {
		role, ok := a.roles[b.Role]
		if !ok {
			return authorizer.DecisionNoOpinion, "", fmt.Errorf("no shipped ClusterRole %s", b.Role)
		}
		// A RoleBinding grants in its namespace only; a ClusterRoleBinding everywhere.
		if b.Namespace != "" && b.Namespace != attrs.GetNamespace() {
			continue
		}
		for _, r := range role.Rules {
			if ruleAllows(r, attrs) {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ruleAllows is RBAC's rule match: verb, group, resource[/subresource] and,
// when the rule names any, the object's name.
func ruleAllows(r rbacv1.PolicyRule, attrs authorizer.Attributes) bool {
	resource := attrs.GetResource()
	if attrs.GetSubresource() != "" {
		resource += "/" + attrs.GetSubresource()
	}
	has := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	return has(r.Verbs, attrs.GetVerb()) &&
		has(r.APIGroups, attrs.GetAPIGroup()) &&
		has(r.Resources, resource) &&
		(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, attrs.GetName()))
}
