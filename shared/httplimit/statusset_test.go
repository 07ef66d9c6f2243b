package httplimit

import "testing"

func TestParseStatusCodes(t *testing.T) {
	s, err := ParseStatusCodes([]int{401, 403, 5})
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[int]bool{401: true, 403: true, 500: true, 599: true, 200: false, 402: false, 429: false, 499: false, 600: false, -1: false} {
		if s.Has(code) != want {
			t.Errorf("Has(%d) = %v, want %v", code, !want, want)
		}
	}
	for _, bad := range [][]int{nil, {0}, {6}, {99}, {600}, {-401}} {
		if _, err := ParseStatusCodes(bad); err == nil {
			t.Errorf("ParseStatusCodes(%v) accepted", bad)
		}
	}
}

func TestParseStatusRanges(t *testing.T) {
	s, err := ParseStatusRanges([]string{"401", "403", "500-599"})
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[int]bool{401: true, 403: true, 500: true, 550: true, 599: true, 200: false, 404: false, 429: false} {
		if s.Has(code) != want {
			t.Errorf("Has(%d) = %v, want %v", code, !want, want)
		}
	}
	for _, bad := range [][]string{nil, {""}, {"4xx"}, {"600"}, {"99"}, {"500-"}, {"-500"}, {"599-500"}, {"500-600"}, {"1-2-3"}} {
		if _, err := ParseStatusRanges(bad); err == nil {
			t.Errorf("ParseStatusRanges(%q) accepted", bad)
		}
	}
}
