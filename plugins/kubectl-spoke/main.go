// kubectl-spoke is the kubectl plugin behind `kubectl spoke`.
package main

import (
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/spoke"
)

func main() { cli.Main(spoke.NewCmdSpoke) }
