package optname

import "strings"

// Nearest returns the name of known that k spells in another case, as
// same, or else, as near, the name of known nearest to k when it is near
// enough to be a typo: at most one edit in four letters, and at least one.
// Both are empty when k is nothing like any of known.
func Nearest(k string, known []string) (same, near string) {
	lk := strings.ToLower(k)
	best := -1
	for _, o := range known {
		lo := strings.ToLower(o)
		if lo == lk {
			return o, ""
		}
		d := Distance(lk, lo)
		if d <= 1+len(lo)/4 && (best < 0 || d < best) {
			best, near = d, o
		}
	}
	return "", near
}

// Distance is the Levenshtein distance between a and b in bytes: the
// fewest insertions, deletions and substitutions that make a into b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			d := prev[j-1]
			if a[i-1] != b[j-1] {
				d++
			}
			if prev[j]+1 < d {
				d = prev[j] + 1
			}
			if cur[j-1]+1 < d {
				d = cur[j-1] + 1
			}
			cur[j] = d
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
