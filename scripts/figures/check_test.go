package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkOne checks f on a checker of mode m whose work directory holds
// out as the output of f's command, and returns the table's row and
// whether the run failed.
func checkOne(t *testing.T, k *checker, f figure, out string) (row string, failed bool) {
	t.Helper()
	if k.work == "" {
		k.work = t.TempDir()
	}
	if out != "" {
		if err := os.WriteFile(filepath.Join(k.work, f.cmd.name+".out"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	k.one(&b, f)
	return b.String(), k.failed
}

// doc writes a doc holding text and returns its path.
func doc(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// never is a command that fails the test if it runs.
var never = &cmd{name: "never", args: []string{"false"}}

func TestCheckerTimesOfAnotherMachine(t *testing.T) {
	d := doc(t, "a call costs 100 µs\n")
	f := figure{kind: "@tol:25", name: "a call", doc: d, docRE: `costs (\d+) µs`, cmd: &cmd{name: "bench"}, outRE: `^call (\d+) µs`}
	here, there := "aaaa: a CPU, 2 cores", "bbbb: a CPU, 2 cores"

	row, failed := checkOne(t, &checker{mode: modeAll, here: here, published: there}, f, "call 200 µs\n")
	if failed || !strings.Contains(row, "not checked: a time of another machine (bbbb)") {
		t.Errorf("another machine's time: failed %v, row %q", failed, row)
	}
	row, failed = checkOne(t, &checker{mode: modeAll, here: here, published: here}, f, "call 200 µs\n")
	if !failed || !strings.Contains(row, "DIFFERS (median 200)") {
		t.Errorf("this machine's time: failed %v, row %q", failed, row)
	}
	// A figure the doc lacks fails on any machine.
	f.docRE = `costs (\d+) ns`
	row, failed = checkOne(t, &checker{mode: modeAll, here: here, published: there}, f, "call 200 µs\n")
	if !failed || !strings.Contains(row, "DIFFERS: not found in "+d) {
		t.Errorf("a time the doc lacks: failed %v, row %q", failed, row)
	}
}

func TestCheckerListsSlowFiguresInTheDefaultMode(t *testing.T) {
	f := figure{kind: "exact", name: "keys", tier: tierSlow, doc: doc(t, "holds 12 keys\n"), docRE: `holds (\d+) keys`, cmd: never, outRE: `(\d+)`}
	k := &checker{mode: modeFull}
	row, failed := checkOne(t, k, f, "")
	if failed || !strings.Contains(row, "not run (-slow)") {
		t.Errorf("failed %v, row %q", failed, row)
	}
	if _, err := os.Stat(filepath.Join(k.work, "never.out")); err == nil {
		t.Error("the slow figure's command ran")
	}
	// -fast leaves it out altogether; -slow runs it.
	if row, _ := checkOne(t, &checker{mode: modeFast}, f, ""); row != "" {
		t.Errorf("-fast printed %q", row)
	}
	if row, failed := checkOne(t, &checker{mode: modeSlow}, f, "12\n"); failed || !strings.HasSuffix(row, " ok\n") {
		t.Errorf("-slow: failed %v, row %q", failed, row)
	}
	// -slow NAME: only the figures of NAME's command.
	if row, _ := checkOne(t, &checker{mode: modeSlow, only: []string{"other"}}, f, "12\n"); row != "" {
		t.Errorf("-slow other printed %q", row)
	}
}

func TestCheckerRewritesTimes(t *testing.T) {
	d := doc(t, "serves 1,000 req/s and 0.50 of plain\n")
	k := &checker{mode: modeAll, rewrite: true}
	rate := figure{kind: "@tol:25", name: "rate", doc: d, docRE: `serves ([\d,]+) req/s`, cmd: &cmd{name: "bench"}, outRE: `^(\S+) req/s`}
	row, failed := checkOne(t, k, rate, "2000 req/s\n2345.6 req/s\n1500 req/s\n")
	if failed || !strings.Contains(row, "rewritten: 1,000 -> 2,000") {
		t.Errorf("failed %v, row %q", failed, row)
	}
	ratio := figure{kind: "tol:5", name: "ratio", doc: d, docRE: `and (\S+) of plain`, cmd: &cmd{name: "bench"}, outRE: `^(\d+) req/s`}
	if row, _ := checkOne(t, k, ratio, "1 req/s\n"); !strings.Contains(row, "rewritten: 0.50 -> 1.00") {
		t.Errorf("row %q", row)
	}
	if b, _ := os.ReadFile(d); string(b) != "serves 2,000 req/s and 1.00 of plain\n" {
		t.Errorf("the doc after the rewrite: %q", b)
	}
	if !k.timedRun {
		t.Error("a time was rewritten, but the run does not say so")
	}
	// A figure of a quoted block stays: its verdict words would not follow.
	q := doc(t, "1. ratio  0.90   goal >= 0.85 met\n")
	quoted := figure{kind: "tol:5", name: "summary", doc: q, docRE: `ratio\s+(\S+)\s+goal`, cmd: &cmd{name: "bench"}, outRE: `^ratio (\S+)`, quoted: true}
	if row, failed := checkOne(t, k, quoted, "ratio 0.70\n"); !failed || strings.Contains(row, "rewritten") {
		t.Errorf("a quoted figure that differs: failed %v, row %q", failed, row)
	}
	if b, _ := os.ReadFile(q); string(b) != "1. ratio  0.90   goal >= 0.85 met\n" {
		t.Errorf("the quoted block after the rewrite: %q", b)
	}
}

func TestCheckerSplitsAList(t *testing.T) {
	f := figure{kind: "range", name: "rounds", doc: doc(t, "ranged from 0.98 to 1.02\n"), docRE: `from (\S+ to \S+)`, cmd: &cmd{name: "bench"},
		outRE: `each round:([\d. ]*)\)`, split: true}
	row, failed := checkOne(t, &checker{mode: modeAll}, f, "ratio 1.00 (each round: 0.99 1.01 1.02)\n")
	if failed || !strings.Contains(row, "0.99..1.02") {
		t.Errorf("failed %v, row %q", failed, row)
	}
	row, failed = checkOne(t, &checker{mode: modeAll}, f, "ratio 1.00 (each round: 0.99 1.01 1.03)\n")
	if !failed || !strings.Contains(row, "0.99..1.03") || !strings.Contains(row, "DIFFERS") {
		t.Errorf("failed %v, row %q", failed, row)
	}
}

// TestEveryFigureIsInItsDoc reads every figure's value from its doc,
// slow ones too, and compiles every regular expression, so that an edit
// of a doc or of a figure is caught without running its command.
func TestEveryFigureIsInItsDoc(t *testing.T) {
	t.Chdir("../..")
	names := map[string]bool{}
	for _, f := range figures() {
		name := f.name + " (" + f.kind + ")"
		if names[name] {
			t.Errorf("%s: two figures of this name", name)
		}
		names[name] = true
		if firstMatch(f.docRE, readDoc(f.doc)) == "" {
			t.Errorf("%s: not found in %s", name, f.doc)
		}
		if _, err := regexp.Compile("(?m)" + f.outRE); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !regexp.MustCompile(`^@?(exact|range|max|abs:\d+|tol:\d+)(/[\d.]+)?$`).MatchString(f.kind) {
			t.Errorf("%s: kind %q", name, f.kind)
		}
	}
}
