// pack is the second half of `make dist`: it packs the cross-compiled plugins
// into release archives with their sha256, writes the krew manifests that
// install them and prints every binary's and archive's size.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spokekit/spokekit/internal/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	var r release.Release
	var plugins, platforms, out, manifests string
	flag.StringVar(&r.Version, "version", "", "release version, vMAJOR.MINOR.PATCH")
	flag.StringVar(&plugins, "plugins", "spoke fleetdrain park", "plugins to pack, space-separated")
	flag.StringVar(&platforms, "platforms", "", "os/arch pairs to pack, space-separated")
	flag.StringVar(&r.BinDir, "bin", "", "directory with one <os>_<arch> directory of built plugins per platform")
	flag.StringVar(&r.SourceDir, "source", ".", "checkout holding LICENSE and plugins/")
	flag.StringVar(&r.URL, "url", "", "where the archives will be downloaded from")
	flag.StringVar(&out, "out", "", "directory for the archives and their .sha256 files")
	flag.StringVar(&manifests, "manifests", "", "directory for the krew manifests, <plugin>.yaml")
	flag.Parse()
	r.Plugins = strings.Fields(plugins)
	for _, s := range strings.Fields(platforms) {
		p, err := release.ParsePlatform(s)
		if err != nil {
			return err
		}
		r.Platforms = append(r.Platforms, p)
	}
	if r.BinDir == "" || r.URL == "" || out == "" || manifests == "" {
		return fmt.Errorf("-bin, -url, -out and -manifests are required")
	}

	packed, err := r.Pack(out)
	if err != nil {
		return err
	}
	krew, err := r.KrewManifests(packed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", manifests, err)
	}
	for _, m := range krew {
		data, err := m.Render()
		if err != nil {
			return err
		}
		file := filepath.Join(manifests, m.Plugin+".yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return fmt.Errorf("writing the krew manifest %s: %w", file, err)
		}
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PLATFORM\tBINARY\tSIZE\tARCHIVE\tSIZE")
	for _, p := range packed {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.Platform, p.Binary(), mb(p.BinarySize), p.Name(), mb(p.ArchiveSize))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("printing the sizes: %w", err)
	}
	fmt.Printf("archives and .sha256 files in %s, krew manifests in %s\n", out, manifests)
	return nil
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
