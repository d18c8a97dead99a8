package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// The shipped roles grant no Secret and no ManifestWork by kind: the
// narrow grants are made per object or per namespace by an administrator,
// and a command refused for lack of one prints the commands that make it.

// UserName asks the API server who the current user is
// (SelfSubjectReview); "" when it cannot tell.
func UserName(ctx context.Context, client authenticationclient.SelfSubjectReviewsGetter) string {
	r, err := client.SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}

// plainSubject is a user name that can be pasted into a shell as it is;
// anything else (the name comes from the server) is shown as USER.
var plainSubject = regexp.MustCompile(`^[A-Za-z0-9@:._-]{1,253}$`)

func subjectFlag(user string) string {
	if !plainSubject.MatchString(user) {
		user = "USER"
	}
	return "--user " + user
}

// SecretGrant is the two commands that let user do verbs on the one Secret
// namespace/name and nothing else: a Role named after the Secret whose only
// rule names it (resourceNames), and its RoleBinding. The Role is called
// prefix:name (prefix is the plugin's, e.g. spokekit-spoke).
func SecretGrant(prefix, namespace, name string, verbs []string, user string) string {
	role := prefix + ":" + name
	return fmt.Sprintf("kubectl create role %s -n %s --verb %s --resource secrets --resource-name %s\n  kubectl create rolebinding %s -n %s --role %s %s",
		role, namespace, strings.Join(verbs, ","), name, role, namespace, role, subjectFlag(user))
}

// NamespaceBinding is the command that binds ClusterRole role to user in
// namespace alone.
func NamespaceBinding(role, namespace, user string) string {
	return fmt.Sprintf("kubectl create rolebinding %s -n %s --clusterrole %s %s", role, namespace, role, subjectFlag(user))
}
