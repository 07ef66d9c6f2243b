package main

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// judge returns the verdict on the printed values got against the doc's
// value want, for kind (exact, range, max, abs:N or tol:N), and for tol
// the median of got, as written in a verdict.
func judge(kind, want string, got []string) (verdict, med string) {
	if want == "" || len(got) == 0 {
		return "DIFFERS", ""
	}
	w := num(want)
	for _, v := range got {
		v = num(v)
		var ok bool
		switch {
		case kind == "exact":
			// Numbers compare as numbers (1 and 1.000), other text as text.
			ok = v == w
			if digitsRE.MatchString(v) && digitsRE.MatchString(w) {
				ok = compareText(v, w) == 0
			}
		case kind == "range":
			if a, b, or := cutOr(want); or {
				// "a or b": one of them.
				ok = v == num(a) || v == num(b)
			} else {
				lo, hi := bounds(want)
				ok = compareText(v, lo) >= 0 && compareText(v, hi) <= 0
			}
		case kind == "max":
			ok = compareText(v, w) <= 0
		case strings.HasPrefix(kind, "abs:"):
			within, _ := strconv.ParseFloat(strings.TrimPrefix(kind, "abs:"), 64)
			ok = math.Abs(leadingNumber(v)-leadingNumber(w)) <= within
		default:
			ok = true // tol:N, below, on the median
		}
		if !ok {
			return "DIFFERS", ""
		}
	}
	if pct, isTol := strings.CutPrefix(kind, "tol:"); isTol {
		// The median of the printed values; a doc's range of runs
		// ("93–96") widened by the tolerance on either side.
		med = median(got)
		lo, hi := bounds(want)
		t, _ := strconv.ParseFloat(pct, 64)
		m := leadingNumber(med)
		if m < leadingNumber(lo)*(1-t/100) || m > leadingNumber(hi)*(1+t/100) {
			return "DIFFERS (median " + med + ")", med
		}
	}
	return "ok", med
}

// digitsRE is a number as exact compares it: digits and points.
var digitsRE = regexp.MustCompile(`^[0-9.]+$`)

// num drops thousands separators and a trailing % or x.
func num(v string) string {
	v = strings.ReplaceAll(v, ",", "")
	if strings.HasSuffix(v, "%") || strings.HasSuffix(v, "x") {
		v = v[:len(v)-1]
	}
	return v
}

// cutOr splits "a or b".
func cutOr(s string) (a, b string, ok bool) {
	i, j := strings.Index(s, " or "), strings.LastIndex(s, " or ")
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[j+len(" or "):], true
}

// bounds returns the least and the most of a doc's range ("a–b", "a-b"
// or "a to b"), thousands separators and units dropped; a single value
// is both.
func bounds(want string) (lo, hi string) {
	r := strings.ReplaceAll(want, " to ", "–")
	r = strings.ReplaceAll(r, "-", "–")
	lo, _, _ = strings.Cut(r, "–")
	hi = r
	if i := strings.LastIndex(r, "–"); i >= 0 {
		hi = r[i+len("–"):]
	}
	return num(lo), num(hi)
}

// compareText compares two values as numbers when both are numbers, as
// text otherwise.
func compareText(a, b string) int {
	x, errA := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, errB := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// leadingNumber returns the number at the start of s (0 if none): what
// arithmetic makes of a value such as "12%" or "1.5 s".
func leadingNumber(s string) float64 {
	s = strings.TrimSpace(s)
	m := leadingRE.FindString(s)
	v, _ := strconv.ParseFloat(m, 64)
	return v
}

var leadingRE = regexp.MustCompile(`^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?`)

// compareGeneral orders values by their leading numbers, then as text.
func compareGeneral(a, b string) int {
	if c := cmp.Compare(leadingNumber(a), leadingNumber(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// median returns the median of the values, thousands separators and
// units dropped: the middle one as printed, or the mean of the middle two.
func median(got []string) string {
	v := make([]string, len(got))
	for i, g := range got {
		v[i] = num(g)
	}
	slices.SortStableFunc(v, compareGeneral)
	n := len(v)
	if n%2 == 1 {
		first, _, _ := strings.Cut(strings.TrimSpace(v[n/2]), " ")
		return first
	}
	m := (leadingNumber(v[n/2-1]) + leadingNumber(v[n/2])) / 2
	if m == math.Trunc(m) && math.Abs(m) < 1e15 {
		return strconv.FormatFloat(m, 'f', 0, 64)
	}
	return strconv.FormatFloat(m, 'g', 6, 64)
}

// sortedUnique returns the distinct values, sorted as text.
func sortedUnique(got []string) []string {
	u := slices.Clone(got)
	slices.Sort(u)
	return slices.Compact(u)
}

// compile compiles a figure's regular expression, ^ and $ at each line.
func compile(re string) *regexp.Regexp {
	return regexp.MustCompile("(?m)" + re)
}

// matches returns the first group of each match of re in text, its runs
// of white space as one space.
func matches(re, text string) []string {
	var vs []string
	for _, m := range compile(re).FindAllStringSubmatch(text, -1) {
		vs = append(vs, spaceRE.ReplaceAllString(m[1], " "))
	}
	return vs
}

var spaceRE = regexp.MustCompile(`\s+`)

// firstMatch returns the first group of the first match of re in text,
// empty if none.
func firstMatch(re, text string) string {
	m := compile(re).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return spaceRE.ReplaceAllString(m[1], " ")
}
