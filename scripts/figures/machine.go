package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// thisMachine returns this machine's name: the first 12 characters of
// its machine-id (its hostname if it has none), then its CPU and cores,
// so that a reader of the docs knows what the times were measured on.
func thisMachine() string {
	id := ""
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		id = string(b[:min(12, len(b))])
	}
	if id == "" {
		id, _ = os.Hostname()
	}
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(bytes.NewReader(b))
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "model name") {
				fields := strings.Split(s.Text(), ":")
				model = strings.TrimLeft(fields[1], " ")
				break
			}
		}
	}
	if model == "" {
		if out, err := exec.Command("uname", "-m").Output(); err == nil {
			model = strings.TrimSpace(string(out))
		}
	}
	return fmt.Sprintf("%s: %s, %d cores", id, model, runtime.NumCPU())
}
