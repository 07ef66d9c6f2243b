package httplimit

import (
	"net/http"
	"testing"
)

func TestFinalStatus(t *testing.T) {
	tests := []struct {
		codes []int
		want  int
	}{
		{nil, 0},
		{[]int{http.StatusOK, http.StatusSwitchingProtocols}, http.StatusOK},
		{[]int{http.StatusEarlyHints, http.StatusContinue, http.StatusUnauthorized}, http.StatusUnauthorized},
		{[]int{http.StatusEarlyHints}, 0},
		{[]int{http.StatusSwitchingProtocols, http.StatusOK}, http.StatusSwitchingProtocols},
		{[]int{http.StatusUnauthorized, http.StatusOK}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		status := 0
		for _, code := range tt.codes {
			status = FinalStatus(status, code)
		}
		if status != tt.want {
			t.Errorf("WriteHeader %v: status %d, want %d", tt.codes, status, tt.want)
		}
	}
}

func TestResponseStatus(t *testing.T) {
	var s ResponseStatus
	if s.Code() != 0 {
		t.Fatalf("nothing written: status %d, want 0", s.Code())
	}
	s.Header(http.StatusEarlyHints)
	s.Body()
	if s.Code() != http.StatusOK {
		t.Fatalf("103 then a body: status %d, want 200", s.Code())
	}
	s.Header(http.StatusUnauthorized)
	if s.Code() != http.StatusOK {
		t.Fatalf("a superfluous WriteHeader after the body: status %d, want 200", s.Code())
	}
	var u ResponseStatus
	u.Header(http.StatusUnauthorized)
	u.Body()
	if u.Code() != http.StatusUnauthorized {
		t.Fatalf("401 then a body: status %d, want 401", u.Code())
	}
}
