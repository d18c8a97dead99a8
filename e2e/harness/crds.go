package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
)

// CAPIModule is the upstream module the Cluster API CRDs come from, pinned (the OCM ones
// come from OCMComponents, the release the test bed runs).
const CAPIModule = "sigs.k8s.io/cluster-api@v1.14.2"

// OCMHubCRDs are the CRDs an OCM hub serves, relative to OCMComponents
// (the folder also holds templates: only *.crd.yaml are CRDs).
const OCMHubCRDs = "manifests/cluster-manager/hub/*.crd.yaml"

// ModuleGlob returns the files inside a Go module version that match a glob.
func ModuleGlob(ctx context.Context, module, pattern string) ([]string, error) {
	dir, err := ModuleFiles(ctx, module, []string{""})
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir[0], pattern))
	if err == nil && len(paths) == 0 {
		err = fmt.Errorf("no files match %s in %s", pattern, module)
	}
	return paths, err
}

// ModuleFiles returns the paths of files inside a Go module version, fetched
// through the module proxy (or the local module cache).
func ModuleFiles(ctx context.Context, module string, rel []string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	// Outside any module, so the project's go.mod does not constrain it.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go mod download %s: %w", module, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("go mod download %s: %w", module, err)
	}
	if info.Error != "" {
		return nil, fmt.Errorf("go mod download %s: %s", module, info.Error)
	}
	paths := make([]string, len(rel))
	for i, r := range rel {
		paths[i] = filepath.Join(info.Dir, r)
	}
	return paths, nil
}

// RepoRoot is the root of the spokekit checkout the tests run in.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/spokekit/spokekit\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the spokekit repository")
		}
		dir = parent
	}
}

// FleetConfigCRDs returns the Spoke and Hub CRDs to install: the upstream
// ones from ../shared/crds beside the checkout when that folder exists (so
// the tests prove the plugins' objects pass the real schema), else the ones
// the project generates from internal/api.
func FleetConfigCRDs() ([]string, string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, "", err
	}
	names := []string{"fleetconfig.open-cluster-management.io_spokes.yaml", "fleetconfig.open-cluster-management.io_hubs.yaml"}
	dir := filepath.Join(root, "..", "shared", "crds")
	source := "upstream"
	if os.Getenv("SPOKEKIT_E2E_GENERATED_CRDS") != "" {
		dir = ""
	}
	if _, err := os.Stat(filepath.Join(dir, names[0])); dir == "" || err != nil {
		dir = filepath.Join(root, "internal", "api", "crds")
		source = "generated"
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
	}
	return paths, source, nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs applies the CRDs in files (server-side, so it can run again)
// and waits until each one is Established.
func (c *Cluster) InstallCRDs(ctx context.Context, files ...string) error {
	var names []string
	for _, f := range files {
		objs, err := readYAMLObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			data, err := json.Marshal(o.Object)
			if err != nil {
				return err
			}
			force := true
			if _, err := c.Dynamic.Resource(crdGVR).Patch(ctx, o.GetName(), types.ApplyPatchType, data,
				metav1.PatchOptions{FieldManager: "spokekit-e2e", Force: &force}); err != nil {
				return fmt.Errorf("installing CRD %s from %s into %s: %w", o.GetName(), f, c.Name, err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, n := range names {
		if err := c.waitEstablished(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitEstablished(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := c.Dynamic.Resource(crdGVR).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return fmt.Errorf("watching CRD %s: %w", name, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			continue
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
	}
	return fmt.Errorf("CRD %s in %s was not Established within a minute", name, c.Name)
}

// readYAMLObjects reads every object of a multi-document YAML file.
func readYAMLObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only: closing loses nothing
	objs, err := decodeYAMLObjects(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return objs, nil
}

// decodeYAMLObjects reads every object of a multi-document YAML stream.
func decodeYAMLObjects(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// ApplyYAML server-side applies every object in a YAML string to the cluster.
func (c *Cluster) ApplyYAML(ctx context.Context, manifest string) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("parsing manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		if err := c.Apply(ctx, &unstructured.Unstructured{Object: m}); err != nil {
			return err
		}
	}
}
