package doctest

import (
	"os/exec"
	"strings"
	"testing"
)

// wantPrefix starts a line of a shell block that shows what the commands
// before it print: RunShell checks that their output holds the rest.
const wantPrefix = "# -> "

// RunShell runs the commands of a shell block with bash (errexit and
// pipefail on), after replacing in them the addresses of the
// documentation with those of the test's servers, and fails t unless they
// succeed and their output holds the text of every "# -> <text>" line.
// It skips t when bash or curl is missing.
func RunShell(t *testing.T, b Block, addrs *strings.Replacer) {
	t.Helper()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%v: %s not found", b, tool)
		}
	}
	out, err := exec.Command("bash", "-e", "-o", "pipefail", "-c", addrs.Replace(b.Text)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", b, err, out)
	}
	for _, line := range strings.Split(b.Text, "\n") {
		if want, ok := strings.CutPrefix(strings.TrimSpace(line), wantPrefix); ok && !strings.Contains(string(out), want) {
			t.Errorf("%v: the output lacks %q:\n%s", b, want, out)
		}
	}
}
