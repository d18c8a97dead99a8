// Package clientrate is the client-side request rate of every client the
// plugins build: from the user's kubeconfig flags (cli) and from a
// kubeconfig the user hands over or a cluster stores (kubeconfig).
//
// client-go's default (5 a second, bursts of 10) makes a list of thousands
// of objects wait between pages, serialises a drain's evictions and turns a
// preflight of forty access reviews into eight seconds of waiting; the API
// server's priority and fairness, not the client, is what protects the
// server.
package clientrate

import "k8s.io/client-go/rest"

// The plugins' rate: requests a second, and the burst above it.
const (
	QPS   = 50
	Burst = 100
)

// Set gives c the plugins' rate, unless it brings its own rate limiter.
func Set(c *rest.Config) *rest.Config {
	if c.RateLimiter == nil {
		c.QPS, c.Burst = QPS, Burst
	}
	return c
}
