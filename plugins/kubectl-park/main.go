// kubectl-park is the kubectl plugin behind `kubectl park`.
package main

import (
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/park"
)

func main() { cli.Main(park.NewCmdPark) }
