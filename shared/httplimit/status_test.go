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
