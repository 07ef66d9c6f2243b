//go:build !windows

package caddymodule

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// persistSite is a real Caddy's config: sites on ports, each behind its
// rate_limit block, with warnings and errors logged to logFile.
func persistSite(logFile string, sites map[int]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin localhost:%d\n\tskip_install_trust\n\tlog {\n\t\toutput file %s\n\t\tlevel WARN\n\t}\n}\n", adminPort, logFile)
	for port, block := range sites {
		fmt.Fprintf(&b, ":%d {\n\t%s\n\trespond \"ok\"\n}\n", port, block)
	}
	return b.String()
}

// persistBlock is a rate_limit block of zone login keyed on key, of limit,
// persisted to dir (persist off when dir is "off").
func persistBlock(key string, limit int, dir string) string {
	p := "persist off"
	if dir != "off" {
		p = "persist {\n\t\t\tdirectory " + dir + "\n\t\t\tinterval 1s\n\t\t}"
	}
	return fmt.Sprintf("rate_limit {\n\t\tzone login {\n\t\t\tkey %s\n\t\t\twindow 1h\n\t\t\tlimit %d\n\t\t}\n\t\t%s\n\t}", key, limit, p)
}

// codes sends n requests to port and returns their statuses.
func codes(t *testing.T, tc *caddytest.Tester, port, n int) []int {
	t.Helper()
	var out []int
	for range n {
		resp, _ := get(t, tc, "http://127.0.0.1:"+strconv.Itoa(port)+"/")
		out = append(out, resp.StatusCode)
	}
	return out
}

func codesString(c []int) string { return fmt.Sprint(c) }

// stopZones loads a config without rate_limit: every zone is released
// for good, and saved a last time, as at a stop.
func stopZones(tc *caddytest.Tester, logFile string, port int) {
	tc.InitServer(persistSite(logFile, map[int]string{port: ""}), "caddyfile")
}

// TestIntegrationPersistForeignInstance: a second Caddy on a snapshot
// another process holds (a data directory shared by two instances) says
// so in one warning, restores nothing and saves nothing; once the owner
// is back alone, it gets its own counts back.
func TestIntegrationPersistForeignInstance(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	dir := filepath.Join(t.TempDir(), "snap")
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	site := persistSite(logFile, map[int]string{port: persistBlock("{remote_host}", 3, dir)})

	tc.InitServer(site, "caddyfile") // the owner, A
	if got := codesString(codes(t, tc, port, 4)); got != "[200 200 200 429]" {
		t.Fatalf("A: %s", got)
	}
	stopZones(tc, logFile, port)
	files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap"))
	if len(files) != 1 {
		t.Fatalf("snapshot files %v, want one", files)
	}
	saved, _ := os.ReadFile(files[0])

	// A runs again, on another host sharing the directory, holding its
	// snapshot; B, this Caddy, starts on the same directory.
	lock := files[0] + ".lock"
	if err := os.WriteFile(lock, []byte("host-of-a 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tc.InitServer(site, "caddyfile")
	if got := codesString(codes(t, tc, port, 1)); got != "[200]" {
		t.Errorf("B took A's counts: %s, want [200]", got)
	}
	time.Sleep(1500 * time.Millisecond) // an interval: B would save now
	stopZones(tc, logFile, port)
	if now, _ := os.ReadFile(files[0]); !bytes.Equal(now, saved) {
		t.Error("B wrote over A's snapshot")
	}
	if log, _ := os.ReadFile(logFile); bytes.Count(log, []byte("snapshot is held by another process")) != 1 {
		t.Errorf("want one warning that the snapshot is held, log:\n%s", log)
	}
	os.Remove(lock) // A stops

	tc.InitServer(site, "caddyfile") // A restarts alone
	if got := codesString(codes(t, tc, port, 1)); got != "[429]" {
		t.Errorf("A after its restart: %s, want [429]", got)
	}
	stopZones(tc, logFile, port)
}

// TestIntegrationPersistScope: a zone keyed on {client_ip} is not the
// zone keyed on {remote_host} of the same name, across a reload and a
// restart, even where both give the same string.
func TestIntegrationPersistScope(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	dir := filepath.Join(t.TempDir(), "snap")
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	host := persistSite(logFile, map[int]string{port: persistBlock("{remote_host}", 2, dir)})
	ip := persistSite(logFile, map[int]string{port: persistBlock("{client_ip}", 2, dir)})

	tc.InitServer(host, "caddyfile")
	if got := codesString(codes(t, tc, port, 3)); got != "[200 200 429]" {
		t.Fatalf("keyed on {remote_host}: %s", got)
	}
	tc.InitServer(ip, "caddyfile") // a reload
	if got := codesString(codes(t, tc, port, 1)); got != "[200]" {
		t.Errorf("after a reload to {client_ip}: %s, want [200]", got)
	}
	stopZones(tc, logFile, port)
	tc.InitServer(host, "caddyfile")
	if got := codesString(codes(t, tc, port, 1)); got != "[429]" {
		t.Errorf("{remote_host} restarted: %s, want [429]", got)
	}
	stopZones(tc, logFile, port)
	tc.InitServer(ip, "caddyfile") // a restart
	if got := codesString(codes(t, tc, port, 2)); got != "[200 429]" {
		t.Errorf("{client_ip} restarted: %s, want [200 429] (its own one request)", got)
	}
	stopZones(tc, logFile, port)
}

// TestIntegrationPersistTwoSites: two sites with a zone of one name and
// key and different limits share a snapshot file: Caddy says so in a
// warning, naming the zone.
func TestIntegrationPersistTwoSites(t *testing.T) {
	tc := newTester(t)
	a, b := freePort(t), freePort(t)
	dir := filepath.Join(t.TempDir(), "snap")
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	tc.InitServer(persistSite(logFile, map[int]string{a: persistBlock("{remote_host}", 5, dir), b: persistBlock("{remote_host}", 10, dir)}), "caddyfile")
	codes(t, tc, a, 1)
	stopZones(tc, logFile, a)
	log, _ := os.ReadFile(logFile)
	if bytes.Count(log, []byte("share one snapshot")) != 1 || !bytes.Contains(log, []byte(`"zone":"login"`)) {
		t.Errorf("want one warning naming zone login, log:\n%s", log)
	}
}

// TestIntegrationPersistOffKeepsCounts: a reload that turns persist off
// keeps the zone's counts in memory, and one that turns it back on keeps
// them too.
func TestIntegrationPersistOffKeepsCounts(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	dir := filepath.Join(t.TempDir(), "snap")
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	tc.InitServer(persistSite(logFile, map[int]string{port: persistBlock("{remote_host}", 3, dir)}), "caddyfile")
	if got := codesString(codes(t, tc, port, 2)); got != "[200 200]" {
		t.Fatal(got)
	}
	tc.InitServer(persistSite(logFile, map[int]string{port: persistBlock("{remote_host}", 3, "off")}), "caddyfile")
	if got := codesString(codes(t, tc, port, 2)); got != "[200 429]" {
		t.Errorf("after persist off: %s, want [200 429]", got)
	}
	tc.InitServer(persistSite(logFile, map[int]string{port: persistBlock("{remote_host}", 3, dir)}), "caddyfile")
	if got := codesString(codes(t, tc, port, 1)); got != "[429]" {
		t.Errorf("after persist on again: %s, want [429]", got)
	}
	stopZones(tc, logFile, port)
}

// TestIntegrationPersistFIFO: a FIFO at the snapshot path does not hang
// Caddy's start: the zone starts empty and Caddy serves.
func TestIntegrationPersistFIFO(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	dir := filepath.Join(t.TempDir(), "snap")
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	site := persistSite(logFile, map[int]string{port: persistBlock("{remote_host}", 3, dir)})
	tc.InitServer(site, "caddyfile")
	codes(t, tc, port, 3)
	stopZones(tc, logFile, port)
	files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap"))
	if len(files) != 1 {
		t.Fatalf("snapshot files %v, want one", files)
	}
	os.Remove(files[0])
	if err := syscall.Mkfifo(files[0], 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); tc.InitServer(site, "caddyfile") }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Caddy's start still blocked on a FIFO at the snapshot path after 30s")
	}
	if got := codesString(codes(t, tc, port, 1)); got != "[200]" {
		t.Errorf("after a FIFO: %s, want [200]", got)
	}
	stopZones(tc, logFile, port)
}
