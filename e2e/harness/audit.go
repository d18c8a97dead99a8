package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// auditEvent is what Writes reads of an audit log line.
type auditEvent struct {
	Verb       string `json:"verb"`
	UserAgent  string `json:"userAgent"`
	RequestURI string `json:"requestURI"`
	ObjectRef  struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
}

// Writes counts, from the API server's audit log (the cluster must be
// started with AuditWrites), the write requests to one object (resource,
// namespace and name; not its subresources) by clients whose user agent
// starts with userAgent, such as "kubectl-park/". Dry runs are not writes.
func (c *Cluster) Writes(ctx context.Context, userAgent, resource, namespace, name string) (int, error) {
	log, err := c.env.output(ctx, c.Name, "logs", "audit", "--name", c.Name)
	if err != nil {
		return 0, err
	}
	n := 0
	lines := bufio.NewScanner(bytes.NewReader(log))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var e auditEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			return 0, fmt.Errorf("audit log of %s: %w", c.Name, err)
		}
		r := e.ObjectRef
		if strings.HasPrefix(e.UserAgent, userAgent) && r.Resource == resource && r.Subresource == "" &&
			r.Namespace == namespace && r.Name == name && !strings.Contains(e.RequestURI, "dryRun=") {
			n++
		}
	}
	return n, lines.Err()
}
