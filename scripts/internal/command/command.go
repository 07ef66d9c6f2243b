// Package command holds what the checking programs under scripts/ share
// about the commands they run: the module's root they run in, a command
// line as a reader would type it, and the end of an output that failed.
package command

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleRoot returns the directory of the go.mod of the module this
// program runs in, so that its paths hold from any directory inside it.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run it inside the windowlimit module (go run ./scripts/...)")
	}
	return filepath.Dir(mod), nil
}

// Join returns args as a shell command line, each argument that the shell
// would read otherwise in single quotes.
func Join(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if strings.ContainsAny(a, "^$|()* '\\") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// Tail returns the last n lines of out, to show why a command failed.
func Tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
