// Command figures checks the figures README.md and docs/ publish against
// what their commands print today. Each figure is read from the doc's own
// text (so an edit of the doc is checked too), its command is run (once,
// however many figures it prints), and a table shows the doc's value, the
// printed one and the verdict:
//
//	exact   a count, bytes or a table row: the same text (commas ignored)
//	range   the doc gives a range from repeated runs ("4–12%", "0.914 to
//	        1.000") or the values a run may print ("0 or 5"): every printed
//	        value lies in it
//	max     a bound the doc gives ("within 0.11 s"): every printed value
//	        at most the doc's
//	abs:N   a count that moves between runs by a few (the interpreter's
//	        allocations): every printed value within N of the doc's, the
//	        N the doc states
//	tol:N%  a ratio, a rate or a time: the median of the printed values
//	        within N% of the doc's value, the tolerance the doc states
//
// A kind that starts with @ (@tol:25) is an absolute time, rate or CPU
// figure: it says what the machine it ran on is, not only what the code
// is. Such a figure is checked only on the machine the docs' times were
// published from, which docs/benchmarks.md names (-machine prints this
// machine's name); elsewhere its row says "not checked" and shows what
// this machine printed. Ratios of two figures of one run, counts and
// bytes are checked on every machine.
//
//	go run ./scripts/figures -fast      the deterministic counts only (under
//	                                    2 minutes): scripts/test.sh runs it
//	go run ./scripts/figures            those, the counts that vary between
//	                                    runs, the interpreter's tables and
//	                                    Redis's sizing, chaos and OOM
//	                                    figures (2.5 minutes once built):
//	                                    run it before publishing a figure;
//	                                    it lists the slow figures without
//	                                    running them
//	go run ./scripts/figures -slow [NAME...]
//	                                    the slow figures alone (of the
//	                                    commands NAME... only): the compiled
//	                                    benchmarks' times and the
//	                                    bench-*.sh scripts' tables (real
//	                                    Caddy and Traefik under wrk, the
//	                                    Redis script's costs and its
//	                                    callgrind counts; about 25 minutes
//	                                    once Caddy and Traefik are built)
//	go run ./scripts/figures -all       everything
//	go run ./scripts/figures -machine   this machine's name, as
//	                                    docs/benchmarks.md writes the
//	                                    machine its times are from
//	go run ./scripts/figures -list ...  what that mode would check and
//	                                    run, without running anything
//
// WL_FIGURES_REWRITE=1 writes every time, rate and ratio this run printed
// into its doc, and this machine's name into docs/benchmarks.md as the
// machine the times are from (docs/development.md says when).
// WL_FIGURES_WORK=DIR keeps the commands' outputs in DIR, and reuses an
// output already there (to work on a regex without running its command).
//
// Times, rates and ratios are checked against a tolerance the doc states
// for a quiet machine: on a machine busy with other work they differ, and
// say nothing of the code.
//
// It exits 1 if a figure differs or a command fails, 2 on a bad
// argument. Everything runs on loopback: the tests start their own
// redis-server processes.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/windowlimit/windowlimit/scripts/internal/command"
)

func main() {
	fast := flag.Bool("fast", false, "check the deterministic counts only")
	slow := flag.Bool("slow", false, "check the slow figures alone (of the commands named after the flags, if any)")
	all := flag.Bool("all", false, "check every figure")
	machine := flag.Bool("machine", false, "print this machine's name and exit")
	list := flag.Bool("list", false, "print what the mode would check and run, running nothing")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/figures [-list] [-fast | -slow [COMMAND...] | -all | -machine]")
		flag.PrintDefaults()
	}
	flag.Parse()

	m := modeFull
	n := 0
	for _, f := range []struct {
		set  bool
		mode mode
	}{{*fast, modeFast}, {*slow, modeSlow}, {*all, modeAll}} {
		if f.set {
			m = f.mode
			n++
		}
	}
	named := flag.NArg() > 0 && m == modeSlow
	for _, name := range flag.Args() {
		named = named && !strings.HasPrefix(name, "-")
	}
	if n > 1 || (flag.NArg() > 0 && !named) {
		flag.Usage()
		os.Exit(2)
	}
	if *machine {
		fmt.Println(thisMachine())
		return
	}
	root, err := command.ModuleRoot()
	if err != nil {
		fatal(err)
	}
	if err := os.Chdir(root); err != nil {
		fatal(err)
	}
	c, err := newChecker(m, flag.Args(), os.Getenv("WL_FIGURES_WORK"), os.Getenv("WL_FIGURES_REWRITE") != "")
	if err != nil {
		fatal(err)
	}
	defer c.close()
	if *list {
		c.list(os.Stdout, figures())
		return
	}
	if !c.check(os.Stdout, figures()) {
		c.close()
		os.Exit(1)
	}
}

// A mode is which tiers of figures a run checks.
type mode int

const (
	modeFull mode = iota // the fast and the full tiers; the slow one listed
	modeFast             // the fast tier
	modeSlow             // the slow tier
	modeAll              // every tier
)

// A tier is how long a figure's command takes, and so which modes run it.
type tier int

const (
	tierFast tier = iota // deterministic counts, in scripts/test.sh
	// tierFastFull is a count of a fast command that varies between
	// runs: the full modes check it beside the fast tier's.
	tierFastFull
	tierFull // ranges over runs, allocations, Go benchmarks of seconds
	tierSlow // benchmarks of minutes, real servers under wrk
)

// runs reports whether mode m checks the figures of tier t.
func (m mode) runs(t tier) bool {
	switch m {
	case modeFast:
		return t == tierFast
	case modeFull:
		return t != tierSlow
	case modeSlow:
		return t == tierSlow
	}
	return true
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "figures:", strings.TrimSpace(err.Error()))
	os.Exit(1)
}
