package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metav1GetOptions = metav1.GetOptions{}

// Result is what a command printed and how it exited.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// String shows a result in a test failure.
func (r Result) String() string {
	return "exit " + strconv.Itoa(r.ExitCode) + "\n--- stdout\n" + r.Stdout + "\n--- stderr\n" + r.Stderr
}

// Command is a kubectl invocation as a user would type it, with the
// environment it runs in.
type Command struct {
	Tools Tools
	// Env adds to (or overrides) the environment, e.g. KUBECONFIG=....
	Env   []string
	Stdin string
	// Home is the HOME the command sees, so no user config leaks in.
	Home string
}

// Kubectl runs the built kubectl with args, finding the plugins on PATH.
func (c Command) Kubectl(ctx context.Context, args ...string) (Result, error) {
	return c.Run(ctx, filepath.Join(c.Tools.Bin, "kubectl"), args...)
}

// Run runs any program in the command's environment.
func (c Command) Run(ctx context.Context, program string, args ...string) (Result, error) {
	return c.RunIn(ctx, "", program, args...)
}

// RunIn runs a program in the command's environment from directory dir.
func (c Command) RunIn(ctx context.Context, dir, program string, args ...string) (Result, error) {
	cmd := c.command(dir, program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runContext(ctx, cmd)
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.ExitCode = exit.ExitCode()
		return r, nil
	}
	return r, err
}

// command is program with args in the command's environment, from dir.
func (c Command) command(dir, program string, args ...string) *exec.Cmd {
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + c.Tools.Path(), "HOME=" + c.Home, "LANG=C"}, c.Env...)
	cmd.Stdin = strings.NewReader(c.Stdin)
	return cmd
}

// For returns a command whose KUBECONFIG is the cluster's.
func (c *Cluster) For(home string) Command {
	if home == "" {
		home = os.TempDir()
	}
	return Command{Tools: c.env.Tools, Env: []string{"KUBECONFIG=" + c.Kubeconfig}, Home: home}
}

// Exec is program with args in the command's environment, not started: for
// a caller that needs the process itself (its resource usage, a benchmark's
// timing window).
func (c Command) Exec(program string, args ...string) *exec.Cmd {
	return c.command("", program, args...)
}

// Kubeconfig is the kubeconfig file the command's environment names ("" for none).
func (c Command) Kubeconfig() string {
	for _, e := range c.Env {
		if v, ok := strings.CutPrefix(e, "KUBECONFIG="); ok {
			return v
		}
	}
	return ""
}
