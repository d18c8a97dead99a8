package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// LongDesc marks a command's long description as written in the source
// (indented, light Markdown). It is rendered for the terminal, as kubectl's
// templates.LongDesc renders it, by RenderHelp when help is shown: rendering
// every command's at each start cost about 8 ms of CPU, a tenth of a
// plugin's start-up, for help most runs never print.
func LongDesc(s string) string { return s }

// renderedAnnotation marks a root whose help RenderHelp has rendered.
const renderedAnnotation = "spokekit.io/help-rendered"

// RenderHelp renders the long description of root and of every command
// below it, once, and ends root's with the exit codes. NewRoot's help runs
// it; so does anything else that reads Long (the command reference).
func RenderHelp(root *cobra.Command) {
	if root.Annotations[renderedAnnotation] != "" {
		return
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		// cobra's own help command (no plugin names one help) is plain text.
		if c.Name() != "help" {
			c.Long = templates.LongDesc(c.Long)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	root.Long += "\n\n" + exitcode.Help
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[renderedAnnotation] = "true"
}
