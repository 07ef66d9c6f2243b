// Package headertest helps tests check that one response's headers are
// its own.
package headertest

import "net/http"

// Scribble does to every value of h what a handler further down may do:
// rewrite it in place, as Caddy's header replacements do, then append.
func Scribble(h http.Header) {
	for k, vs := range h {
		for i := range vs {
			vs[i] = "scribbled"
		}
		h[k] = append(vs, "appended")
	}
}

// Scribbled returns the names of the headers of h that do not hold exactly
// one value, or hold one that Scribble wrote.
func Scribbled(h http.Header) []string {
	var names []string
	for k, vs := range h {
		if len(vs) != 1 || vs[0] == "scribbled" {
			names = append(names, k)
		}
	}
	return names
}
