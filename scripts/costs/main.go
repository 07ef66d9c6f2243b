// Command costs checks windowlimit's deterministic costs against their
// record, docs/costs.md, and fails when one grew.
//
//	go run ./scripts/costs           measure, compare, print the table
//	go run ./scripts/costs -record   measure, and write into docs/costs.md the
//	                                  figures that moved past their tolerance
//	go run ./scripts/costs -record -all   write every figure as measured
//
// The costs are counts that the machine's speed and load do not move: the
// interpreter's allocations a request of each configuration of the yaegi
// harness (scripts/yaegitest, memory and Redis paths), the compiled
// allocations of a decision, the script calls and Redis commands a
// decision of each of the script's modes, and the bytes of a busy key
// (shared/redisstore's TestScriptCosts, against a redis-server it starts
// on a free port). Each source is a go test command, run once, but the
// yaegi harness's benchmarks, each run in a process of its own (see
// measureApart); its figures are read from what it prints.
//
// A figure fails when it grew past its record by more than its tolerance:
// 5% of the record, or less where the record's row says so (3 or 5 of
// the interpreter's allocations). One that fell by as much is no failure but
// says "record it": the record then allows more than the code needs,
// which -record closes. A figure measured but not recorded, or recorded
// but not measured, fails: the record must name what is measured.
// scripts/test.sh runs the check.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/scripts/internal/command"
)

// maxGrowth is the most a figure may grow past its record, as a fraction.
const maxGrowth = 0.05

// recordFile is the record, relative to the module's root.
const recordFile = "docs/costs.md"

// A source is one command that prints figures.
type source struct {
	title string // the record's section
	about string // what the section's figures are, for the record
	dir   string // where cmd runs, relative to the module's root
	cmd   []string
	// apart, for a go test -bench command, runs each benchmark it
	// names in a process of its own, from one test binary (see
	// measureApart).
	apart bool
	// figures reads the command's output.
	figures func(out []byte) []figure
	// tol is how far a figure may move between runs of the same code,
	// as the record writes it ("2%", or "±2" for a count), empty for one
	// that does not move; the check allows the lesser of it and
	// maxGrowth. tolOf, when set, gives a figure's instead.
	tol   string
	tolOf func(name string) string
}

// A figure is one cost: its name, unique in the record, and its value.
// A skipped figure stands for the recorded ones whose names start with
// its name, which its command could not measure here (skipped says why).
type figure struct {
	name    string
	value   float64
	skipped string
}

var sources = []source{
	{
		title: "Interpreted allocations a request (Traefik's yaegi)",
		about: "The interpreter's allocations a request, each configuration of the yaegi harness: `allocs/op` " +
			"of `BenchmarkPluginConfigs` (in-memory configurations, one client, allowed), " +
			"`BenchmarkPluginInterpreted` (many clients, a denial) and `BenchmarkRedisLayersInterpreted` " +
			"(the Redis path, layer by layer, against a fake Redis), each configuration in a process of its " +
			"own. In one process for all, a configuration's count also holds what the middlewares built " +
			"before it allocate meanwhile, which grows with the time a run takes: on a busy 2-core machine " +
			"the last configurations moved by up to 4.6% (overrides 505 to 528), and by none alone. " +
			"Each in its own process, they printed the same counts in every run here but two (`overrides` " +
			"509 once with GOMAXPROCS=1, then 505 in eight runs; `PluginInterpreted/allowed-headers-none` " +
			"506 once, 354 in every other run), so each may grow by what benchmarks.md states its " +
			"table's allocations move by, 5 for `PluginConfigs` and 3 for the others, and one that grew " +
			"more runs once more, the lesser count standing. The two rows of 1,000 keys with a lease " +
			"setting are the exception: whether a key's requests fall in one sub-window, and so whether " +
			"it asks for a lease, depends on how fast the run goes, and on unchanged code they moved " +
			"by up to 4% with the machine's load (693 to 722 once, 575 to 579 since), so they may grow " +
			"by 5%.",
		dir:     "scripts/yaegitest",
		cmd:     []string{"go", "test", "-run", "^$", "-bench", "^Benchmark(PluginConfigs|PluginInterpreted|RedisLayersInterpreted)$", "-benchtime", "2000x", "."},
		apart:   true,
		figures: benchAllocs("interpreted allocations, "),
		tolOf: func(name string) string {
			if strings.Contains(name, "PluginConfigs/") {
				return "±5"
			}
			if strings.Contains(name, "-keys-lease-") {
				return "5%" // timed by the run's speed (see about)
			}
			return "±3"
		},
	},
	{
		title:   "Compiled allocations a decision",
		about:   "`allocs/op` of the in-memory zone's decision (`shared/ratelimit`'s benchmarks).",
		cmd:     []string{"go", "test", "-count=1", "-run", "^$", "-bench", "^Benchmark(TakeHotKey|TakeDenied|TakeLog|TakeAllThreeRules)$", "-benchtime", "20000x", "-benchmem", "./shared/ratelimit"},
		figures: benchAllocs("compiled allocations, "),
	},
	{
		title: "The Redis script, a decision of each mode",
		about: "What each of the script's modes costs Redis, the mean of 50 decisions through " +
			"`redisstore.Store` against a redis-server of its own: script calls and the commands the " +
			"script runs (INFO commandstats before and after; the command's output names them), " +
			"a decision's Go allocations through shared/resp (`testing.AllocsPerRun`), MEMORY USAGE " +
			"of the busy IPv4 key of `scripts/bench-redis.sh` (50 requests in each of 11 sub-windows), " +
			"and the instructions a decision takes in Redis's `evalShaCommand` (the script and the " +
			"commands it calls) in a redis-server under valgrind's callgrind, the mean of 400 decisions, " +
			"within 3%: where the Lua collector's steps fall moves them, by up to 1% between runs here " +
			"(4% for means of 50). Without valgrind (`apt-get install valgrind`; scripts/test.sh " +
			"installs it) the check says it skipped those, and `-record` keeps their record. " +
			"The in-flight slots script (`slots.lua`) is measured the same way, a call of " +
			"`redisstore.Slots` at a time (\"a slots call\"): each mode on sets of slots taken " +
			"beforehand, so that every call finds its set as the one before it did.",
		cmd:     []string{"go", "test", "-count=1", "-run", "^TestScriptCosts$", "-v", "./shared/redisstore"},
		figures: costLines,
		tolOf: func(name string) string {
			if strings.HasPrefix(name, "callgrind ") {
				return "3%"
			}
			return "5%"
		},
	},
}

// tolerance returns the tolerance of s's figure name, as the record
// writes it.
func (s source) tolerance(name string) string {
	if s.tolOf != nil {
		return s.tolOf(name)
	}
	if s.tol == "" {
		return num(maxGrowth*100) + "%"
	}
	return s.tol
}

// benchRE matches a benchmark's result line: its name and its
// allocs/op. A denied request's log line may come between the two.
var benchRE = regexp.MustCompile(`(?ms)^Benchmark(\S+)\s.*?\s(\d+) allocs/op`)

// procSuffix is what go test appends to a benchmark's name: -GOMAXPROCS,
// unless it is 1. The commands run here inherit this process's.
func procSuffix() string {
	if n := runtime.GOMAXPROCS(0); n != 1 {
		return "-" + strconv.Itoa(n)
	}
	return ""
}

// benchAllocs returns a reader of go test -bench's allocs/op, naming each
// figure prefix and the benchmark's name. Of a benchmark run more than
// once (-count), it keeps the least.
func benchAllocs(prefix string) func([]byte) []figure {
	return func(out []byte) []figure {
		var fs []figure
		at := make(map[string]int)
		for _, m := range benchRE.FindAllSubmatch(out, -1) {
			name := prefix + strings.TrimSuffix(string(m[1]), procSuffix())
			v, _ := strconv.ParseFloat(string(m[2]), 64)
			if i, ok := at[name]; ok {
				fs[i].value = math.Min(fs[i].value, v)
				continue
			}
			at[name] = len(fs)
			fs = append(fs, figure{name: name, value: v})
		}
		return fs
	}
}

// costRE matches TestScriptCosts's lines: "cost: NAME = VALUE (more)",
// or "cost: NAME = skipped (why)".
var costRE = regexp.MustCompile(`(?m)^\s*\S+_test\.go:\d+: cost: (.+?) = (skipped.*|[0-9.]+)`)

// costLines reads the figures of the lines costRE matches.
func costLines(out []byte) []figure {
	var fs []figure
	for _, m := range costRE.FindAllSubmatch(out, -1) {
		if why, ok := strings.CutPrefix(string(m[2]), "skipped"); ok {
			fs = append(fs, figure{name: string(m[1]), skipped: strings.Trim(why, " ()")})
			continue
		}
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		fs = append(fs, figure{name: string(m[1]), value: v})
	}
	return fs
}

// A record is one row of the record: the value and how far it may move,
// a count (slack) or a fraction of value (rel).
type record struct {
	value, slack, rel float64
}

func main() {
	rec := flag.Bool("record", false, "write into "+recordFile+" the measured figures that moved past their tolerance, instead of checking them")
	all := flag.Bool("all", false, "with -record, write every measured figure, also those within their tolerance")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./scripts/costs [-record [-all]]\n\n"+
			"Measures the deterministic costs and compares them with %s:\n"+
			"fails when one grew past its record's tolerance.\n\n", recordFile)
		flag.PrintDefaults()
	}
	flag.Parse()
	root, err := command.ModuleRoot()
	if err != nil {
		fatal(err)
	}
	start := time.Now()
	path := filepath.Join(root, recordFile)
	// The record, if it reads, tells measure which figures grew.
	var records map[string]record
	if text, err := os.ReadFile(path); err == nil {
		records, _ = parse(text)
	}
	measured := make([][]figure, len(sources))
	for i, s := range sources {
		if measured[i], err = measure(root, s, records); err != nil {
			fatal(err)
		}
	}
	if *rec {
		if err := keepSkipped(path, measured); err != nil {
			fatal(err)
		}
		if !*all {
			keepWithin(measured, records)
		}
		if err := os.WriteFile(path, render(measured), 0o644); err != nil {
			fatal(err)
		}
		fmt.Printf("costs: recorded %d figures in %s (%s)\n", count(measured), recordFile, time.Since(start).Round(time.Second))
		return
	}
	text, err := os.ReadFile(path)
	if err != nil {
		fatal(fmt.Errorf("read the record: %w (go run ./scripts/costs -record writes it)", err))
	}
	records, err = parse(text)
	if err != nil {
		fatal(fmt.Errorf("%s: %w", recordFile, err))
	}
	if failed := check(os.Stdout, measured, records); failed > 0 {
		fmt.Printf("\ncosts: FAILED, %d of the figures differ from %s; a cost that grew on purpose is recorded with `go run ./scripts/costs -record` in the same commit (%s)\n",
			failed, recordFile, time.Since(start).Round(time.Second))
		os.Exit(1)
	}
	fmt.Printf("\ncosts: passed, %d figures within their record (%s)\n", count(measured), time.Since(start).Round(time.Second))
}

// measure runs s's command and reads its figures. Of a source run
// apart, a benchmark whose figure grew past its record in records is run
// a second time, and the lesser count kept (see measureApart).
func measure(root string, s source, records map[string]record) ([]figure, error) {
	dir := filepath.Join(root, s.dir)
	var out []byte
	var err error
	if s.apart {
		grew := func(out []byte) bool {
			for _, f := range s.figures(out) {
				if r, ok := records[f.name]; ok && f.value-r.value > r.tolerance()+1e-9 {
					return true
				}
			}
			return false
		}
		out, err = measureApart(dir, s.cmd, grew)
	} else {
		out, err = run(dir, s.cmd[0], s.cmd[1:]...)
	}
	if err != nil {
		return nil, err
	}
	fs := s.figures(out)
	if len(fs) == 0 {
		return nil, fmt.Errorf("%s printed no figure:\n%s", strings.Join(s.cmd, " "), command.Tail(out, 30))
	}
	return fs, nil
}

// keepSkipped puts in measured, in place of each skipped figure, the
// figures of the record at path that it stands for, so that -record on a
// machine without what measures them keeps them.
func keepSkipped(path string, measured [][]figure) error {
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var names []string
	rows := make(map[string]float64)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		if m := rowRE.FindStringSubmatch(sc.Text()); m != nil {
			names = append(names, m[1])
			rows[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
	}
	for i, fs := range measured {
		var kept []figure
		for _, f := range fs {
			if f.skipped == "" {
				kept = append(kept, f)
				continue
			}
			for _, name := range names {
				if strings.HasPrefix(name, f.name) {
					kept = append(kept, figure{name: name, value: rows[name]})
				}
			}
		}
		measured[i] = kept
	}
	return sc.Err()
}

// keepWithin puts back, in measured, the recorded value of each figure
// that is within its record's tolerance, so that -record rewrites only
// the figures a change moved and not those a run's noise did.
func keepWithin(measured [][]figure, records map[string]record) {
	for _, fs := range measured {
		for i, f := range fs {
			r, ok := records[f.name]
			if ok && f.skipped == "" && math.Abs(f.value-r.value) <= r.tolerance()+1e-9 {
				fs[i].value = r.value
			}
		}
	}
}

// run runs name with args in dir and returns its output.
func run(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s (in %s): %w\n%s", name, strings.Join(args, " "), dir, err, command.Tail(out, 30))
	}
	return out, nil
}

// measureApart runs the benchmarks of the go test command cmd (go test
// -run ^$ -bench REGEX -benchtime N PKG) each in a process of its own,
// and returns their outputs, one after the other. It builds the test
// binary once, lists the benchmarks by running each once (-benchtime
// 1x), then runs each alone. A benchmark of the yaegi harness then
// counts no allocation of the middlewares that those before it built.
// One whose output grew reports runs once more, and the lesser count
// stands: one run of PluginInterpreted/allowed-headers-none printed 506
// allocations against 354 in every other, while a cost that grew is
// still there the second time.
func measureApart(dir string, cmd []string, grew func(out []byte) bool) ([]byte, error) {
	var bench, benchtime, pkg string
	for i := 2; i < len(cmd); i++ {
		switch cmd[i] {
		case "-bench":
			i++
			bench = cmd[i]
		case "-benchtime":
			i++
			benchtime = cmd[i]
		case "-run":
			i++
		default:
			pkg = cmd[i]
		}
	}
	tmp, err := os.MkdirTemp("", "costs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bench.test")
	if _, err := run(dir, "go", "test", "-c", "-o", bin, pkg); err != nil {
		return nil, err
	}
	// -test.cpu as go test would set it, so that each name ends in
	// procSuffix.
	cpu := strconv.Itoa(runtime.GOMAXPROCS(0))
	list, err := run(dir, bin, "-test.run", "^$", "-test.bench", bench, "-test.benchtime", "1x", "-test.cpu", cpu)
	if err != nil {
		return nil, err
	}
	var all []byte
	for _, m := range benchName.FindAllSubmatch(list, -1) {
		name := "Benchmark" + strings.TrimSuffix(string(m[1]), procSuffix())
		parts := strings.Split(name, "/")
		for i, p := range parts {
			parts[i] = "^" + regexp.QuoteMeta(p) + "$"
		}
		args := []string{"-test.run", "^$", "-test.bench", strings.Join(parts, "/"),
			"-test.benchtime", benchtime, "-test.cpu", cpu, "-test.benchmem"}
		out, err := run(dir, bin, args...)
		if err != nil {
			return nil, err
		}
		all = append(all, out...)
		if grew(out) {
			fmt.Fprintf(os.Stderr, "costs: %s grew past its record: once more\n", name)
			if out, err = run(dir, bin, args...); err != nil {
				return nil, err
			}
			all = append(all, out...)
		}
	}
	return all, nil
}

// benchName matches the name of a benchmark that ran to its end.
var benchName = regexp.MustCompile(`(?m)^Benchmark(\S+)\s+\d+\s`)

// check prints the table of measured against records and returns how
// many figures failed.
func check(w *os.File, measured [][]figure, records map[string]record) (failed int) {
	row := func(a, b, c, d string) { fmt.Fprintf(w, "%-86s %9s %9s  %s\n", a, b, c, d) }
	row("figure", "recorded", "measured", "verdict")
	seen := make(map[string]bool)
	var stale []string
	skipped := make(map[string]string)
	for _, fs := range measured {
		for _, f := range fs {
			if f.skipped != "" {
				skipped[f.name] = f.skipped
				continue
			}
			seen[f.name] = true
			r, ok := records[f.name]
			if !ok {
				row(f.name, "-", num(f.value), "FAILED: not recorded (record it)")
				failed++
				continue
			}
			verdict := "ok"
			tol := r.tolerance()
			switch d := f.value - r.value; {
			case d > tol+1e-9:
				verdict = fmt.Sprintf("FAILED: grew %s (%s), more than %s", signed(d), percent(d, r.value), num(tol))
				failed++
			case -d > tol+1e-9:
				verdict = fmt.Sprintf("fell %s (%s): record it", signed(d), percent(d, r.value))
				stale = append(stale, f.name)
			}
			row(f.name, num(r.value), num(f.value), verdict)
		}
	}
	var unseen []string
	for name := range records {
		if !seen[name] {
			unseen = append(unseen, name)
		}
	}
	slices.Sort(unseen)
next:
	for _, name := range unseen {
		for prefix, why := range skipped {
			if strings.HasPrefix(name, prefix) {
				row(name, num(records[name].value), "-", "not measured here: "+why)
				continue next
			}
		}
		row(name, num(records[name].value), "-", "FAILED: recorded but not measured (record again)")
		failed++
	}
	if len(stale) > 0 {
		fmt.Fprintf(w, "\ncosts: %d figures fell below their record; `go run ./scripts/costs -record` records them, so that the check holds the gain\n", len(stale))
	}
	return failed
}

// tolerance returns how much the figure may move past r: its slack or
// its fraction, but never more than maxGrowth. The check compares with a
// margin of 1e-9, so that a figure at its bound, a mean of a few calls,
// does not fail by rounding.
func (r record) tolerance() float64 {
	return math.Min(math.Min(r.slack, r.rel*r.value), maxGrowth*r.value)
}

// The record's table rows: | figure | recorded | tolerance |, the
// tolerance a count (±3) or a percentage (2%).
var rowRE = regexp.MustCompile(`^\| (.+?) \| ([0-9.]+) \| (?:±([0-9.]+)|([0-9.]+)%) \|$`)

// parse reads the record's rows.
func parse(text []byte) (map[string]record, error) {
	records := make(map[string]record)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| figure |") || strings.HasPrefix(line, "| ---") {
			continue
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d is no row of a figure: %q", n, line)
		}
		r := record{slack: math.Inf(1), rel: math.Inf(1)}
		r.value, _ = strconv.ParseFloat(m[2], 64)
		if m[3] != "" {
			r.slack, _ = strconv.ParseFloat(m[3], 64)
		} else {
			pct, _ := strconv.ParseFloat(m[4], 64)
			r.rel = pct / 100
		}
		if _, dup := records[m[1]]; dup {
			return nil, fmt.Errorf("line %d records %q twice", n, m[1])
		}
		records[m[1]] = r
	}
	if len(records) == 0 {
		return nil, errors.New("no figure recorded")
	}
	return records, sc.Err()
}

// render returns the record of measured.
func render(measured [][]figure) []byte {
	var b bytes.Buffer
	b.WriteString("# Costs\n\n")
	b.WriteString(wrap("The deterministic costs of windowlimit: counts that do not depend on the machine's " +
		"speed or load, so that a change that makes one grow shows in any run. `go run ./scripts/costs` " +
		"measures each, compares it with this record and fails when one grew by more than its tolerance " +
		"(5%, or less where a row's tolerance says so); `scripts/test.sh` runs it. A cost that fell by as " +
		"much says \"record it\". After a change that moves a cost on purpose, `go run ./scripts/costs " +
		"-record` writes into this file the figures that moved past their tolerance (`-record -all`: every " +
		"figure as measured): commit it with the change. The check took 12 s " +
		"to 66 s on a 2-core machine shared with other work."))
	b.WriteString("\n\nThe times that go with these costs are in [benchmarks.md](benchmarks.md).\n")
	for i, s := range sources {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n`", s.title, wrap(s.about))
		if s.dir != "" {
			fmt.Fprintf(&b, "cd %s && ", s.dir)
		}
		fmt.Fprintf(&b, "%s`", command.Join(s.cmd))
		if s.apart {
			b.WriteString(", each benchmark in a process of its own (`go run ./scripts/costs` builds the test binary and runs it once for each)")
		}
		b.WriteString("\n\n| figure | recorded | tolerance |\n| --- | --- | --- |\n")
		for _, f := range measured[i] {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", f.name, num(f.value), s.tolerance(f.name))
		}
	}
	return b.Bytes()
}

// wrap breaks text into lines of at most 100 characters.
func wrap(text string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len(w) > 100 {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// num formats v with at most three decimals.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

func signed(d float64) string {
	if d > 0 {
		return "+" + num(d)
	}
	return num(d)
}

func percent(d, of float64) string {
	if of == 0 {
		return "from 0"
	}
	return fmt.Sprintf("%+.1f%%", 100*d/of)
}

// count returns how many figures were measured, skipped ones left out.
func count(measured [][]figure) (n int) {
	for _, fs := range measured {
		for _, f := range fs {
			if f.skipped == "" {
				n++
			}
		}
	}
	return n
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "costs:", err)
	os.Exit(1)
}
