package park

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// crowdedRuns wraps a bulk command and counts the clusters in its runOne at
// once. Each run waits for one more than the limit to join it, up to a
// bound: every run that may overlap it then does, and one too many shows.
type crowdedRuns struct {
	bulkCommand
	want int

	mu        sync.Mutex
	cond      *sync.Cond
	now, peak int
	bound     time.Duration
}

func (c *crowdedRuns) runOne(ctx context.Context, p *Platform, item *BulkItem) error {
	c.mu.Lock()
	c.now++
	c.peak = max(c.peak, c.now)
	c.cond.Broadcast()
	expired := false
	deadline := time.AfterFunc(c.bound, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		expired = true
		c.cond.Broadcast()
	})
	for c.now < c.want && !expired {
		c.cond.Wait()
	}
	deadline.Stop()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.now--
	}()
	return c.bulkCommand.runOne(ctx, p, item)
}

// park -l and resume -l run --max-concurrent clusters at once: never more,
// and as many as it allows. Before, no test held the limit: running one
// more, or one at a time, failed none.
func TestBulkRunsMaxConcurrentClustersAtOnce(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		p, patches := bulkPlatform(t, nil, parkedCluster(t, "a"), parkedCluster(t, "b"), parkedCluster(t, "c"), parkedCluster(t, "d"), parkedCluster(t, "e"))
		var out bytes.Buffer
		o := bulkResume(&out, limit)
		runs := &crowdedRuns{bulkCommand: o, want: limit + 1, bound: 300 * time.Millisecond}
		runs.cond = sync.NewCond(&runs.mu)
		assert.NilError(t, o.runBulk(context.Background(), p, "resume", BulkResumed, runs))
		assert.Equal(t, patches.count(), 5)
		assert.Equal(t, runs.peak, limit, "clusters resumed at once with --max-concurrent %d", limit)
	}
}
