package httplimit

import "strconv"

// smallInts holds the decimal form of 0..len-1, so that the counts and
// delays written on every response need no formatting and no allocation.
var smallInts = makeSmallInts(4096)

func makeSmallInts(n int) []string {
	s := make([]string, n)
	for i := 0; i < n; i++ {
		s[i] = strconv.Itoa(i)
	}
	return s
}

// itoa returns the decimal form of n, from the table when it is small.
func itoa(n int64) string {
	if n >= 0 && n < int64(len(smallInts)) {
		return smallInts[n]
	}
	return strconv.FormatInt(n, 10)
}
