package localfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead: a file is read whole exactly when it fits the bound.
func FuzzRead(f *testing.F) {
	f.Add([]byte("apiVersion: v1\n"), int64(15))
	f.Add([]byte("12345"), int64(4))
	f.Add([]byte{}, int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit < 0 {
			return
		}
		path := filepath.Join(dir, "file")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, info, err := Read(path, limit)
		if int64(len(data)) > limit {
			if err == nil {
				t.Fatalf("%d bytes read with a bound of %d", len(data), limit)
			}
			return
		}
		if err != nil || !bytes.Equal(got, data) || info.Size() != int64(len(data)) {
			t.Fatalf("a file of %d bytes, bound %d: %v", len(data), limit, err)
		}
	})
}
