package traefiktest

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// LayOutPlugin copies the plugin's sources from this checkout into
// dir/plugins-local/src/<Module>, as experimental.localPlugins reads them
// from Traefik's working directory: go.mod, .traefik.yml, shared/ and
// traefikplugin/, without tests, testdata or end-to-end tests.
func LayOutPlugin(tb testing.TB, dir string) {
	tb.Helper()
	root := e2etest.Root()
	dst := filepath.Join(dir, "plugins-local", "src", filepath.FromSlash(Module))
	for _, f := range []string{"go.mod", ".traefik.yml"} {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dst, f)); err != nil {
			tb.Fatalf("laying out the plugin: %v", err)
		}
	}
	for _, pkg := range []string{"shared", "traefikplugin"} {
		src := filepath.Join(root, pkg)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "e2e") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			return copyFile(path, filepath.Join(dst, rel))
		})
		if err != nil {
			tb.Fatalf("laying out the plugin: %v", err)
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
