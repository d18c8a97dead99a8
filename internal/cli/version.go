package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/scrub"
)

// Set at build time with -ldflags "-X github.com/spokekit/spokekit/internal/cli.version=...".
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// VersionInfo is what `version` prints.
type VersionInfo struct {
	api.ReportMeta `json:",inline"`
	Plugin         string `json:"plugin"`
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	BuildDate      string `json:"buildDate"`
	GoVersion      string `json:"goVersion"`
	Platform       string `json:"platform"`
	// Server is set with --show-server: the API server the kubeconfig flags select.
	Server *ServerInfo `json:"server,omitempty"`
}

// ServerInfo names the API server a command talks to.
type ServerInfo struct {
	URL     string `json:"url"`
	Version string `json:"version"`
}

// Version returns the build information of this binary.
func Version(plugin string) VersionInfo {
	return VersionInfo{
		ReportMeta: api.NewReportMeta("Version", plugin),
		Plugin:     plugin,
		Version:    version,
		Commit:     commit,
		BuildDate:  date,
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func newCmdVersion(plugin string, f *Factory, streams genericiooptions.IOStreams) *cobra.Command {
	out := NewOutput("json", "yaml")
	var withServer bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of this plugin",
		Example: templates.Examples(`
			# Print the version
			kubectl ` + plugin + ` version

			# Print it as JSON for a script
			kubectl ` + plugin + ` version -o json

			# Also show which API server the current flags and kubeconfig select
			kubectl ` + plugin + ` version --show-server --context prod-hub`),
		Args: NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			v := Version(plugin)
			if withServer {
				s, err := serverInfo(f)
				if err != nil {
					return err
				}
				v.Server = s
			}
			return out.Print(streams.Out, v, func() Table {
				t := Table{
					Columns: []Column{{Name: "PLUGIN"}, {Name: "VERSION"}, {Name: "COMMIT"}, {Name: "BUILD DATE"}, {Name: "GO"}, {Name: "PLATFORM"}},
					Rows:    [][]string{{"kubectl-" + plugin, v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform}},
				}
				if v.Server != nil {
					t.Columns = append(t.Columns, Column{Name: "SERVER"}, Column{Name: "SERVER VERSION"})
					t.Rows[0] = append(t.Rows[0], v.Server.URL, v.Server.Version)
				}
				return t
			})
		},
	}
	out.AddFlags(cmd)
	cmd.Flags().BoolVar(&withServer, "show-server", false, "Also print the URL and version of the API server selected by the kubeconfig flags.")
	return cmd
}

func serverInfo(f *Factory) (*ServerInfo, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	dc, err := f.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client for %s: %w", cfg.Host, err)
	}
	sv, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("asking %s for its version: %w", cfg.Host, err)
	}
	// -o json and yaml print as they are: scrub the URL here.
	return &ServerInfo{URL: scrub.URLs(cfg.Host), Version: sv.GitVersion}, nil
}
