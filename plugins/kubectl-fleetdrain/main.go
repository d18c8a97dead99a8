// kubectl-fleetdrain is the kubectl plugin behind `kubectl fleetdrain`.
package main

import (
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/fleetdrain"
)

func main() { cli.Main(fleetdrain.NewCmdFleetdrain) }
