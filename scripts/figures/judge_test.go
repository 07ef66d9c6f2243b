package main

import "testing"

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		kind, want string
		got        []string
		verdict    string
	}{
		{"exact", "1,234", []string{"1234"}, "ok"},
		{"exact", "1", []string{"1.000"}, "ok"},
		{"exact", "all refused", []string{"all refused"}, "ok"},
		{"exact", "300", []string{"300", "299"}, "DIFFERS"},
		{"exact", "1.92", []string{"1.92x"}, "ok"},
		{"range", "0.914 to 1.000", []string{"0.918", "1.000"}, "ok"},
		{"range", "0.914 to 1.000", []string{"0.918", "1.001"}, "DIFFERS"},
		{"range", "4–12%", []string{"4", "12"}, "ok"},
		{"range", "4-12%", []string{"13"}, "DIFFERS"},
		{"range", "4-12%", []string{"8"}, "ok"},
		{"range", "5", []string{"5"}, "ok"},
		{"range", "0 or 5", []string{"5", "0"}, "ok"},
		{"range", "0 or 5", []string{"3"}, "DIFFERS"},
		{"max", "5", []string{"5", "4"}, "ok"},
		{"max", "0.11", []string{"0.12"}, "DIFFERS"},
		{"abs:5", "45", []string{"50", "40"}, "ok"},
		{"abs:5", "45", []string{"51"}, "DIFFERS"},
		{"tol:25", "100", []string{"120", "130", "124"}, "ok"},
		{"tol:25", "100", []string{"126"}, "DIFFERS (median 126)"},
		{"tol:25", "100", []string{"74", "76"}, "ok"},
		{"tol:25", "100", []string{"74", "75.5"}, "DIFFERS (median 74.75)"},
		{"tol:5", "93–96", []string{"100.8"}, "ok"},
		{"tol:5", "93 to 96", []string{"101"}, "DIFFERS (median 101)"},
		{"tol:5", "1,000", []string{"1,050"}, "ok"},
	} {
		if v, _ := judge(c.kind, c.want, c.got); v != c.verdict {
			t.Errorf("judge(%s, %q, %q) = %q, want %q", c.kind, c.want, c.got, v, c.verdict)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		got  []string
		want string
	}{
		{[]string{"3", "1", "2"}, "2"},
		{[]string{"1.000", "3"}, "2"},
		{[]string{"1", "2"}, "1.5"},
		{[]string{"0.547", "0.5"}, "0.5235"},
		{[]string{"1,100", "900", "1,000"}, "1000"},
	} {
		if m := median(c.got); m != c.want {
			t.Errorf("median(%q) = %q, want %q", c.got, m, c.want)
		}
	}
}

func TestRewriteValue(t *testing.T) {
	for _, c := range []struct{ value, like, want string }{
		{"1234.567", "1,000", "1,235"},
		{"1234567", "1,000", "1,234,567"},
		{"0.5473", "0.547", "0.547"},
		{"12", "9.0", "12.0"},
		{"999.6", "100", "1000"},
	} {
		if v := rewriteValue(c.value, c.like); v != c.want {
			t.Errorf("rewriteValue(%q, %q) = %q, want %q", c.value, c.like, v, c.want)
		}
	}
}

func TestGoDurSeconds(t *testing.T) {
	in := "during outage 1.5ms, recovered 2.033µs after restart; closed 0.2s after it woke; 3 calls; 123.456789ms 1000ms 7µs 0.0000001s"
	// What figures.sh's Perl printed for the same line.
	want := "during outage 0.0015s, recovered 2.033e-06s after restart; closed 0.2s after it woke; 3 calls; 0.123457s 1s 7e-06s 1e-07s"
	if got := string(goDurSeconds([]byte(in))); got != want {
		t.Errorf("goDurSeconds:\n got %s\nwant %s", got, want)
	}
}

func TestServeHTTPAbove(t *testing.T) {
	out := "BenchmarkServeHTTP/baseline-2 \t 100 \t 1000 ns/op \t 100 B/op \t 2 allocs/op\n" +
		"BenchmarkServeHTTP/baseline-2 \t 100 \t 3000 ns/op \t 100 B/op \t 2 allocs/op\n" +
		"BenchmarkServeHTTP/baseline-2 \t 100 \t 2000 ns/op \t 100 B/op \t 2 allocs/op\n" +
		"BenchmarkServeHTTP/allowed/client_ip-2 \t 100 \t 2500 ns/op \t 148 B/op \t 3 allocs/op\n" +
		"BenchmarkServeHTTP/allowed/client_ip-2 \t 100 \t 9000 ns/op \t 148 B/op \t 3 allocs/op\n" +
		"BenchmarkServeHTTP/allowed/client_ip-2 \t 100 \t 2600 ns/op \t 148 B/op \t 3 allocs/op\n"
	want := out + "handler allowed/client_ip: 0.60 µs, 1 allocs, 48 B above the baseline\n"
	if got := string(serveHTTPAbove([]byte(out))); got != want {
		t.Errorf("serveHTTPAbove:\n got %s\nwant %s", got, want)
	}
}
