package redistest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Cluster starts a three-master Redis Cluster with scripts/redis-cluster.sh
// and returns its addresses; it is stopped when the test ends.
func Cluster(tb testing.TB) []string {
	tb.Helper()
	Binary(tb)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Skip("redis-cli is not installed")
	}
	script := filepath.Join(repoRoot(tb), "scripts", "redis-cluster.sh")
	dir := tb.TempDir()
	out, err := exec.Command("bash", script, "start", dir).CombinedOutput()
	if err != nil {
		exec.Command("bash", script, "stop", dir).Run()
		tb.Fatalf("%s start: %v\n%s", script, err, out)
	}
	tb.Cleanup(func() { exec.Command("bash", script, "stop", dir).Run() })
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ADDRS ") {
			return strings.Fields(line)[1:]
		}
	}
	tb.Fatalf("%s printed no ADDRS line:\n%s", script, out)
	return nil
}

func repoRoot(tb testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// ClusterCounts returns the keys matching pattern on every node of a
// cluster, each as key@node, and the count each holds.
func ClusterCounts(tb testing.TB, nodes []string, pattern string) (found []string, counts map[string]int64) {
	tb.Helper()
	counts = map[string]int64{}
	for _, addr := range nodes {
		node := Node(tb, addr)
		for _, k := range node.Keys(tb, pattern) {
			found = append(found, k+"@"+addr)
			counts[k] = node.StoredCount(tb, k)
		}
	}
	return found, counts
}
