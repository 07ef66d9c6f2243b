package httplimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func TestDecimalsFor(t *testing.T) {
	tests := []struct {
		window, sub time.Duration
		limit       int64
		size        int // 0: no table
	}{
		{time.Minute, 6 * time.Second, 100, 4096},
		{time.Minute, 6 * time.Second, 4095, 4096},
		{time.Minute, 6 * time.Second, 4096, 65536},
		{time.Hour, 6 * time.Minute, 100, 4096},       // 3960 s
		{2 * time.Hour, 12 * time.Minute, 100, 65536}, // 7920 s
		{time.Minute, 6 * time.Second, 65536, 0},
		{24 * time.Hour, 144 * time.Minute, 10, 0},
	}
	for _, tt := range tests {
		table := DecimalsFor(ratelimit.Rule{Window: tt.window, SubWindow: tt.sub, Limit: tt.limit})
		if len(table) != tt.size {
			t.Errorf("window %v, limit %d: table of %d, want %d", tt.window, tt.limit, len(table), tt.size)
		}
	}
	table := decimalTable(65536)
	for _, i := range []int{0, 7, 4095, 65535} {
		if table[i] != strconv.Itoa(i) {
			t.Errorf("table[%d] = %q", i, table[i])
		}
	}
	if &decimalTable(65536)[0] != &table[0] {
		t.Error("a table is built twice")
	}
	if &decimalTable(4096)[0] != &smallInts[0] {
		t.Error("itoa's table is built apart")
	}
}

func TestRetrySeconds(t *testing.T) {
	for _, tt := range []struct {
		in   time.Duration
		want int64
	}{
		{-time.Second, 1}, {0, 1}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + 1, 2}, {59 * time.Second, 59}, {59*time.Second + 1, 60},
	} {
		if got := RetrySeconds(tt.in); got != tt.want {
			t.Errorf("RetrySeconds(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
