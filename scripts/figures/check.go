package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A figure is one published value: where its doc states it, and the
// command whose output prints it.
type figure struct {
	// kind is how the printed values are judged: exact, range, max,
	// abs:N or tol:N (see the package's doc), after an @ for an absolute
	// time, and followed by /SCALE when the printed values are divided
	// by SCALE first (ns to µs: /1000).
	kind string
	name string // what the table calls it: the doc's file and what the figure is
	tier tier
	doc  string // the file that states it, relative to the module's root
	// docRE's first group, at its first match in doc, is the doc's
	// value; outRE's first group, at each of its matches in the
	// command's output, is a printed value. Both are Go regular
	// expressions matched against the whole text, ^ and $ at each line;
	// a group's runs of white space read as one space.
	docRE string
	cmd   *cmd
	outRE string
	// split reads each printed value as several, separated by spaces
	// (a list the command prints on one line).
	split bool
	// quoted is a figure inside a block the doc quotes as one run
	// printed it, beside words that are no figure (a goal's "met"): a
	// rewrite leaves it, since the block would then say what no run
	// printed; the writer pastes a new run's block whole.
	quoted bool
}

// A checker runs the figures of one mode and keeps what they found.
type checker struct {
	mode    mode
	only    []string // -slow NAME...: only the slow figures of these commands
	work    string   // the directory of the commands' outputs
	temp    bool     // work is this run's own, removed at the end
	rewrite bool     // WL_FIGURES_REWRITE: times, rates and ratios into their docs

	here      string // this machine's name
	published string // the machine docs/benchmarks.md says the times are from
	timedRun  bool   // a time was checked (or rewritten)
	failed    bool
}

// machineRE finds the machine the docs' times are from in docs/benchmarks.md.
const machineRE = "published\\s+from\\s+machine\\s+`([^`]+)`"

// machineDoc is the doc that names the machine the times are from.
const machineDoc = "docs/benchmarks.md"

func newChecker(m mode, only []string, work string, rewrite bool) (*checker, error) {
	k := &checker{mode: m, only: only, work: work, rewrite: rewrite, here: thisMachine()}
	if work != "" {
		if err := os.MkdirAll(work, 0o755); err != nil {
			return nil, fmt.Errorf("the work directory: %w", err)
		}
	} else {
		dir, err := os.MkdirTemp("", "figures-")
		if err != nil {
			return nil, fmt.Errorf("the work directory: %w", err)
		}
		k.work, k.temp = dir, true
	}
	k.published = firstMatch(machineRE, readDoc(machineDoc))
	return k, nil
}

// close removes a work directory of the run's own.
func (k *checker) close() {
	if k.temp {
		os.RemoveAll(k.work)
		k.temp = false
	}
}

// check checks figs, printing the table to w, and reports whether every
// figure passed.
func (k *checker) check(w io.Writer, figs []figure) bool {
	if k.mode != modeFast {
		published := k.published
		if published == "" {
			published = "(none named)"
		}
		fmt.Fprintf(w, "times (@) published from machine %s; this is %s\n", published, k.here)
	}
	row(w, "figure", "doc", "printed", "verdict")
	for _, f := range figs {
		k.one(w, f)
	}
	// A run that rewrote the times names this machine as theirs.
	if k.rewrite && k.timedRun && k.here != k.published {
		if err := rewriteDoc(machineDoc, machineRE, k.here); err != nil {
			fmt.Fprintln(os.Stderr, err)
			k.failed = true
		}
		was := k.published
		if was == "" {
			was = "none"
		}
		fmt.Fprintf(w, "%s: times published from machine %s (were: %s)\n", machineDoc, k.here, was)
	}
	return !k.failed
}

// skips reports whether this run leaves f out: a figure of a tier the
// mode does not check, or of a command -slow did not name.
func (k *checker) skips(f figure) bool {
	if !k.mode.runs(f.tier) {
		return true
	}
	return k.mode == modeSlow && len(k.only) > 0 && !slices.Contains(k.only, f.cmd.base())
}

// list prints, for each figure the mode checks, its name, the doc's
// value, and the command it runs, tab-separated; nothing runs.
func (k *checker) list(w io.Writer, figs []figure) {
	for _, f := range figs {
		if k.skips(f) {
			continue
		}
		fmt.Fprintf(w, "%s (%s)\t%s\t%s\t%s\n", f.name, f.kind, firstMatch(f.docRE, readDoc(f.doc)), f.cmd.name, f.cmd)
	}
}

// one checks one figure and prints its row.
func (k *checker) one(w io.Writer, f figure) {
	name := f.name + " (" + f.kind + ")"
	kind, timed := strings.CutPrefix(f.kind, "@")
	kind, scaleText, _ := strings.Cut(kind, "/")
	want := firstMatch(f.docRE, readDoc(f.doc))
	if k.skips(f) {
		if k.mode != modeFull || k.mode.runs(f.tier) {
			return
		}
		// Listed, not run: a slow figure in the default mode.
		verdict := "not run (-slow)"
		if want == "" {
			verdict = "DIFFERS: not found in " + f.doc
			k.failed = true
		}
		if utf8.RuneCountInString(want) > 14 {
			row(w, name, "", "", verdict)
			fmt.Fprintf(w, "    doc:     %s\n", want)
		} else {
			row(w, name, want, "", verdict)
		}
		return
	}

	got := k.printed(f, scaleText)
	verdict, med := judge(kind, want, got)
	switch {
	case want == "":
		verdict = "DIFFERS: not found in " + f.doc
	case len(got) == 0:
		verdict = "DIFFERS: not printed by: " + f.cmd.String()
	}
	// WL_FIGURES_REWRITE=1: a time, rate or ratio becomes what this run
	// printed, whether or not it was within its tolerance, so that a
	// table is one run's.
	if k.rewrite && !f.quoted && strings.HasPrefix(kind, "tol:") && (verdict == "ok" || strings.HasPrefix(verdict, "DIFFERS (median")) &&
		plainNumberRE.MatchString(want) {
		if v := rewriteValue(med, want); v != want {
			if err := rewriteDoc(f.doc, f.docRE, v); err != nil {
				fmt.Fprintln(os.Stderr, err)
				k.failed = true
			} else {
				verdict = "rewritten: " + want + " -> " + v
			}
		}
	}
	// Another machine's time: shown, not checked (a figure the doc or
	// the command lacks is still a failure).
	if timed {
		k.timedRun = true
		if machineID(k.here) != machineID(k.published) && !k.rewrite &&
			(verdict == "ok" || strings.HasPrefix(verdict, "DIFFERS")) &&
			!strings.Contains(verdict, "not found") && !strings.Contains(verdict, "not printed") {
			verdict = "not checked: a time of another machine (" + machineID(k.published) + ")"
		}
	}
	if verdict != "ok" && !strings.HasPrefix(verdict, "rewritten") && !strings.HasPrefix(verdict, "not checked") {
		k.failed = true
	}

	shown := ""
	if len(got) > 0 {
		shown = got[0]
	}
	if unique := sortedUnique(got); len(unique) > 1 {
		sorted := slices.Clone(got)
		slices.SortStableFunc(sorted, compareGeneral)
		shown = sorted[0] + ".." + sorted[len(sorted)-1]
	}
	if utf8.RuneCountInString(want) > 14 || utf8.RuneCountInString(shown) > 14 {
		row(w, name, "", "", verdict)
		fmt.Fprintf(w, "    doc:     %s\n    printed: %s\n", want, strings.Join(sortedUnique(got), "|"))
	} else {
		row(w, name, want, shown, verdict)
	}
}

// printed returns the values f's command printed (running it if this
// run has not yet), divided by scale unless it is empty.
func (k *checker) printed(f figure, scale string) []string {
	out, ok := k.output(f.cmd)
	if !ok {
		k.failed = true
	}
	got := matches(f.outRE, string(out))
	if f.split {
		var each []string
		for _, v := range got {
			each = append(each, strings.Fields(v)...)
		}
		got = each
	}
	if scale != "" {
		by, _ := strconv.ParseFloat(scale, 64)
		for i, v := range got {
			first, _, _ := strings.Cut(strings.TrimSpace(v), " ")
			got[i] = strconv.FormatFloat(leadingNumber(first)/by, 'g', 4, 64)
		}
	}
	return got
}

// plainNumberRE is a doc's value that a rewrite may replace: one number,
// not a range.
var plainNumberRE = regexp.MustCompile(`^[0-9.,]+$`)

func row(w io.Writer, name, want, got, verdict string) {
	fmt.Fprintf(w, "%-66s %-14s %-14s %s\n", name, want, got, verdict)
}

// readDoc returns a doc's text, empty if it cannot be read (its figures
// are then not found).
func readDoc(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// machineID returns the first part of a machine's name, its id.
func machineID(name string) string {
	id, _, _ := strings.Cut(name, ":")
	return id
}
