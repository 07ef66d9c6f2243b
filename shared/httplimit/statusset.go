package httplimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// StatusSet is a set of HTTP response status codes, 100 to 599: the
// responses a count_status zone counts.
type StatusSet struct {
	bits [10]uint64 // bit c%64 of bits[c/64] is code c
}

// Has reports whether code is in the set.
// The shifts are of uint64 operands written out (see the package
// documentation).
func (s *StatusSet) Has(code int) bool {
	if code < 0 || code >= 640 {
		return false
	}
	bit := uint64(1) << uint64(code%64)
	return s.bits[code/64]&bit != 0
}

func (s *StatusSet) add(lo, hi int) {
	for c := lo; c <= hi; c++ {
		bit := uint64(1) << uint64(c%64)
		s.bits[c/64] |= bit
	}
}

// ParseStatusCodes returns the set of codes as Caddy's response matchers
// write them: a code from 100 to 599, or a single digit 1 to 5 for its
// class (5 is 500-599).
func ParseStatusCodes(codes []int) (*StatusSet, error) {
	if len(codes) == 0 {
		return nil, errors.New("count_status: no status code")
	}
	s := new(StatusSet)
	for _, c := range codes {
		switch {
		case c >= 1 && c <= 5:
			s.add(c*100, c*100+99)
		case c >= 100 && c <= 599:
			s.add(c, c)
		default:
			return nil, fmt.Errorf("count_status: %d is neither a status code (100-599) nor a class (1-5)", c)
		}
	}
	return s, nil
}

// ParseStatusRanges returns the set of codes as Traefik's errors
// middleware writes them: "401", or an inclusive range "500-599", each
// within 100-599.
func ParseStatusRanges(list []string) (*StatusSet, error) {
	if len(list) == 0 {
		return nil, errors.New("countStatus: no status code")
	}
	s := new(StatusSet)
	for _, item := range list {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(item), "-")
		if !isRange {
			hi = lo
		}
		from, err1 := statusCode(lo)
		to, err2 := statusCode(hi)
		if err1 != nil || err2 != nil || from > to {
			return nil, fmt.Errorf("countStatus: %q is neither a status code (100-599) nor a range of them such as 500-599", item)
		}
		s.add(from, to)
	}
	return s, nil
}

func statusCode(s string) (int, error) {
	c, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || c < 100 || c > 599 {
		return 0, errors.New("bad status code")
	}
	return c, nil
}
