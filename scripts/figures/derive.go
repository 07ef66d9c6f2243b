package main

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The commands' pipes and the figures derived from another command's
// output, each printing the line its figure reads.

// lines returns out's lines.
func lines(out []byte) []string {
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}

// number is what arithmetic makes of a printed value.
func number(s string) float64 { return leadingNumber(s) }

var goDurRE = regexp.MustCompile(`(\d+(?:\.\d+)?)(µs|ms|s)\b`)

// goDurSeconds rewrites Go's durations (1.5ms, 2.033µs, 0.2s) in seconds.
func goDurSeconds(out []byte) []byte {
	unit := map[string]float64{"µs": 1e-6, "ms": 1e-3, "s": 1}
	return goDurRE.ReplaceAllFunc(out, func(d []byte) []byte {
		m := goDurRE.FindSubmatch(d)
		return []byte(strconv.FormatFloat(number(string(m[1]))*unit[string(m[2])], 'g', 6, 64) + "s")
	})
}

// serveHTTPAbove adds to go test -bench ServeHTTP's lines of Caddy's
// handler, per case, its median ns/op minus the baseline case's median in
// µs, and its allocations and bytes above the baseline's, as
// docs/benchmarks.md gives them.
func serveHTTPAbove(out []byte) []byte {
	ns := map[string][]float64{}
	var names []string
	allocs, bytesOp := map[string]float64{}, map[string]float64{}
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if !strings.HasPrefix(l, "BenchmarkServeHTTP/") || len(f) < 7 {
			continue
		}
		n := strings.TrimPrefix(f[0], "BenchmarkServeHTTP/")
		if i := strings.LastIndex(n, "-"); i >= 0 && strings.Trim(n[i+1:], "0123456789") == "" {
			n = n[:i]
		}
		if _, seen := ns[n]; !seen {
			names = append(names, n)
		}
		ns[n] = append(ns[n], number(f[2]))
		bytesOp[n], allocs[n] = number(f[4]), number(f[6])
	}
	med := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	var b bytes.Buffer
	b.Write(out)
	for _, n := range names {
		if n != "baseline" {
			fmt.Fprintf(&b, "handler %s: %.2f µs, %d allocs, %d B above the baseline\n", n,
				(med(ns[n])-med(ns["baseline"]))/1000, int(allocs[n]-allocs["baseline"]), int(bytesOp[n]-bytesOp["baseline"]))
		}
	}
	return b.Bytes()
}

// eachLine returns a derivation that prints, for each line re matches,
// what line makes of its groups.
func eachLine(re string, line func(m []string) string) func([]byte) []byte {
	r := regexp.MustCompile(re)
	return func(out []byte) []byte {
		var b strings.Builder
		for _, l := range lines(out) {
			if m := r.FindStringSubmatch(l); m != nil {
				b.WriteString(line(m) + "\n")
			}
		}
		return []byte(b.String())
	}
}

// slidingOverN prints how far sliding k=10 goes over N at 1.5x Poisson.
var slidingOverN = eachLine(`^\s*sliding k=10\s+\|(?:[^|]*\|){2}\s*(\d\.\d\d) /`, func(m []string) string {
	return fmt.Sprintf("sliding k=10, poisson 1.5x: %.0f%% over N", (number(m[1])-1)*100)
})

// fixedMost prints the most fixed lets through on any trace.
func fixedMost(out []byte) []byte {
	most, mostText := math.Inf(-1), ""
	row, peak := regexp.MustCompile(`^\s*fixed\s+\|`), regexp.MustCompile(`(\d\.\d\d) /`)
	for _, l := range lines(out) {
		if row.MatchString(l) {
			for _, m := range peak.FindAllStringSubmatch(l, -1) {
				if v := number(m[1]); v > most {
					most, mostText = v, m[1]
				}
			}
		}
	}
	return []byte("fixed, the most in any window: " + mostText + "x N\n")
}

// resetShort prints how far an operator's reset's fresh budget was short
// of the limit.
var resetShort = eachLine(`admin reset .*admitted (\d+) of 8000 requests at a limit of (\d+)`, func(m []string) string {
	return fmt.Sprintf("admin reset: %d short of the limit", int(number(m[2])-number(m[1])))
})

// sizingExample prints docs/redis.md's sizing example from a key's bytes.
var sizingExample = eachLine(`IPv4, 50 in every sub-window\s+MEMORY USAGE.*= (\d+) B/key`, func(m []string) string {
	return fmt.Sprintf("1.1 M keys x %d B x 2 = %.0f MB", int(number(m[1])), 1.1*number(m[1])*2)
})

// caddyRedisCPU prints the Caddy CPU the Redis site spends more than the
// keyed plain site.
func caddyRedisCPU(out []byte) []byte {
	r := regexp.MustCompile(`^(plain Caddy, random X-Key \(base\)|rate_limit, store redis, X-Key)\s+(?:\S+\s+){2}(\S+)`)
	cpu := map[string]float64{}
	for _, l := range lines(out) {
		if m := r.FindStringSubmatch(l); m != nil {
			cpu[m[1]] = number(m[2])
		}
	}
	return fmt.Appendf(nil, "the Redis site: %.1f µs of Caddy CPU more than the keyed plain site\n",
		cpu["rate_limit, store redis, X-Key"]-cpu["plain Caddy, random X-Key (base)"])
}

// traefikSpread prints the least and the most, over the in-memory
// configurations but countStatus and overrides, of the plugin's requests
// against the built-in's, and by CPU.
func traefikSpread(out []byte) []byte {
	var rate, cpu []string
	skip := regexp.MustCompile(`countStatus|overrides|denial`)
	for _, l := range lines(out) {
		if f := strings.Fields(l); strings.HasPrefix(l, "windowlimit, ") && !skip.MatchString(l) && len(f) >= 2 {
			rate, cpu = append(rate, f[len(f)-2]), append(cpu, f[len(f)-1])
		}
	}
	byNumber := func(a, b string) int { return cmp.Compare(number(a), number(b)) }
	slices.SortStableFunc(rate, byNumber)
	slices.SortStableFunc(cpu, byNumber)
	if len(rate) == 0 {
		return nil
	}
	return fmt.Appendf(nil, "in memory: vs built-in %s to %s, by CPU %s to %s\n", rate[0], rate[len(rate)-1], cpu[0], cpu[len(cpu)-1])
}

// traefikVsPlain prints what the interpreter costs Traefik's CPU, as a
// multiple of the plain router's.
func traefikVsPlain(out []byte) []byte {
	r := regexp.MustCompile(`^(plain router|trivial yaegi plugin|least sliding window, yaegi|windowlimit, defaults|windowlimit \+ redis)\s`)
	cpu := map[string]float64{}
	for _, l := range lines(out) {
		if m := r.FindStringSubmatch(l); m != nil {
			if f := strings.Fields(l); len(f) >= 3 {
				cpu[m[1]] = number(f[len(f)-3])
			}
		}
	}
	var b bytes.Buffer
	for _, n := range slices.Sorted(maps.Keys(cpu)) {
		if n != "plain router" {
			fmt.Fprintf(&b, "%s: %.2f times the CPU of the plain router\n", n, cpu[n]/cpu["plain router"])
		}
	}
	return b.Bytes()
}

// leaseTraefikCalls prints how many requests one script call serves in
// bench-lease.sh's Traefik part, lease auto.
func leaseTraefikCalls(out []byte) []byte {
	r := regexp.MustCompile(`^windowlimit \+ redis, lease auto\s+\S+\s+\S+\s+([\d.]+)`)
	var b strings.Builder
	traefik := false
	for _, l := range lines(out) {
		traefik = traefik || strings.HasPrefix(l, "4. Traefik")
		if m := r.FindStringSubmatch(l); traefik && m != nil {
			fmt.Fprintf(&b, "Traefik, lease auto: one script call in %.0f requests\n", 1/number(m[1]))
		}
	}
	return []byte(b.String())
}
