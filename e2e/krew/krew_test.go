//go:build e2e

package krew

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/e2e/harness"
)

func ctx(t *testing.T) context.Context {
	t.Helper()
	return harness.Context(t, 3*time.Minute)
}

// newUser is someone with krew (in the tools directory, next to kubectl) and
// a fresh KREW_ROOT, whose bin directory is the only place plugins are found.
func newUser(t *testing.T) harness.Command {
	t.Helper()
	root := t.TempDir()
	return harness.Command{
		Tools: harness.Tools{Bin: tools.Bin, Plugins: filepath.Join(root, "bin")},
		// No version check against GitHub: the test is offline.
		Env:  []string{"KREW_ROOT=" + root, "KREW_NO_UPGRADE_CHECK=1"},
		Home: t.TempDir(),
	}
}

var kubectl = harness.Kubectl

// archiveName is the file name of the release archive of a plugin that the
// test installs.
func archiveName(plugin string) string {
	return "kubectl-" + plugin + "_" + version + "_linux_amd64.tar.gz"
}

func archivePath(plugin string) string { return filepath.Join(served, "releases", archiveName(plugin)) }

func archiveURLPath(plugin string) string { return "/releases/" + archiveName(plugin) }

func TestManifestsPassKrewsValidator(t *testing.T) {
	user := newUser(t)
	for _, p := range plugins {
		// The committed manifests of the current release, all six platforms;
		// their archives are not here, so only their structure is checked.
		committed := filepath.Join("..", "..", "krew-manifests", p+".yaml")
		r, err := user.Run(ctx(t), filepath.Join(tools.Bin, "validate-krew-manifest"), "-manifest", committed, "-skip-install")
		assert.NilError(t, err)
		assert.Check(t, r.ExitCode == 0, r)

		// The test release's: the validator installs it with krew from
		// 127.0.0.1 and checks the LICENSE arrived.
		built := filepath.Join(served, "manifests", p+".yaml")
		r, err = user.Run(ctx(t), filepath.Join(tools.Bin, "validate-krew-manifest"), "-manifest", built)
		assert.NilError(t, err)
		assert.Check(t, r.ExitCode == 0, r)
		assert.Check(t, is.Contains(r.Stderr, "all 1 spec.platforms installed fine"), r)
	}
}

// A user checks a download as the README's Install section says, with the release's checksums.
func TestChecksumsVerifyTheArchives(t *testing.T) {
	user := newUser(t)
	r, err := user.Run(ctx(t), "/bin/sh", "-c", "cd "+filepath.Join(served, "releases")+" && sha256sum -c "+checksums)
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, is.Contains(r.Stdout, archiveName(p)+": OK\n"), r)
	}
}

// krew-manifests/ holds what GoReleaser wrote for the current release: the
// test release's manifests, which GoReleaser wrote just now, say the same but
// for the version, the archives' URLs and sha256s, and the platforms built.
func TestCommittedManifestsAreWhatGoReleaserWrites(t *testing.T) {
	for _, p := range plugins {
		t.Run(p, func(t *testing.T) {
			generated, err := os.ReadFile(filepath.Join(served, "manifests", p+".yaml"))
			assert.NilError(t, err)
			committed, err := os.ReadFile(filepath.Join("..", "..", "krew-manifests", p+".yaml"))
			assert.NilError(t, err)
			var release struct{ Spec struct{ Version string } }
			assert.NilError(t, yaml.Unmarshal(committed, &release))
			assert.Assert(t, release.Spec.Version != "")
			// The committed release, as if it were the test's.
			committed = bytes.ReplaceAll(committed, []byte(release.Spec.Version), []byte(version))
			header, _, _ := bytes.Cut(generated, []byte("\n"))
			assert.Check(t, bytes.HasPrefix(committed, append(header, '\n')), "krew-manifests/%s.yaml does not start as GoReleaser's do: %q", p, header)

			want, wantPlatforms := splitPlatforms(t, committed)
			got, gotPlatforms := splitPlatforms(t, generated)
			assert.DeepEqual(t, got, want)
			assert.Equal(t, len(gotPlatforms), 1)
			built := gotPlatforms[0]
			assert.Equal(t, path.Base(built.URI), archiveName(p))
			var found bool
			for _, c := range wantPlatforms {
				if c.Selector == built.Selector {
					found = true
					assert.Check(t, is.Equal(c.Bin, built.Bin))
					assert.Check(t, is.Equal(path.Base(c.URI), path.Base(built.URI)))
				}
			}
			assert.Check(t, found, "krew-manifests/%s.yaml has no platform %v", p, built.Selector)
		})
	}
}

// krewPlatform is what a manifest says about one platform.
type krewPlatform struct {
	Selector struct{ MatchLabels struct{ OS, Arch string } }
	URI      string
	Bin      string
}

// splitPlatforms parses a manifest into its platforms and the rest.
func splitPlatforms(t *testing.T, manifest []byte) (map[string]any, []krewPlatform) {
	t.Helper()
	var rest map[string]any
	assert.NilError(t, yaml.Unmarshal(manifest, &rest))
	spec, ok := rest["spec"].(map[string]any)
	assert.Assert(t, ok, "no spec in\n%s", manifest)
	delete(spec, "platforms")
	var platforms struct {
		Spec struct{ Platforms []krewPlatform }
	}
	assert.NilError(t, yaml.Unmarshal(manifest, &platforms))
	return rest, platforms.Spec.Platforms
}

func TestInstallFromManifestAndArchive(t *testing.T) {
	user := newUser(t)
	// krew's list and uninstall need an index; krew's own setup clones the
	// central one, which an empty local index stands in for.
	r := kubectl(t, user, "krew", "index", "add", "default", server.URL+"/default.git")
	assert.Equal(t, r.ExitCode, 0, r)

	for _, p := range plugins {
		r := kubectl(t, user, "krew", "install", "--manifest="+filepath.Join(served, "manifests", p+".yaml"), "--archive="+archivePath(p))
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stderr, "Installed plugin: "+p), r)
		assert.Check(t, is.Contains(r.Stdout+r.Stderr, "kubectl_complete-"+p), "the caveats explain the completion script\n%s", r)
	}
	assertPluginsWork(t, user)

	// Off a terminal, krew lists INDEX/NAME only; a manifest install has no index.
	r = kubectl(t, user, "krew", "list")
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, is.Contains(r.Stdout, "detached/"+p+"\n"), r)
	}

	assertUninstall(t, user)
}

func TestInstallFromCustomIndex(t *testing.T) {
	user := newUser(t)
	r := kubectl(t, user, "krew", "index", "add", "spokekit", server.URL+"/spokekit.git")
	assert.Equal(t, r.ExitCode, 0, r)

	r = kubectl(t, user, "krew", "search")
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, is.Regexp(`(?m)^spokekit/`+p+`\s+\S`, r.Stdout), r)
	}

	for _, p := range plugins {
		requests.Delete(archiveURLPath(p))
	}
	install := kubectl(t, user, "krew", "install", "spokekit/spoke", "spokekit/fleetdrain", "spokekit/park")
	assert.Equal(t, install.ExitCode, 0, install)
	for _, p := range plugins {
		_, fetched := requests.Load(archiveURLPath(p))
		assert.Check(t, fetched, "krew downloads %s from the URL in the index", archiveURLPath(p))
	}
	assertPluginsWork(t, user)

	// kubectl completes nothing for the plugin until the caveats' completion
	// step, run as printed, puts the script on PATH.
	r = kubectl(t, user, "__complete", "park", "")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, !strings.Contains(r.Stdout, "version\t"), r)
	step := regexp.MustCompile(`cp "\$\{KREW_ROOT:-\$HOME/\.krew\}/store/park/\S+/kubectl_complete-park" "\$\{KREW_ROOT:-\$HOME/\.krew\}/bin/"`).FindString(install.Stderr + install.Stdout)
	assert.Assert(t, step != "", "no completion step in the caveats\n%s", install)
	sh, err := user.Run(ctx(t), "/bin/sh", "-c", step)
	assert.NilError(t, err)
	assert.Equal(t, sh.ExitCode, 0, sh)
	r = kubectl(t, user, "__complete", "park", "")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "version\t"), r)

	// The roles the caveats point to are installed with the plugin, as shipped.
	roles := regexp.MustCompile(`"\$\{KREW_ROOT:-\$HOME/\.krew\}/store/park/\S+/rbac\.yaml"`).FindString(install.Stderr + install.Stdout)
	assert.Assert(t, roles != "", "the caveats name no rbac.yaml\n%s", install)
	sh, err = user.Run(ctx(t), "/bin/sh", "-c", "cat "+roles)
	assert.NilError(t, err)
	assert.Equal(t, sh.ExitCode, 0, sh)
	shipped, err := os.ReadFile(filepath.Join("..", "..", "plugins", "kubectl-park", "rbac.yaml"))
	assert.NilError(t, err)
	assert.Check(t, sh.Stdout == string(shipped), "the installed rbac.yaml is the plugin's")

	r = kubectl(t, user, "krew", "list")
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, is.Contains(r.Stdout, "spokekit/"+p+"\n"), r)
	}

	// As the caveats say: krew does not know the script, so remove it too.
	sh, err = user.Run(ctx(t), "/bin/sh", "-c", `rm "${KREW_ROOT:-$HOME/.krew}/bin/kubectl_complete-park"`)
	assert.NilError(t, err)
	assert.Equal(t, sh.ExitCode, 0, sh)
	assertUninstall(t, user)
}

// assertPluginsWork runs the installed plugins through kubectl.
func assertPluginsWork(t *testing.T, user harness.Command) {
	t.Helper()
	for _, p := range []string{"spoke", "park"} {
		r := kubectl(t, user, p, "version")
		assert.Equal(t, r.ExitCode, 0, r)
		// The version of the archive, so kubectl ran what krew installed.
		assert.Check(t, is.Regexp(`kubectl-`+p+`\s+`+regexp.QuoteMeta(version)+`\s`, r.Stdout), r)
	}
	r := kubectl(t, user, "fleetdrain", "--help")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "kubectl fleetdrain [command]"), r)

	r = kubectl(t, user, "plugin", "list")
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, is.Contains(r.Stdout, filepath.Join(user.Tools.Plugins, "kubectl-"+p)+"\n"), r)
	}
}

// assertUninstall removes the three plugins with krew; kubectl no longer
// finds them.
func assertUninstall(t *testing.T, user harness.Command) {
	t.Helper()
	r := kubectl(t, user, append([]string{"krew", "uninstall"}, plugins...)...)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		r := kubectl(t, user, p, "version")
		assert.Check(t, r.ExitCode != 0, r)
		assert.Check(t, is.Contains(r.Stderr, `unknown command "`+p+`" for "kubectl"`), r)
		_, err := os.Lstat(filepath.Join(user.Tools.Plugins, "kubectl-"+p))
		assert.Check(t, os.IsNotExist(err), "krew removed kubectl-%s from its bin directory", p)
	}
	r = kubectl(t, user, "krew", "list")
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, !strings.Contains(r.Stdout, "/"+p+"\n"), r)
	}
}
